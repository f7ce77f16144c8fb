"""Frontends that draw no widgets, and ``%%agent`` wrapped in ``%%time`` / ``%%capture``.

The console-like client here is a real jupyter_client that allows stdin and ignores widget
messages and display updates, as ``jupyter console`` does.
"""

from __future__ import annotations

import threading
import time

from test_interrupt import NAP, assert_interrupted, interrupted_run

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def new_outputs(result) -> list[dict]:
    """What a client that ignores display updates shows: new outputs only."""
    return [m["content"]["data"] for m in result.of_type("display_data", "execute_result")]


def test_a_console_client_is_asked_on_stdin_and_sees_the_final_record(kernel, tmp_path):
    kernel.ok("m = ScriptedClient([call('write_file', path='a.txt', content='hi'), 'Wrote it.'])")
    started = time.monotonic()
    result = kernel.execute(
        "%%agent --model m --tools fs\nwrite a.txt",
        widgets=False,
        on_input=lambda prompt: "y",
    )
    assert result.status == "ok", result.error_lines
    assert kernel.prompts == [
        "Approve write_file(path='a.txt', content='hi')? "
        "[y]es / [n]o / [a]lways / or type a reason to deny: "
    ]
    assert time.monotonic() - started < 10  # not the 300 s panel timeout
    assert (tmp_path / "a.txt").read_text() == "hi"
    assert not [m for m in result.displays if WIDGET_VIEW in m["content"]["data"]]
    shown = new_outputs(result)[-1]["text/plain"]
    assert "Wrote it." in shown and "approved" in shown
    assert "running" not in shown.splitlines()[-1]


def plain_outputs(result) -> list[str]:
    """The text a console prints: the plain text of each new output."""
    return [data["text/plain"] for data in new_outputs(result) if "text/plain" in data]


def test_a_consoles_first_run_prints_the_final_record_and_no_running_footer(kernel):
    kernel.ok("m = ScriptedClient(['Hello there.'])")
    result = kernel.execute("%%agent --model m\nhi", widgets=False)
    assert result.status == "ok", result.error_lines
    (shown,) = plain_outputs(result)
    assert "Hello there." in shown
    assert "· running" not in shown


def test_an_interrupted_first_console_run_prints_its_record(kernel, tmp_path):
    kernel.ok(NAP)

    def interrupt_once_napping() -> None:
        deadline = time.monotonic() + 30
        while not (tmp_path / "napping").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        kernel.km.interrupt_kernel()

    watcher = threading.Thread(target=interrupt_once_napping)
    watcher.start()
    try:
        result = kernel.execute("%%agent --model m\nnap", widgets=False, timeout=40)
    finally:
        watcher.join()
    assert result.reply.get("ename") == "AgentInterrupted", result.error_lines
    (shown,) = plain_outputs(result)
    assert "[stopped by you] The conversation is kept." in shown
    assert "nap" in shown


def test_a_console_client_types_a_reason_that_the_model_reads(kernel, tmp_path):
    kernel.ok("m = ScriptedClient([call('write_file', path='b.txt', content='x'), 'OK.'])")
    result = kernel.execute(
        "%%agent --model m --tools fs\nwrite b.txt",
        widgets=False,
        on_input=lambda prompt: "use the notes folder",
    )
    assert result.status == "ok", result.error_lines
    assert not (tmp_path / "b.txt").exists()
    assert result.record["events"][0]["approval"] == {
        "approved": False,
        "reason": "use the notes folder",
        "by": "user",
    }
    assert "use the notes folder" in kernel.value("m.requests[1]['messages'][-1]['content']")


def test_the_console_is_probed_once_then_asked_at_once_and_shown_only_the_final_record(
    kernel, tmp_path
):
    kernel.ok(
        "m = ScriptedClient(['first', call('write_file', path='c.txt', content='c'), 'second'])"
    )
    kernel.ok("%%agent --model m --tools fs\none", widgets=False)
    asked_after: list[float] = []
    started = time.monotonic()

    def answer(prompt: str) -> str:
        asked_after.append(time.monotonic() - started)
        return "a"

    result = kernel.execute("%%agent --model m --tools fs\ntwo", widgets=False, on_input=answer)
    assert result.status == "ok", result.error_lines
    assert asked_after and asked_after[0] < 1.5  # known from the first run: no probe wait
    assert not result.of_type("update_display_data")
    assert len(new_outputs(result)) == 1
    shown = new_outputs(result)[0]["text/plain"]
    assert "second" in shown and "allowed: Always allow, chosen here" in shown  # "a": always
    assert (tmp_path / "c.txt").read_text() == "c"
    assert kernel.value(
        "sorted(key.name for key in get_ipython().magics_manager.registry['AimuMagics']"
        ".session.conversations['default'].always_allowed)"
    ) == ["write_file"]  # remembered for that tool (its name and identity)


def test_a_widget_frontend_is_not_asked_on_stdin(kernel):
    kernel.ok("m = ScriptedClient(['hello'])")
    result = kernel.execute("%%agent --model m\nhi", on_input=lambda prompt: "y")
    assert result.status == "ok", result.error_lines
    assert kernel.prompts == []
    assert len(result.run_outputs()) == 1


def test_time_around_agent_times_the_run(kernel):
    kernel.ok("m = ScriptedClient(['timed answer'], delay=0.05)")
    result = kernel.execute("%%time\n%%agent --model m --out a\nhow long?")
    assert result.status == "ok", result.error_lines
    assert "Wall time" in result.stdout
    assert kernel.value("a") == "timed answer"
    assert result.record["status"] == "done"
    assert not result.of_type("execute_result")


def test_capture_around_agent_captures_the_record(kernel):
    kernel.ok("m = ScriptedClient(['captured answer'])")
    result = kernel.execute("%%capture run\n%%agent --model m\nquiet please")
    assert result.status == "ok", result.error_lines
    assert not result.records()
    assert "captured answer" in kernel.value("run.outputs[-1].data['text/plain']")


def test_interrupt_stops_an_agent_run_inside_time(kernel, tmp_path):
    kernel.ok(NAP)
    result, seconds = interrupted_run(
        kernel, "%%time\n%%agent --model m\nnap", lambda: (tmp_path / "napping").exists()
    )
    assert_interrupted(result, seconds)
    kernel.ok("m.turns.append('fine')")
    kernel.ok("%%agent --model m\nnext")


def test_gated_calls_inside_capture_follow_the_declared_policy(kernel, tmp_path):
    kernel.ok("m = ScriptedClient([call('write_file', path='d.txt', content='d'), 'ok'])")
    result = kernel.execute(
        "%%capture run\n%%agent --model m --tools fs\nwrite", on_input=lambda p: "y"
    )
    assert result.status == "ok", result.error_lines
    assert kernel.prompts == []
    assert not (tmp_path / "d.txt").exists()
    assert "inside %%time or %%capture the cell cannot receive button clicks" in kernel.value(
        "run.stderr"
    )
    assert "denied by policy" in kernel.value("run.outputs[-1].data['text/plain']")


def test_fastmcp_info_logs_stay_out_of_the_cell(kernel):
    kernel.ok(
        "from fastmcp import FastMCP\nfrom fastmcp.utilities.logging import get_logger\n"
        "server = FastMCP('demo')\n"
        "@server.tool\ndef ping() -> str:\n    'Pong.'\n    return 'pong'\n"
        "mcp = aimu.tools.MCPClient(server=server)\n"
        "m = ScriptedClient([call('ping'), 'ok'])"
    )
    result = kernel.ok("%%agent --model m --tools mcp --approve auto\nping\n")
    assert result.record["events"][0]["result"] == "pong"
    noisy = kernel.execute("get_logger('demo').info('Proxy detected connected client')")
    assert "Proxy detected" not in str(noisy.displays) + noisy.stderr
    warned = kernel.execute("get_logger('demo').warning('a real problem')")
    assert "a real problem" in warned.stderr  # warnings still reach the user, as plain logging
    kernel.ok("mcp.close()")


def test_a_fastmcp_level_the_user_chose_is_kept(tmp_path):
    from kernel_harness import SETUP, start_kernel

    kernel = start_kernel(tmp_path, FASTMCP_LOG_LEVEL="INFO")
    try:
        kernel.ok(SETUP + "import fastmcp, logging\nm = ScriptedClient(['ok'])")
        kernel.ok("%%agent --model m\nhi")
        assert kernel.value("logging.getLogger('fastmcp').level") == 20
    finally:
        kernel.client.stop_channels()
        kernel.km.shutdown_kernel(now=True)


def test_a_console_is_asked_even_after_a_headless_run_in_the_same_kernel(kernel, tmp_path):
    kernel.ok("m = ScriptedClient(['first', call('write_file', path='e.txt', content='e'), 'ok'])")
    kernel.ok("%%agent --model m\none", allow_stdin=False)
    result = kernel.execute(
        "%%agent --model m --tools fs\ntwo", widgets=False, on_input=lambda prompt: "y"
    )
    assert result.status == "ok", result.error_lines
    assert len(kernel.prompts) == 1
    assert (tmp_path / "e.txt").read_text() == "e"
