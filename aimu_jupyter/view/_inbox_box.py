"""The "tell the agent…" box: talk to a ``%%agent`` run while it is going, in frontends that
draw widgets but not the lab extension (which draws its own field: :mod:`.inbox_field`).

While a run goes on, a one-line text box sits below its live record. What the user sends
(Enter, or the Send button) goes into the run's :class:`~aimu.agents.Inbox`; the agent
reads it as a user message before its next model turn, and the record shows it where it was
delivered. ipykernel >= 7.4 delivers widget messages while the cell awaits, possibly on a
subshell thread: the inbox is thread-safe, and the widget is updated on the run's loop.
Enter reaches the kernel before the last key presses do (the widget manager holds a change
back until the kernel answered the one before, but sends Enter at once), so the box sends
what was typed once that last change arrived, or :data:`SETTLE` seconds after Enter.
When the run ends the box is replaced by a one-line note (or by nothing), so a saved
notebook holds no dead widget; its slot stays, empty when nothing was sent (an output
cannot be removed without clearing the cell's others). Headless runs and frontends that
draw no widgets get no box.
"""

from __future__ import annotations

import asyncio
import html
from typing import Any

from IPython.display import display

from aimu.agents.inbox import Inbox

PLACEHOLDER = "tell the agent…"
#: Seconds after Enter (or Send) within which the value typed last is taken to have arrived.
SETTLE = 0.5
#: The CSS class of the box (set when it is created, so a frontend can tell it apart).
BOX_CLASS = "aimu-inbox"


class InboxBox:
    """A text box feeding ``inbox``, shown in a display slot of its own."""

    def __init__(self, inbox: Inbox) -> None:
        import ipywidgets as widgets

        self.inbox = inbox
        self.sent: list[str] = []
        self._loop = asyncio.get_running_loop()
        self._text = widgets.Text(
            placeholder=PLACEHOLDER,
            layout=widgets.Layout(flex="1 1 auto", width="auto"),
        )
        self._text.add_class("aimu-inbox-text")
        self._send = widgets.Button(description="Send", icon="paper-plane", tooltip=PLACEHOLDER)
        self._send.add_class("aimu-inbox-send")
        self._status = widgets.HTML("")
        self._text.on_msg(self._on_text_message)
        self._text.observe(self._on_value, names="value")
        self._send.on_click(lambda _: self._loop.call_soon_threadsafe(self._submit_soon))
        self._due: asyncio.TimerHandle | None = None
        self._box = widgets.VBox(
            [widgets.HBox([self._text, self._send]), self._status], _dom_classes=(BOX_CLASS,)
        )
        self._handle: Any = None

    def show(self) -> None:
        self._handle = display(self._box, display_id=True)

    def close(self) -> None:
        """Replace the box by a static note of what was sent (nothing if nothing was)."""
        if self._handle is not None:
            note = (
                f"Told the agent during the run: {len(self.sent)} message(s)" if self.sent else ""
            )
            self._handle.update({"text/plain": note}, raw=True)
        for widget in (self._text, self._send, self._status, *self._box.children, self._box):
            widget.close()

    def _on_text_message(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        if content.get("event") == "submit":  # Enter in the text box
            self._loop.call_soon_threadsafe(self._submit_soon)

    def _on_value(self, _change: Any) -> None:
        if self._due is not None:  # the change Enter overtook: the text is now whole
            self._loop.call_soon_threadsafe(self._submit)

    def _submit_soon(self) -> None:
        """Say "Sending…" at once; send once the value typed last is in (:data:`SETTLE`)."""
        if self._due is not None:
            return
        self._status.value = "<small>Sending…</small>"
        self._due = self._loop.call_later(SETTLE, self._submit)

    def _submit(self) -> None:
        if self._due is None:
            return
        self._due.cancel()
        self._due = None
        text = self._text.value.strip()
        if not text:
            self._status.value = ""
            return
        self.inbox.put(text)
        self.sent.append(text)
        self._text.value = ""
        self._status.value = (
            f"<small>Sent: <i>{html.escape(text)}</i> (the agent reads it before its next "
            "model turn)</small>"
        )
