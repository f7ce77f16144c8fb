"""Approval in a real kernel: buttons clicked mid-cell, headless policy, always-allow."""

from __future__ import annotations

from kernel_harness import Widgets

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def approve_buttons(result):
    """The Approve buttons a run opened (the "tell the agent…" box may open other widgets)."""
    opened = [m["content"]["data"]["state"] for m in result.of_type("comm_open")]
    return [state for state in opened if state.get("description") == "Approve"]


def clicker(kernel, widgets: Widgets, *actions):
    """An iopub callback that, each time a new approval panel is shown, performs the next action:
    ``("approve",)``, ``("deny", reason)`` or ``("always",)``."""
    pending = list(actions)
    answered: set[str] = set()

    def on_message(msg):
        widgets.see(msg)
        data = msg["content"].get("data", {})
        if (
            msg["msg_type"] not in ("display_data", "update_display_data")
            or WIDGET_VIEW not in data
            or data[WIDGET_VIEW]["model_id"] in answered
        ):
            return
        if not pending or widgets.is_inbox_box(msg):
            return
        answered.add(data[WIDGET_VIEW]["model_id"])
        action = pending.pop(0)
        if action[0] == "approve":
            kernel.click(widgets.button("Approve"))
        elif action[0] == "always":
            kernel.click(widgets.find("ButtonModel", description=action[1]))
        else:
            kernel.set_value(widgets.find("TextModel"), action[1])
            kernel.click(widgets.button("Deny"))

    return on_message


def test_clicking_approve_while_the_cell_runs_lets_the_gated_tool_run(kernel, tmp_path):
    kernel.ok(
        "m = ScriptedClient([call('write_file', path='note.txt', content='hi'), 'Wrote it.'])"
    )
    widgets = Widgets()
    result = kernel.execute(
        "%%agent --model m --tools fs\nWrite hi to note.txt",
        on_message=clicker(kernel, widgets, ("approve",)),
    )
    assert result.status == "ok", result.error_lines
    assert (tmp_path / "note.txt").read_text() == "hi"
    card = result.record["events"][0]
    assert card["name"] == "write_file"
    assert card["status"] == "done"
    assert card["approval"] == {"approved": True, "reason": "", "by": "user"}
    assert result.record["events"][-1] == {"type": "text", "text": "Wrote it."}
    # the panel was shown in the run's own output, which ends as the record alone
    (output,) = result.run_outputs()
    display_id = output["content"]["transient"]["display_id"]
    run = [m for m in result.displays if m["content"]["transient"]["display_id"] == display_id]
    with_panel = [m for m in run if WIDGET_VIEW in m["content"]["data"]]
    assert with_panel
    assert WIDGET_VIEW not in run[-1]["content"]["data"]
    assert "write_file" in with_panel[0]["content"]["data"]["text/plain"]


def test_deny_with_a_reason_reaches_the_model_and_the_tool_does_not_run(kernel, tmp_path):
    kernel.ok("m = ScriptedClient([call('write_file', path='x.txt', content='x'), 'Understood.'])")
    widgets = Widgets()
    result = kernel.execute(
        "%%agent --model m --tools fs\nWrite x",
        on_message=clicker(kernel, widgets, ("deny", "use the data folder")),
    )
    assert result.status == "ok", result.error_lines
    assert not (tmp_path / "x.txt").exists()
    card = result.record["events"][0]
    assert card["status"] == "denied"
    assert card["approval"] == {"approved": False, "reason": "use the data folder", "by": "user"}
    tool_message = kernel.value("m.requests[1]['messages'][-1]['content']")
    assert "use the data folder" in tool_message
    assert "denied: use the data folder" in result.bundle["text/markdown"]


def test_always_allow_stops_asking_for_that_tool_in_the_conversation(kernel, tmp_path):
    kernel.ok(
        "m = ScriptedClient([call('write_file', path='a.txt', content='1'), 'one',"
        " call('write_file', path='b.txt', content='2'), 'two'])"
    )
    widgets = Widgets()
    first = kernel.execute(
        "%%agent --model m --tools fs\nwrite a",
        on_message=clicker(kernel, widgets, ("always", "Always allow write_file")),
    )
    assert first.status == "ok", first.error_lines
    second = kernel.execute("%%agent --model m --tools fs\nwrite b", on_message=widgets.see)
    assert second.status == "ok", second.error_lines
    assert (tmp_path / "b.txt").read_text() == "2"
    panels = [m for m in second.displays if WIDGET_VIEW in m["content"]["data"]]
    assert not [m for m in panels if not widgets.is_inbox_box(m)]
    chosen = {"approved": True, "reason": "", "by": "always", "chosen_at": ""}
    assert first.record["events"][0]["approval"] == chosen
    assert "allowed: Always allow, chosen here" in first.bundle["text/markdown"]
    at = "write_file(path='a.txt', content='1')"
    assert second.record["events"][0]["approval"] == {**chosen, "chosen_at": at}
    assert f"allowed: Always allow, chosen at {at}" in second.bundle["text/markdown"]


def test_reading_tools_and_percent_tool_functions_run_without_asking(kernel, tmp_path):
    (tmp_path / "data.txt").write_text("forty-two\n")
    kernel.ok(
        "def shout(text: str) -> str:\n    'Upper-case the text.'\n    return text.upper()\n"
        "%tool shout\n"
        "m = ScriptedClient([reply(tool_calls=[call('read_file', path='data.txt'),"
        " call('shout', text='hi')]), 'ok'])"
    )
    result = kernel.execute("%%agent --model m --tools fs\nread it", allow_stdin=True)
    assert result.status == "ok", result.error_lines
    assert not approve_buttons(result)
    cards = result.record["events"][0:2]
    assert [c["status"] for c in cards] == ["done", "done"]
    assert "forty-two" in cards[0]["result"]
    assert cards[1]["result"] == "HI"
    assert all(c["approval"] is None for c in cards)


def test_percent_tool_ask_gates_a_user_function(kernel):
    kernel.ok(
        "sent = []\n"
        "def send(to: str) -> str:\n    'Send a message.'\n    sent.append(to)\n    return 'sent'\n"
        "%tool --ask send\n"
        "m = ScriptedClient([call('send', to='bob'), 'done'])"
    )
    result = kernel.execute("%%agent --model m\nsend it", allow_stdin=False)
    assert result.status == "ok", result.error_lines
    assert kernel.value("sent") == []
    approval = result.record["events"][0]["approval"]
    assert approval["approved"] is False and approval["by"] == "policy"


def test_headless_run_denies_gated_calls_and_records_each_decision(kernel, tmp_path):
    kernel.ok("m = ScriptedClient([call('write_file', path='h.txt', content='h'), 'ok'])")
    result = kernel.execute("%%agent --model m --tools fs\nwrite", allow_stdin=False)
    assert result.status == "ok", result.error_lines
    assert not approve_buttons(result)
    assert not (tmp_path / "h.txt").exists()
    card = result.record["events"][0]
    assert card["approval"]["by"] == "policy" and card["approval"]["approved"] is False
    text = result.bundle["text/plain"]
    assert "write_file" in text
    assert "denied by policy: no one is there to approve it (headless run)\n" in text
    assert text.count("policy") == 1  # said once


def test_headless_run_follows_aimu_approval_auto(tmp_path):
    from kernel_harness import SETUP, start_kernel

    kernel = start_kernel(tmp_path, AIMU_APPROVAL="auto")
    try:
        kernel.ok(SETUP)
        kernel.ok("m = ScriptedClient([call('write_file', path='h.txt', content='h'), 'ok'])")
        result = kernel.execute("%%agent --model m --tools fs\nwrite", allow_stdin=False)
        assert result.status == "ok", result.error_lines
        assert (tmp_path / "h.txt").read_text() == "h"
        assert result.record["events"][0]["approval"] == {
            "approved": True,
            "reason": "",
            "by": "policy",
        }
    finally:
        kernel.client.stop_channels()
        kernel.km.shutdown_kernel(now=True)


def test_approve_deny_refuses_gated_calls_even_interactively(kernel, tmp_path):
    kernel.ok("m = ScriptedClient([call('write_file', path='d.txt', content='d'), 'ok'])")
    result = kernel.execute("%%agent --model m --tools fs --approve deny\nwrite")
    assert result.status == "ok", result.error_lines
    assert not approve_buttons(result)
    assert not (tmp_path / "d.txt").exists()
    assert result.record["events"][0]["status"] == "denied"


def test_an_unanswered_panel_times_out_into_the_headless_policy(kernel, tmp_path):
    kernel.ok("%config AimuMagics.approval_timeout = 1.0")
    kernel.ok("m = ScriptedClient([call('write_file', path='t.txt', content='t'), 'ok'])")
    result = kernel.execute("%%agent --model m --tools fs\nwrite")
    assert result.status == "ok", result.error_lines
    assert not (tmp_path / "t.txt").exists()
    card = result.record["events"][0]
    assert card["approval"]["by"] == "timeout"
    assert "timed out: denied by policy" in result.bundle["text/markdown"]


def test_concurrent_calls_ask_one_at_a_time_in_order(kernel, tmp_path):
    kernel.ok(
        "m = ScriptedClient([reply(tool_calls=[call('write_file', path='1.txt', content='1'),"
        " call('write_file', path='2.txt', content='2')]), 'ok'])\n"
        "%config AimuMagics.concurrent_tool_calls = True"
    )
    widgets = Widgets()
    timeline: list[str] = []
    panel_up: list[bool] = []

    def on_message(msg):
        widgets.see(msg)
        data = msg["content"].get("data", {})
        if msg["msg_type"] == "comm_open":
            state = data["state"]
            if state.get("_model_name") == "HTMLModel" and "<pre" in state.get("value", ""):
                timeline.append("asked " + ("1.txt" if "1.txt" in state["value"] else "2.txt"))
        elif msg["msg_type"] == "update_display_data":
            showing = WIDGET_VIEW in data
            if panel_up and not showing:
                timeline.append("answered")
            panel_up[:] = [True] if showing else []

    actions = clicker(kernel, widgets, ("approve",), ("deny", "not the second"))

    def both(msg):
        on_message(msg)
        actions(msg)

    result = kernel.execute(
        "import aimu_jupyter\nawait aimu_jupyter.run_agent('write both', model=m, tools='fs')",
        on_message=both,
    )
    assert result.status == "ok", result.error_lines
    assert timeline[:3] == ["asked 1.txt", "answered", "asked 2.txt"], timeline
    assert (tmp_path / "1.txt").exists() and not (tmp_path / "2.txt").exists()


def test_a_python_policy_in_a_notebook_variable_decides(kernel, tmp_path):
    kernel.ok(
        "from aimu import Denied\n"
        "def only_notes(name, arguments):\n"
        "    return arguments.get('path', '').startswith('notes/') or Denied('notes/ only')\n"
        "m = ScriptedClient([call('write_file', path='x.txt', content='x'), 'ok'])"
    )
    result = kernel.execute("%%agent --model m --tools fs --approve only_notes\nwrite")
    assert result.status == "ok", result.error_lines
    assert not approve_buttons(result)
    assert not (tmp_path / "x.txt").exists()
    card = result.record["events"][0]
    assert card["approval"] == {"approved": False, "reason": "notes/ only", "by": "policy"}
