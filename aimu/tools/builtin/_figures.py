"""What Python-tool code draws with matplotlib, kept as PNG images.

While :class:`FigureCapture` is active, pyplot draws with Agg (no window, no inline output
in the notebook cell) and ``plt.show()`` as well as figures still open at the end become
:class:`~aimu.tools.results.Image` values. matplotlib is never imported here: the capture
only acts on it when the code itself imported it.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from typing import Any

from aimu.tools.results import Image

BACKEND = "module://aimu.tools.builtin._mpl_backend"
DPI = 100

_active: list[FigureCapture] = []


class FigureCapture:
    """Hand the figures code draws to ``sink``; restore the caller's backend afterwards."""

    def __init__(self, sink: Callable[[Image], None]) -> None:
        self.sink = sink
        self._env: str | None = None
        self._backend: str | None = None
        self._rc: Any = None

    def __enter__(self) -> FigureCapture:
        self._env = os.environ.get("MPLBACKEND")
        os.environ["MPLBACKEND"] = BACKEND
        pyplot = sys.modules.get("matplotlib.pyplot")
        matplotlib = sys.modules.get("matplotlib")
        if pyplot is not None:
            self._backend = pyplot.get_backend()
            pyplot.switch_backend(BACKEND)
        elif matplotlib is not None:  # imported, backend not chosen yet: choose ours
            self._rc = matplotlib.rcParams._get("backend")
            matplotlib.rcParams["backend"] = BACKEND
        _active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            collect_open_figures()
        finally:
            _active.remove(self)
            if self._env is None:
                os.environ.pop("MPLBACKEND", None)
            else:
                os.environ["MPLBACKEND"] = self._env
            pyplot = sys.modules.get("matplotlib.pyplot")
            if pyplot is not None:
                rc = self._rc if isinstance(self._rc, str) else None
                _restore(pyplot, self._backend or rc or self._env)
            elif self._rc is not None:
                sys.modules["matplotlib"].rcParams["backend"] = self._rc


def collect_open_figures() -> None:
    """Turn every open pyplot figure into a PNG for the active capture, then close it."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None or not _active:
        return
    sink = _active[-1].sink
    for number in pyplot.get_fignums():
        figure = pyplot.figure(number)
        sink(figure_image(figure))
        pyplot.close(figure)


def figure_image(figure: Any) -> Image:
    """A matplotlib figure as a PNG image, described by its titles or axes labels."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return Image.from_bytes(buffer.getvalue(), "image/png", f"matplotlib figure{_caption(figure)}")


def is_open_figure(value: Any) -> bool:
    """Whether ``value`` is a pyplot figure still open (so the capture will keep it)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    number = getattr(value, "number", None)
    return pyplot is not None and number is not None and pyplot.fignum_exists(number)


def _caption(figure: Any) -> str:
    titles = [figure.get_suptitle()] if hasattr(figure, "get_suptitle") else []
    for axes in figure.get_axes():
        titles.append(axes.get_title())
        if not axes.get_title():
            labels = " vs ".join(t for t in (axes.get_ylabel(), axes.get_xlabel()) if t)
            titles.append(labels)
    shown = "; ".join(t for t in titles if t)
    return f": {shown}" if shown else ""


def _restore(pyplot: Any, backend: str | None) -> None:
    """Put back the backend the caller had (the notebook's inline one, usually)."""
    if backend and backend != BACKEND:
        try:
            pyplot.switch_backend(backend)
            return
        except Exception:  # an interactive backend that cannot start here
            pass
    pyplot.switch_backend("agg")
