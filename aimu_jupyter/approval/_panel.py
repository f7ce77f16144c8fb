"""The inline approval panel: Approve, Deny (with a reason), Always allow.

The panel is shown in the run's own output, as a widget view published with the record
(:meth:`~aimu_jupyter.view._live.LiveDisplay.overlay`), above which it repeats the record so far.
Once answered the output is the record alone, whose tool card holds the decision: nothing is
left behind in the cell or the saved notebook.

The running ``%%agent`` cell awaits an asyncio Future that the buttons resolve. ipykernel
>= 7.4 delivers widget messages while an async cell awaits, possibly on a subshell thread,
so the Future is always resolved through ``loop.call_soon_threadsafe``. The wait is taken
in short slices so an interrupt lands at once, and gives up after ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from aimu.text import html_text, visible, visible_line
from aimu_jupyter.view._record import MIME_TYPE, RunRecord, ordered_names

#: The wait for a click is taken in slices this long (seconds).
SLICE = 0.25
#: Turns of the event loop the panel gives the record to take in the call it asks about.
CATCH_UP = 20
#: Seconds an answered panel's widgets stay open, hidden, before they are closed: messages
#: the browser sent just before the click (a reason's last key presses) still reach them.
#: Closed at once, the frontend drops the comm's kernel subshell with such a message still
#: queued there, and the kernel prints "coroutine … run_in_context was never awaited".
CLOSE_AFTER = 5.0

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

_CODE_STYLE = (
    "margin:0 0 6px;max-height:24em;overflow:auto;white-space:pre;padding:6px 8px;"
    "font-family:var(--jp-code-font-family,monospace);font-size:var(--jp-code-font-size,13px);"
    "background:var(--jp-cell-editor-background,#f5f5f5);"
    "border:1px solid var(--jp-border-color2,#ddd);border-radius:3px"
)
_TABLE_STYLE = "border-collapse:collapse;margin:0 0 6px"
_CELL_STYLE = "padding:1px 10px 1px 0;vertical-align:top;text-align:left"


class ApprovalPanels:
    """Asks about one call at a time in the run's output.

    ``show(extra)`` publishes the record with the panel's widget view (``None``: without);
    ``record`` is repeated inside the panel while it waits, without its "tell the agent…"
    field, so the panel follows the call it asks about.
    """

    def __init__(
        self,
        timeout: float,
        show: Callable[[dict[str, Any] | None], None],
        record: RunRecord,
    ):
        self.timeout = timeout
        self._show = show
        self._record = record

    async def ask(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        agent: str | None = None,
        preview: dict[str, Any] | None = None,
    ) -> tuple[str, str]:
        """Show the panel and wait: ``("approve" | "deny" | "always" | "timeout", reason)``.

        ``agent`` is the sub-agent asking (``"parent/label@call_id"``), named on the panel;
        ``preview`` (a MIME bundle: an edit's diff) is shown in place of the arguments.
        """
        import ipywidgets as widgets

        loop = asyncio.get_running_loop()
        answer: asyncio.Future[tuple[str, str]] = loop.create_future()

        def resolve(verdict: str, reason: str = "") -> None:
            def settle() -> None:
                if not answer.done():
                    answer.set_result((verdict, reason))

            loop.call_soon_threadsafe(settle)

        card = await self._waiting_card(tool_name)
        so_far = widgets.Output()
        context = self._record.bundle()
        if MIME_TYPE in context:
            context[MIME_TYPE] = {**context[MIME_TYPE], "inbox": None}
        so_far.outputs = ({"output_type": "display_data", "data": context, "metadata": {}},)
        name = html_text(visible_line(tool_name))
        asker = f"Sub-agent <code>{html_text(visible_line(agent))}</code> asks: a" if agent else "A"
        title = widgets.HTML(f"<b>{asker}pprove a call to <code>{name}</code>?</b>")
        args = widgets.HTML(arguments_html(arguments, card))
        if preview is not None:
            args = widgets.Output(
                outputs=({"output_type": "display_data", "data": preview, "metadata": {}},),
                _dom_classes=("aimu-approval-preview",),
            )
        reason = widgets.Text(
            placeholder="Reason, if you deny (the model reads it)",
            description="Reason:",
            layout=widgets.Layout(width="100%"),
        )
        approve = widgets.Button(
            description="Approve",
            button_style="success",
            icon="check",
            tooltip=f"Run {visible_line(tool_name)} with these arguments",
        )
        deny = widgets.Button(
            description="Deny",
            button_style="danger",
            icon="times",
            tooltip="Refuse this call; the model reads your reason",
        )
        always = widgets.Button(
            description=f"Always allow {visible_line(tool_name)}",
            tooltip=f"Approve every {visible_line(tool_name)} call in this conversation",
            layout=widgets.Layout(width="auto"),
        )
        approve.on_click(lambda _: resolve("approve"))
        deny.on_click(lambda _: resolve("deny", reason.value))
        always.on_click(lambda _: resolve("always"))
        for button, role in ((approve, "approve"), (deny, "deny"), (always, "always")):
            button.add_class(f"aimu-approval-{role}")
        panel = widgets.VBox([title, args, reason, widgets.HBox([approve, deny, always])])
        panel.add_class("aimu-approval")
        whole = widgets.VBox([so_far, panel])

        view = {"version_major": 2, "version_minor": 0, "model_id": whole.model_id}
        self._show({WIDGET_VIEW: view})
        try:
            deadline = loop.time() + self.timeout
            while not answer.done():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    answer.set_result(("timeout", ""))
                    break
                await asyncio.wait({answer}, timeout=min(SLICE, remaining))
            return answer.result()
        finally:
            self._show(None)
            loop.call_later(CLOSE_AFTER, _close, whole)

    async def _waiting_card(self, tool_name: str) -> dict[str, Any]:
        """The card of the call waiting for this answer ({} if not found), once the record
        has taken in the chunks that announced it (they may still be queued)."""
        for _ in range(CATCH_UP):
            for card in reversed(list(self._record.tool_cards())):
                if card["name"] == tool_name and card["status"] == "awaiting_approval":
                    return card
            await asyncio.sleep(0)
        return {}


def arguments_html(arguments: dict[str, Any], card: dict[str, Any]) -> str:
    """The call's arguments on the panel: each that is code as a monospace block, the others
    as a small table, all in full (a panel shows what it approves)."""
    code = card.get("code") or {}
    names = ordered_names({**card, "arguments": arguments}) if isinstance(arguments, dict) else []
    rows = []
    blocks = []
    for name in names:
        value = arguments[name]
        if name in code:
            label = _shown(name) + (f" ({_shown(code[name])})" if code[name] else "")
            blocks.append(
                f"<div><code>{label}</code></div>"
                f"<pre style='{_CODE_STYLE}'>{_shown(str(value))}</pre>"
            )
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        rows.append(
            f"<tr><th style='{_CELL_STYLE}'><code>{_shown(name)}</code></th>"
            f"<td style='{_CELL_STYLE};white-space:pre-wrap'>{_shown(text)}</td></tr>"
        )
    table = f"<table style='{_TABLE_STYLE}'>{''.join(rows)}</table>" if rows else ""
    if not isinstance(arguments, dict):
        table = f"<pre style='{_CODE_STYLE}'>{_shown(json.dumps(arguments))}</pre>"
    return table + "".join(blocks)


def _shown(text: str) -> str:
    """Text for the panel's HTML, its control and bidi characters made visible."""
    return html_text(visible(text))


def _close(widget: Any) -> None:
    for child in getattr(widget, "children", ()):
        _close(child)
    widget.close()
