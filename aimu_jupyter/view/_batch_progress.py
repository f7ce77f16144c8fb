"""A batch's progress in a notebook: a widget bar while it runs, a static line after.

Registered with :func:`aimu.batch.set_default_progress` when the extension loads, so both
``%%agent --each`` and a plain ``aimu.batch(...)`` in a cell show it. Outside a kernel
(terminal IPython) the library's text bar is used instead. Updates are throttled to a few
per second; the last one always lands.
"""

from __future__ import annotations

import time
from typing import Any

from aimu.batch import BatchStats, TextProgress

MIN_INTERVAL = 0.25


class WidgetProgress:
    """An ``IntProgress`` with a summary line, replaced by plain text when the batch ends."""

    def __init__(self, stats: BatchStats):
        import ipywidgets as widgets
        from IPython.display import display

        self._bar = widgets.IntProgress(value=stats.done, min=0, max=max(stats.total, 1),
                                        description="batch", bar_style="info")  # fmt: skip
        self._label = widgets.HTML(value=_escape(stats.summary()))
        self._box = widgets.HBox([self._bar, self._label])
        self._handle = display(self._box, display_id=True)
        self._shown = 0.0

    def update(self, stats: BatchStats) -> None:
        now = time.monotonic()
        if now - self._shown < MIN_INTERVAL and stats.done < stats.total:
            return
        self._shown = now
        self._bar.value = stats.done
        self._bar.bar_style = "warning" if stats.failed else "info"
        self._label.value = _escape(stats.summary())

    def close(self, stats: BatchStats) -> None:
        self._box.close()
        text = f"batch: {stats.summary()}"
        self._handle.update({"text/plain": text, "text/markdown": f"**batch**: {stats.summary()}"},
                            raw=True)  # fmt: skip


def notebook_progress(stats: BatchStats) -> Any:
    """The widget bar inside a kernel, the text bar elsewhere."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None and getattr(shell, "kernel", None) is not None:
        return WidgetProgress(stats)
    return TextProgress(stats)


def _escape(text: str) -> str:
    import html

    return f"<code>{html.escape(text)}</code>"
