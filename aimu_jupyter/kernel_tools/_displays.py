"""What ``python``-tool code shows with ``IPython.display.display``, kept for the model.

While the tool runs, the shell's display publisher is swapped for :class:`_Collector`:
images in a displayed bundle go to the run's image sink, other displays print their plain
text into the run's captured output. Nothing reaches the notebook cell directly; the tool
card shows what was captured. When the tool's code is what first imported pyplot,
:func:`inline_plots_after` sets up the notebook's inline plotting afterwards, as a first
``import matplotlib.pyplot`` in a cell would have.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from aimu.tools.results import Image


class _Collector:
    """A stand-in for the shell's ``display_pub`` that keeps what is published."""

    is_publishing = False

    def __init__(self, sink: Callable[[Image], None]) -> None:
        self._sink = sink

    def publish(self, data: dict[str, Any], metadata: Any = None, *args: Any, **kw: Any) -> None:
        image = Image.from_bundle(data, "displayed image")
        if image is not None:
            self._sink(image)
        elif data.get("text/plain"):
            print(data["text/plain"])

    def clear_output(self, wait: bool = False) -> None:
        pass


@contextlib.contextmanager
def notebook_displays(sink: Callable[[Image], None]) -> Iterator[None]:
    """Route ``display()`` calls to ``sink`` (images) and stdout (text) while active."""
    from IPython.core.interactiveshell import InteractiveShell

    if not InteractiveShell.initialized():
        yield
        return
    shell = InteractiveShell.instance()
    saved = shell.display_pub
    shell.display_pub = _Collector(sink)
    try:
        yield
    finally:
        shell.display_pub = saved


@contextlib.contextmanager
def inline_plots_after() -> Iterator[None]:
    """If pyplot is first imported inside, enable inline plots for the user's next cells.

    The tool's capture draws with its own backend, so matplotlib's inline backend was not
    the one set up at import and never registered its end-of-cell hook.
    """
    had_pyplot = "matplotlib.pyplot" in sys.modules
    try:
        yield
    finally:
        pyplot = sys.modules.get("matplotlib.pyplot")
        if not had_pyplot and pyplot is not None and "inline" in pyplot.get_backend():
            from IPython.core.interactiveshell import InteractiveShell

            if InteractiveShell.initialized():
                InteractiveShell.instance().enable_matplotlib("inline")
