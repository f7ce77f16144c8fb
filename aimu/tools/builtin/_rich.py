"""What a Python tool shows the model for a value: images from rich reprs, compact tables.

Objects with ``_repr_png_`` / ``_repr_jpeg_`` / ``_repr_svg_`` (PIL images among them) and
matplotlib figures become :class:`~aimu.tools.results.Image` values; DataFrames and Series
become short text tables. Nothing here imports matplotlib, PIL or pandas: a value of those
types means its library is already loaded.
"""

from __future__ import annotations

import base64
import sys
from typing import Any

from aimu.tools.builtin._figures import figure_image, is_open_figure
from aimu.tools.results import Image

TABLE_ROWS = 20
TABLE_COLUMNS = 12
_REPRS = (
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_svg_", "image/svg+xml"),
)


def value_image(value: Any) -> Image | None:
    """The value as an image when it has a picture of itself, else ``None``.

    A figure still open in pyplot is left to :class:`FigureCapture`, which keeps it once.
    """
    if _is_figure(value):
        return None if is_open_figure(value) else figure_image(value)
    for method, mime_type in _REPRS:
        render = getattr(type(value), method, None)
        if render is None:
            continue
        try:
            data = render(value)
        except Exception:
            continue
        if isinstance(data, tuple):  # (data, metadata)
            data = data[0]
        image = Image.from_bundle({mime_type: data}, type(value).__name__)
        if image is not None:
            return image
    return None


def table_text(value: Any) -> str | None:
    """A DataFrame or Series as a compact text table, else ``None``."""
    pandas = sys.modules.get("pandas")
    if pandas is None or not isinstance(value, pandas.DataFrame | pandas.Series):
        return None
    with pandas.option_context(
        "display.max_rows", TABLE_ROWS,
        "display.min_rows", 10,
        "display.max_columns", TABLE_COLUMNS,
        "display.width", 120,
        "display.show_dimensions", True,
    ):  # fmt: skip
        return repr(value)


def _is_figure(value: Any) -> bool:
    figure = sys.modules.get("matplotlib.figure")
    return figure is not None and isinstance(value, figure.Figure)


class Shown:
    """The images one Python run produced, in order, each named in the printed output.

    ``add`` writes ``[image N: what]`` to the current ``sys.stdout`` (the run's captured
    output), so the model reads where in the run each picture appeared.
    """

    def __init__(self) -> None:
        self.images: list[Image] = []

    def add(self, image: Image) -> None:
        number = len(self.images) + 1
        label = f"image {number}: {image.description or image.mime_type}"
        self.images.append(Image(image.data, image.mime_type, label))
        print(f"[{label}{_size(image)}]")

    def value_text(self, value: Any) -> str | None:
        """The text standing for a final value: its table, or the image it was shown as."""
        try:
            image = value_image(value)
            if image is not None:
                self.add(image)
                return f"<{type(value).__name__}, shown as image {len(self.images)}>"
            return table_text(value)
        except Exception:  # a broken repr: the plain repr (or its failure) is shown instead
            return None


def _size(image: Image) -> str:
    if image.mime_type != "image/png":
        return f" ({image.mime_type})"
    head = base64.b64decode(image.data[:32])
    if len(head) < 24:
        return ""
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    return f" (PNG, {width}×{height})"
