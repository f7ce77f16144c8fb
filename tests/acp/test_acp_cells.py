"""``%%agent --model acp:<command line>`` in a real kernel, driving the fake ACP agent.

The fake agent (fake_agent.py) is a stdio subprocess written with the SDK's agent side; the
kernel starts it, and the tests read what the cell showed (the run record) and what reached
the agent (its answer text, the files it changed, its request log).
"""

from __future__ import annotations

import json
import threading
import time

from acp_setup import AGENT, NOTES
from kernel_harness import Widgets

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CELL = '%%agent --model "acp:{agent}"{flags}\n{prompt}'


def cell(prompt: str, flags: str = "") -> str:
    return CELL.format(agent=AGENT, flags=flags, prompt=prompt)


def answer(result) -> str:
    return "".join(e["text"] for e in result.record["events"] if e["type"] == "text")


def card(result, name: str) -> dict:
    return next(e for e in result.record["events"] if e["type"] == "tool" and e["name"] == name)


def clicker(kernel, widgets: Widgets, button: str):
    """An iopub callback that clicks ``button`` on the first approval panel shown."""
    clicked: list[str] = []

    def on_message(msg):
        widgets.see(msg)
        data = msg["content"].get("data", {})
        if (
            clicked
            or msg["msg_type"] not in ("display_data", "update_display_data")
            or WIDGET_VIEW not in data
            or widgets.is_inbox_box(msg)
        ):
            return
        target = widgets.button(button) or widgets.find("ButtonModel", description=button)
        if target is not None:
            clicked.append(target)
            kernel.click(target)

    return on_message


def test_streamed_text_thoughts_plan_and_tool_calls_render_as_cards(kernel, notes, tmp_path):
    result = kernel.ok(cell("Please read the notes."))
    record = result.record
    assert record["status"] == "done"
    assert record["model"] == f"acp:{AGENT}"
    kinds = [e["type"] for e in record["events"]]
    assert kinds[:3] == ["thinking", "plan", "text"]
    assert record["events"][1]["entries"] == [
        {"content": "Answer the prompt", "status": "in_progress", "priority": "medium"}
    ]
    read = card(result, "Read notes.txt")
    assert read["status"] == "done"
    assert read["result"] == "a draft note"
    assert read["arguments"] == {"path": "notes.txt"}
    markdown = result.bundle["text/markdown"]
    assert "Read notes.txt" in markdown and "**Plan**" in markdown
    assert "[~] Answer the prompt" in result.bundle["text/plain"]


def test_the_session_opens_in_the_notebook_folder_and_offers_no_fs_or_terminal(
    kernel, notes, tmp_path, agent_log
):
    kernel.ok(cell("hello"))
    log = agent_log.read_text().splitlines()
    assert f"new_session {tmp_path} mcp=0" in log
    capabilities = json.loads(next(line for line in log if line.startswith("initialize "))[11:])
    assert capabilities["fs"] == {"readTextFile": False, "writeTextFile": False, "_meta": None}
    assert capabilities["terminal"] is False


def test_the_next_cell_continues_the_session_and_new_starts_another(kernel, notes):
    first = answer(kernel.ok(cell("hello")))
    second = answer(kernel.ok(cell("again")))
    fresh = answer(kernel.ok(cell("anew", " --new")))
    session = first.split("of session ")[1].split(".")[0]
    assert first.startswith(f"turn 1 of session {session}")
    assert second.startswith(f"turn 2 of session {session}")
    assert fresh.startswith("turn 1 of session ") and session not in fresh


def test_approving_a_permission_request_sends_allow_once_and_the_diff_shows(kernel, notes):
    widgets = Widgets()
    result = kernel.execute(
        cell("Please edit the notes."), on_message=clicker(kernel, widgets, "Approve")
    )
    assert result.status == "ok", result.error_lines
    assert "permission: yes." in answer(result)
    assert notes.read_text() == NOTES.replace("draft", "final")
    edit = card(result, "Edit notes.txt")
    assert edit["approval"] == {"approved": True, "reason": "", "by": "user"}
    assert edit["status"] == "done"
    assert "-a draft note\n+a final note" in edit["result"]
    assert edit["diffs"][0]["old"] == NOTES
    assert "```diff" in result.bundle["text/markdown"]
    shown = [s for s in widgets.states.values() if s.get("_model_name") == "HTMLModel"]
    assert any("Always allow (allow_always)" in s.get("value", "") for s in shown)


def test_denying_a_permission_request_sends_reject_and_nothing_changes(kernel, notes):
    widgets = Widgets()
    result = kernel.execute(
        cell("Please edit the notes."), on_message=clicker(kernel, widgets, "Deny")
    )
    assert result.status == "ok", result.error_lines
    assert "permission: no." in answer(result)
    assert notes.read_text() == NOTES
    edit = card(result, "Edit notes.txt")
    assert edit["approval"]["approved"] is False and edit["approval"]["by"] == "user"
    assert edit["status"] == "denied"


def test_always_allow_sends_the_agents_allow_always_option(kernel, notes):
    widgets = Widgets()
    result = kernel.execute(
        cell("Please edit the notes."),
        on_message=clicker(kernel, widgets, "Always allow Edit notes.txt"),
    )
    assert result.status == "ok", result.error_lines
    assert "permission: yes-always." in answer(result)


def test_headless_the_declared_policy_answers_permission_requests(kernel, notes):
    denied = kernel.ok(cell("Please edit the notes."), allow_stdin=False)
    assert "permission: no." in answer(denied)
    assert card(denied, "Edit notes.txt")["approval"]["by"] == "policy"
    assert notes.read_text() == NOTES
    allowed = kernel.ok(cell("Please edit the notes.", " --approve auto"), allow_stdin=False)
    assert "permission: yes." in answer(allowed)
    assert notes.read_text() == NOTES.replace("draft", "final")


def test_a_console_asks_the_permission_on_stdin(kernel, notes):
    result = kernel.ok(cell("Please edit the notes."), widgets=False, on_input=lambda _: "y")
    assert any("Edit notes.txt" in prompt for prompt in kernel.prompts)
    assert "permission: yes." in answer(result)


def test_interrupt_sends_cancel_and_the_agent_settles_and_lives_on(kernel, notes, tmp_path):
    ticking = threading.Event()

    def see(msg):
        if "tick" in json.dumps(msg["content"].get("data", {})):
            ticking.set()

    def interrupt():
        if ticking.wait(60):
            kernel.km.interrupt_kernel()

    threading.Thread(target=interrupt, daemon=True).start()
    started = time.monotonic()
    result = kernel.execute(cell("Go slow."), on_message=see, timeout=90)
    assert result.reply.get("ename") == "AgentInterrupted", result.error_lines
    assert result.record["status"] == "interrupted"
    assert (tmp_path / "cancelled.txt").read_text() == "cancelled"
    assert time.monotonic() - started < 60
    after = answer(kernel.ok(cell("hello")))
    assert after.startswith("turn 2 of session "), after


def test_a_missing_agent_command_is_a_clear_message_in_the_cell(kernel):
    result = kernel.execute('%%agent --model "acp:no-such-acp-agent --flag"\nhello')
    assert result.reply.get("ename") == "AgentFailed"
    shown = "\n".join(result.error_lines)
    assert "'no-such-acp-agent' was not found" in shown
    assert "Traceback" not in shown


def test_a_crashed_agent_is_a_clear_message_with_what_it_said(kernel, notes):
    result = kernel.execute(cell("Please crash."))
    assert result.reply.get("ename") == "AgentFailed"
    shown = "\n".join(result.error_lines)
    assert "exited with code 3" in shown and "boom" in shown
    assert answer(kernel.ok(cell("hello"))).startswith("turn 1 of session ")


def test_an_agent_asking_to_log_in_says_so(kernel, notes):
    result = kernel.execute(cell("Please login."))
    assert result.reply.get("ename") == "AgentFailed"
    assert "needs you to log in" in "\n".join(result.error_lines)


def test_the_agent_calls_the_runs_own_tools_through_the_gate(kernel, notes, agent_log):
    kernel.ok(
        "def nb_echo(text: str) -> str:\n    'Echo text back.'\n    return f'<{text}>'\n"
        "%tool --ask nb_echo"
    )
    widgets = Widgets()
    result = kernel.execute(
        cell("Use the tools.", " --new"), on_message=clicker(kernel, widgets, "Approve")
    )
    assert result.status == "ok", result.error_lines
    assert "echo: <hello>" in answer(result)
    echo = card(result, "nb_echo")
    assert echo["approval"]["by"] == "user" and echo["result"] == "<hello>"
    assert "mcp=1" in agent_log.read_text()
