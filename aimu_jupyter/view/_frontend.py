"""Whether the frontend that sent the running cell draws widgets, found out by asking it.

A frontend with a widget manager (JupyterLab, Notebook 7, VS Code, Voilà) builds a model for
every widget the kernel opens; one without (``jupyter console``, a Lab missing the widgets
extension) ignores them: an approval panel shows as ``VBox(children=...)`` and display
updates are dropped. The probe opens two hidden widgets joined by a front-end link
(``jsdlink``): a widget manager applies the link as soon as it has built the models and
sends the copied value back. An answer within :data:`PROBE_WAIT` seconds means widgets work;
silence means they do not. Nothing is displayed, so nothing is left in the cell.
"""

from __future__ import annotations

import asyncio
from typing import Any

#: Seconds a frontend has to answer the probe.
PROBE_WAIT = 2.0

_MARK = "aimu-frontend-probe"


class FrontendProbe:
    """One question to the frontend: "do you build widgets?", answered at most once."""

    def __init__(self) -> None:
        import ipywidgets as widgets

        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + PROBE_WAIT
        self._answer: asyncio.Future[bool] = loop.create_future()

        def answered(change: dict[str, Any]) -> None:
            if change["new"] == _MARK:
                loop.call_soon_threadsafe(self._settle, True)

        self._source = widgets.Text(value=_MARK)
        self._target = widgets.Text(value="")
        self._target.observe(answered, names="value")
        self._link = widgets.jsdlink((self._source, "value"), (self._target, "value"))

    async def draws_widgets(self) -> bool:
        """Wait for the frontend's answer, at most until :data:`PROBE_WAIT` after the start."""
        remaining = self._deadline - asyncio.get_running_loop().time()
        if not self._answer.done() and remaining > 0:
            await asyncio.wait({self._answer}, timeout=remaining)
        self._settle(False)
        return self._answer.result()

    def known(self) -> bool | None:
        """The answer if it is in (or overdue: ``False``), without waiting."""
        if not self._answer.done() and asyncio.get_running_loop().time() >= self._deadline:
            self._settle(False)
        return self._answer.result() if self._answer.done() else None

    def close(self) -> None:
        """Close the probe's widgets (the frontend drops their models)."""
        for widget in (self._link, self._source, self._target):
            widget.close()

    def _settle(self, value: bool) -> None:
        if not self._answer.done():
            self._answer.set_result(value)
            self.close()
