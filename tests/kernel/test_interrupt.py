"""An interrupt stops an ``%%agent`` run at once, whatever it is waiting on.

Each test starts a run whose current step would take 20-30 s (a tool of each kind, an
approval panel, a stalled model stream), interrupts the kernel once that step has begun, and
measures the time from ``interrupt_kernel()`` to the kernel going idle. The transcript must
stay valid (the next cell continues the conversation) and what the tool started must end.
"""

from __future__ import annotations

import os
import threading
import time

from kernel_harness import RUN_MIME

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: Generous for a shared 2-core machine; the issue asks for < 1 s, the design aims at 0.5 s.
LIMIT = 1.0

#: A ``%tool`` async function that marks that it started, then awaits a 20 s sleep.
NAP = """\
import asyncio, pathlib
async def nap() -> str:
    'Sleep for a while.'
    pathlib.Path('napping').touch()
    await asyncio.sleep(20)
    return 'rested'
%tool nap
m = ScriptedClient([call('nap'), 'after'])
"""


def interrupted_run(kernel, code: str, started, *, see=None, timeout: float = 40):
    """Run ``code``; once ``started()`` is true interrupt the kernel. Returns the execution
    and the seconds from the interrupt to the kernel being idle again. ``see`` is shown
    every iopub message of the cell."""
    moments: dict[str, float] = {}
    done = threading.Event()

    def watch() -> None:
        while not started():
            if done.wait(0.01):
                return
        moments["interrupt"] = time.monotonic()
        kernel.km.interrupt_kernel()

    def on_message(msg) -> None:
        if see is not None:
            see(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            moments["idle"] = time.monotonic()

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = kernel.execute(code, on_message=on_message, timeout=timeout)
    finally:
        done.set()
        watcher.join()
    assert "interrupt" in moments, "the step never started"
    return result, moments["idle"] - moments["interrupt"]


def assert_interrupted(result, seconds: float) -> None:
    """The run ended as interrupted, within LIMIT seconds of the interrupt."""
    assert seconds < LIMIT, seconds
    assert result.reply.get("ename") == "AgentInterrupted", result.error_lines
    assert result.record["status"] == "interrupted"


def assert_conversation_continues(kernel) -> None:
    """The next cell continues from a valid transcript (every tool call answered)."""
    kernel.ok("m.turns.append('still here')")
    kernel.ok("%%agent --model m\nnext")
    roles = kernel.value("[x['role'] for x in m.requests[-1]['messages']]")
    assert roles[-1] == "user" and roles[-2] == "assistant"
    tool_ids = kernel.value(
        "[x['tool_call_id'] for x in m.requests[-1]['messages'] if x['role'] == 'tool']"
    )
    call_ids = kernel.value(
        "[c['id'] for x in m.requests[-1]['messages'] for c in x.get('tool_calls') or ()]"
    )
    assert sorted(tool_ids) == sorted(call_ids)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def assert_process_ends(pid: int) -> None:
    """The process a tool started is gone within two seconds of the interrupt."""
    deadline = time.monotonic() + 2
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not process_alive(pid), "the command's child outlived the interrupt"


def test_interrupt_stops_a_threaded_builtin_and_kills_its_child(kernel, tmp_path):
    pid_file = tmp_path / "child.pid"
    command = "echo $$ > child.pid; exec sleep 30"
    kernel.ok(f"m = ScriptedClient([call('run_command', command={command!r}), 'after'])")
    result, seconds = interrupted_run(
        kernel,
        "%%agent --model m --tools compute --approve auto\nsleep",
        lambda: pid_file.exists() and pid_file.read_text().strip(),
    )
    assert_interrupted(result, seconds)
    assert_process_ends(int(pid_file.read_text()))
    assert_conversation_continues(kernel)


def test_interrupt_stops_an_async_tool_awaiting_a_long_sleep(kernel, tmp_path):
    kernel.ok(NAP)
    result, seconds = interrupted_run(
        kernel, "%%agent --model m\nnap", lambda: (tmp_path / "napping").exists()
    )
    assert_interrupted(result, seconds)
    assert result.record["events"][0]["result"] != "rested"
    assert_conversation_continues(kernel)


def test_interrupt_stops_an_mcp_call_and_the_client_stays_usable(kernel, tmp_path):
    kernel.ok(
        "import asyncio, pathlib\n"
        "from fastmcp import FastMCP\n"
        "server = FastMCP('slow')\n"
        "@server.tool\nasync def crawl(url: str) -> str:\n"
        "    'Fetch slowly.'\n"
        "    pathlib.Path('crawling').touch()\n"
        "    try:\n"
        "        await asyncio.sleep(30)\n"
        "    except asyncio.CancelledError:\n"
        "        pathlib.Path('cancelled').touch()\n"
        "        raise\n"
        "    return 'page'\n"
        "@server.tool\ndef ping() -> str:\n    'Answer at once.'\n    return 'pong'\n"
        "mcp = aimu.tools.MCPClient(server=server)\n"
        "m = ScriptedClient([call('crawl', url='x'), 'after'])"
    )
    result, seconds = interrupted_run(
        kernel,
        "%%agent --model m --tools mcp --approve auto\ncrawl",
        lambda: (tmp_path / "crawling").exists(),
    )
    assert_interrupted(result, seconds)
    deadline = time.monotonic() + 2
    while not (tmp_path / "cancelled").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (tmp_path / "cancelled").exists(), "the server's call was not cancelled"
    assert_conversation_continues(kernel)
    assert kernel.value("mcp.call_tool('ping').text") == "pong"
    kernel.ok("mcp.close()")


def test_interrupt_stops_a_sub_agent_whose_tool_is_waiting(kernel, tmp_path):
    kernel.ok(
        "import asyncio, pathlib\n"
        "from aimu.tools.builtin import make_subagent_tool\n"
        "@aimu.tool\nasync def wait_for_data() -> str:\n"
        "    'Wait for data.'\n"
        "    pathlib.Path('waiting').touch()\n"
        "    await asyncio.sleep(20)\n"
        "    return 'data'\n"
        "child = ScriptedClient([call('wait_for_data'), 'child done'])\n"
        "spawn = make_subagent_tool(child, tools=[wait_for_data])\n"
        "m = ScriptedClient([call('spawn_subagent', task='wait'), 'parent done'])"
    )
    result, seconds = interrupted_run(
        kernel,
        "%%agent --model m --tools spawn --approve auto\ndelegate",
        lambda: (tmp_path / "waiting").exists(),
    )
    assert_interrupted(result, seconds)
    assert_conversation_continues(kernel)


def test_interrupt_stops_a_model_stream_that_has_gone_quiet(kernel):
    kernel.ok("m = ScriptedClient(['first words then a long silence'], delay=20)")
    shown = threading.Event()

    def see(msg) -> None:  # the run's first display comes before the first (20 s) piece
        if RUN_MIME in msg["content"].get("data", {}):
            shown.set()

    result, seconds = interrupted_run(kernel, "%%agent --model m\ntalk", shown.is_set, see=see)
    assert_interrupted(result, seconds)
    kernel.ok("m.delay = 0")
    assert_conversation_continues(kernel)


def test_interrupt_stops_an_approval_wait(kernel, tmp_path):
    kernel.ok("m = ScriptedClient([call('write_file', path='w.txt', content='w'), 'after'])")
    panel = threading.Event()

    def see(msg) -> None:
        if WIDGET_VIEW in msg["content"].get("data", {}):
            panel.set()

    result, seconds = interrupted_run(
        kernel, "%%agent --model m --tools fs\nwrite", panel.is_set, see=see
    )
    assert_interrupted(result, seconds)
    assert not (tmp_path / "w.txt").exists()
    assert_conversation_continues(kernel)
