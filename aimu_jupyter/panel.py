"""The inline approval panel: Approve, Deny (with a reason), Always allow.

The panel is shown in the run's own output, as a widget view published with the record
(:meth:`~aimu_jupyter.live.LiveDisplay.overlay`), above which it repeats the record so far.
Once answered the output is the record alone, whose tool card holds the decision: nothing is
left behind in the cell or the saved notebook.

The running ``%%agent`` cell awaits an asyncio Future that the buttons resolve. ipykernel
>= 7.4 delivers widget messages while an async cell awaits, possibly on a subshell thread,
so the Future is always resolved through ``loop.call_soon_threadsafe``. The wait is taken
in short slices so an interrupt lands at once, and gives up after ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aimu._display import html_text, visible_line
from aimu_jupyter.record import pretty_arguments

#: The wait for a click is taken in slices this long (seconds).
SLICE = 0.25

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

_STYLE = "margin:0;max-height:18em;overflow:auto;white-space:pre-wrap"


class ApprovalPanels:
    """Asks about one call at a time in the run's output.

    ``show(extra)`` publishes the record with the panel's widget view (``None``: without);
    ``context()`` is the record's MIME bundle, repeated inside the panel while it waits.
    """

    def __init__(
        self,
        timeout: float,
        show: Callable[[dict[str, Any] | None], None],
        context: Callable[[], dict[str, Any]],
    ):
        self.timeout = timeout
        self._show = show
        self._context = context

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

        so_far = widgets.Output()
        so_far.outputs = ({"output_type": "display_data", "data": self._context(), "metadata": {}},)
        name = html_text(visible_line(tool_name))
        asker = f"Sub-agent <code>{html_text(visible_line(agent))}</code> asks: a" if agent else "A"
        title = widgets.HTML(f"<b>{asker}pprove a call to <code>{name}</code>?</b>")
        shown = html_text(pretty_arguments(arguments, fold=False))
        args = widgets.HTML(f"<pre style='{_STYLE}'>{shown}</pre>")
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
            _close(whole)


def _close(widget: Any) -> None:
    for child in getattr(widget, "children", ()):
        _close(child)
    widget.close()
