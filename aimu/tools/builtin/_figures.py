"""What Python-tool code draws with matplotlib, kept as PNG images.

While :class:`FigureCapture` is active, ``plt.show()`` and the figures the code left open
become :class:`~aimu.tools.results.Image` values and are closed, so nothing shows up in the
notebook cell itself. matplotlib is never imported here: the capture only acts on it when
the code (or its caller) imported it.
"""

from __future__ import annotations

import io
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from aimu.tools.results import Image

BACKEND = "module://aimu.tools.builtin._mpl_backend"
DPI = 100

_active: list[FigureCapture] = []
#: pyplot's state is global: runs that may plot take turns, whichever tool runs them.
_turn = threading.RLock()


class FigureCapture:
    """Hand the figures code draws to ``sink``; leave the caller's plotting as it was.

    When pyplot is already loaded its backend is kept (switching would close the caller's
    figures) and only ``plt.show`` is replaced while the code runs; figures the caller had
    open before are left alone. When the code is what imports pyplot, it starts on the Agg
    capture backend, and afterwards pyplot is switched to the backend the caller would have
    had (the notebook's inline one, usually).
    """

    def __init__(self, sink: Callable[[Image], None]) -> None:
        self.sink = sink
        self.before: set[int] = set()
        self._env: str | None = None
        self._rc: Any = None
        self._show: Any = None

    def __enter__(self) -> FigureCapture:
        _turn.acquire()
        self._env = os.environ.get("MPLBACKEND")
        os.environ["MPLBACKEND"] = BACKEND
        pyplot = sys.modules.get("matplotlib.pyplot")
        matplotlib = sys.modules.get("matplotlib")
        if pyplot is not None:
            self.before = set(pyplot.get_fignums())
            self._show = pyplot.show
            pyplot.show = _show
        elif matplotlib is not None:  # imported, backend not chosen yet: choose ours
            self._rc = matplotlib.rcParams._get("backend")
            matplotlib.rcParams["backend"] = BACKEND
        _active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            collect_open_figures()
        finally:
            try:
                self._put_back()
            finally:
                _active.remove(self)
                _turn.release()

    def _put_back(self) -> None:
        if self._env is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = self._env
        pyplot = sys.modules.get("matplotlib.pyplot")
        if self._show is not None:
            pyplot.show = self._show
        elif pyplot is not None:
            rc = self._rc if isinstance(self._rc, str) else None
            _restore(pyplot, rc or self._env)
        elif self._rc is not None:
            sys.modules["matplotlib"].rcParams["backend"] = self._rc


def _show(*args: Any, **kwargs: Any) -> None:
    """``plt.show()`` while a capture is active: keep the new figures as images."""
    collect_open_figures()


def collect_open_figures() -> None:
    """Turn each figure opened since the capture began into a PNG for it, then close it."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None or not _active:
        return
    capture = _active[-1]
    for number in pyplot.get_fignums():
        if number in capture.before:
            continue
        figure = pyplot.figure(number)
        capture.sink(figure_image(figure))
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
