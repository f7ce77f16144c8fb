"""The inline approval panel: Approve, Deny (with a reason), Always allow.

The running ``%%agent`` cell awaits an asyncio Future that the buttons resolve. ipykernel
>= 7.4 delivers widget messages while an async cell awaits, possibly on a subshell thread,
so the Future is always resolved through ``loop.call_soon_threadsafe``. The wait is taken
in short slices so an interrupt lands at once, and gives up after ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import html
from typing import Any

from IPython.display import display

from aimu_jupyter.record import pretty_arguments

#: The wait for a click is taken in slices this long (seconds).
SLICE = 0.25

_STYLE = "margin:0;max-height:18em;overflow:auto;white-space:pre-wrap"


class ApprovalPanels:
    """Asks about one call at a time in a display slot below the run's record.

    Once answered, the panel is replaced by a one-line static note; :meth:`clear` empties
    the slot after a completed run, since the record's tool card holds the decision.
    """

    def __init__(self, timeout: float):
        self.timeout = timeout
        self._handle: Any = None

    async def ask(
        self, tool_name: str, arguments: dict[str, Any], agent: str | None = None
    ) -> tuple[str, str]:
        """Show the panel and wait: ``("approve" | "deny" | "always" | "timeout", reason)``.

        ``agent`` is the sub-agent asking (``"parent/label@call_id"``), named on the panel.
        """
        import ipywidgets as widgets

        loop = asyncio.get_running_loop()
        answer: asyncio.Future[tuple[str, str]] = loop.create_future()

        def resolve(verdict: str, reason: str = "") -> None:
            def settle() -> None:
                if not answer.done():
                    answer.set_result((verdict, reason))

            loop.call_soon_threadsafe(settle)

        name = html.escape(tool_name)
        asker = f"Sub-agent <code>{html.escape(agent)}</code> asks: a" if agent else "A"
        title = widgets.HTML(f"<b>{asker}pprove a call to <code>{name}</code>?</b>")
        shown = html.escape(pretty_arguments(arguments))
        args = widgets.HTML(f"<pre style='{_STYLE}'>{shown}</pre>")
        reason = widgets.Text(
            placeholder="Reason, if you deny (the model reads it)",
            description="Reason:",
            layout=widgets.Layout(width="100%"),
        )
        approve = widgets.Button(
            description="Approve",
            button_style="success",
            icon="check",
            tooltip=f"Run {tool_name} with these arguments",
        )
        deny = widgets.Button(
            description="Deny",
            button_style="danger",
            icon="times",
            tooltip="Refuse this call; the model reads your reason",
        )
        always = widgets.Button(
            description=f"Always allow {tool_name}",
            tooltip=f"Approve every {tool_name} call in this conversation",
            layout=widgets.Layout(width="auto"),
        )
        approve.on_click(lambda _: resolve("approve"))
        deny.on_click(lambda _: resolve("deny", reason.value))
        always.on_click(lambda _: resolve("always"))
        for button, role in ((approve, "approve"), (deny, "deny"), (always, "always")):
            button.add_class(f"aimu-approval-{role}")
        panel = widgets.VBox([title, args, reason, widgets.HBox([approve, deny, always])])
        panel.add_class("aimu-approval")

        self._show(panel)
        note = f"{tool_name}: approval abandoned (the run was stopped)"
        try:
            deadline = loop.time() + self.timeout
            while not answer.done():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    answer.set_result(("timeout", ""))
                    break
                await asyncio.wait({answer}, timeout=min(SLICE, remaining))
            verdict, text = answer.result()
            note = _note(tool_name, verdict, text)
            return verdict, text
        finally:
            self._static(note)
            _close(panel)

    def clear(self) -> None:
        """Empty the slot (the record already shows each decision)."""
        if self._handle is not None:
            self._handle.update({"text/plain": ""}, raw=True)

    def _show(self, panel: Any) -> None:
        if self._handle is None:
            self._handle = display(panel, display_id=True)
        else:
            self._handle.update(panel)

    def _static(self, note: str) -> None:
        self._handle.update(
            {"text/plain": note, "text/markdown": f"*{html.escape(note)}*"}, raw=True
        )


def _note(tool_name: str, verdict: str, reason: str) -> str:
    if verdict == "approve":
        return f"{tool_name}: approved"
    if verdict == "always":
        return f"{tool_name}: approved (always, for this conversation)"
    if verdict == "timeout":
        return f"{tool_name}: timed out, the notebook's policy decided"
    return f"{tool_name}: denied: {reason}" if reason.strip() else f"{tool_name}: denied"


def _close(widget: Any) -> None:
    for child in getattr(widget, "children", ()):
        _close(child)
    widget.close()
