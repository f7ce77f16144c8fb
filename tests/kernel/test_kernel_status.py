"""What a frontend reads from the kernel while an ``%%agent`` cell runs: it stays busy, and
each widget message it sends meanwhile is answered ``idle`` (the widget manager sends a
widget's next change only after that ``idle``: that is how a typed reason reaches the panel).
"""

from __future__ import annotations

import queue
import time

from kernel_harness import Widgets

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RUN_MIME = "application/vnd.aimu.run+json"
DENY_MODEL = (
    "m = ScriptedClient([call('write_file', path='x.txt', content='x'),"
    " lambda messages, tools: 'Model read: ' + messages[-1]['content']])"
)


class Frontend:
    """Reads every iopub message (whatever its parent) as JupyterLab does, and sends widget
    changes one at a time, each after the ``idle`` that answers the one before."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel
        self.widgets = Widgets()
        self.status: list[tuple[str, str | None]] = []  # (state, parent msg_id)
        self.messages: list[dict] = []
        self._models: dict[str, dict] = {}

    def pump(self, until, timeout: float = 30, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            try:
                msg = self.kernel.client.get_iopub_msg(timeout=0.1)
            except queue.Empty:
                continue
            self.messages.append(msg)
            self.widgets.see(msg)
            self.kernel._apply_links(msg, self._models)  # answers the frontend probe
            if msg["msg_type"] == "status":
                state = msg["content"]["execution_state"]
                self.status.append((state, msg["parent_header"].get("msg_id")))

    def panel_shown(self) -> bool:
        return any(
            WIDGET_VIEW in m["content"].get("data", {})
            and not self.widgets.is_inbox_box(m)
            and m["msg_type"] in ("display_data", "update_display_data")
            for m in self.messages
        )

    def send(self, comm_id: str, data: dict) -> str:
        msg = self.kernel.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kernel.client.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    def type_value(self, comm_id: str, value: str) -> None:
        sent = self.send(
            comm_id, {"method": "update", "state": {"value": value}, "buffer_paths": []}
        )
        self.pump(lambda: ("idle", sent) in self.status, 10, f"the idle answering {value!r}")

    def reason_box(self) -> str:
        return self.widgets.find("TextModel", description="Reason:")

    def deny(self) -> None:
        self.send(self.widgets.button("Deny"), {"method": "custom", "content": {"event": "click"}})

    def kernel_state(self) -> str:
        return self.status[-1][0]


def run_until_the_panel_shows(kernel) -> tuple[Frontend, str]:
    """Start the denying run; return the frontend and the cell's request id once it asks."""
    kernel.ok(DENY_MODEL)
    frontend = Frontend(kernel)
    cell = kernel.client.execute("%%agent --model m --tools fs\nWrite x", allow_stdin=True)
    frontend.pump(frontend.panel_shown, what="the approval panel")
    return frontend, cell


def test_a_reason_typed_key_by_key_reaches_the_model_whole(kernel):
    frontend, cell = run_until_the_panel_shows(kernel)
    reason = frontend.reason_box()
    typed = "not now"
    for end in range(1, len(typed) + 1):
        frontend.type_value(reason, typed[:end])
    frontend.deny()
    frontend.pump(lambda: ("idle", cell) in frontend.status, what="the cell to end")

    assert kernel.value("m.requests[1]['messages'][-1]['content']") == (
        "Tool 'write_file' was not approved: not now"
    )


def test_the_kernel_reads_busy_while_the_run_handles_widget_messages_and_idle_after(kernel):
    frontend, cell = run_until_the_panel_shows(kernel)
    reason = frontend.reason_box()
    frontend.type_value(reason, "n")
    frontend.pump(lambda: frontend.kernel_state() == "busy", 5, "the kernel to read busy again")
    assert frontend.kernel_state() == "busy"

    frontend.deny()
    frontend.pump(lambda: ("idle", cell) in frontend.status, what="the cell to end")
    while True:  # until the kernel falls quiet: a late busy would be read as the state
        try:
            msg = kernel.client.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            break
        if msg["msg_type"] == "status":
            frontend.status.append((msg["content"]["execution_state"], None))
    assert frontend.kernel_state() == "idle"


def test_a_comm_opened_over_a_subshell_mid_run_leaves_the_kernel_busy(kernel):
    """JupyterLab opens the run's inbox comm over a kernel subshell; the subshell answers it
    busy … idle, and the kernel must read busy again at once."""
    kernel.ok(DENY_MODEL)
    frontend = Frontend(kernel)
    reply = kernel.client.control_channel
    request = kernel.client.session.msg("create_subshell_request", {})
    reply.send(request)
    subshell = kernel.client.get_control_msg(timeout=10)["content"]["subshell_id"]
    cell = kernel.client.execute("%%agent --model m --tools fs\nWrite x", allow_stdin=True)
    frontend.pump(frontend.panel_shown, what="the approval panel")
    key = next(
        m["content"]["data"][RUN_MIME]["inbox"]
        for m in frontend.messages
        if RUN_MIME in m["content"].get("data", {})
    )
    opened = kernel.client.session.msg(
        "comm_open", {"comm_id": "inbox-1", "target_name": "aimu.inbox", "data": {"run": key}}
    )
    opened["header"]["subshell_id"] = subshell
    kernel.client.shell_channel.send(opened)
    sent = opened["header"]["msg_id"]
    frontend.pump(lambda: ("idle", sent) in frontend.status, 10, "the subshell's idle")
    frontend.pump(lambda: frontend.kernel_state() == "busy", 5, "the kernel to read busy again")

    frontend.deny()
    frontend.pump(lambda: ("idle", cell) in frontend.status, what="the cell to end")
