"""Terminal IPython: the run is printed as it happens and approvals are asked on stdin.

Drives a real ``ipython`` process in a pseudo-terminal (pexpect), as a person at a terminal.
"""

from __future__ import annotations

import os
import re
import sys
import time

import pexpect
import pytest

PROMPT = r"In \[\d+\]: "


@pytest.fixture
def terminal(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIMU_")}
    env.update(HOME=str(tmp_path), IPYTHONDIR=str(tmp_path / ".ipython"), TERM="dumb")
    child = pexpect.spawn(
        sys.executable,
        [
            "-m",
            "IPython",
            "--simple-prompt",
            "--no-banner",
            "--colors=NoColor",
            "--no-confirm-exit",
        ],
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 200),
    )
    child.expect(PROMPT)
    try:
        yield child
    finally:
        child.sendline("exit")
        child.expect(pexpect.EOF)
        child.close()


def run(child, *lines: str) -> None:
    """Type ``lines``; a cell magic's cell ends with two empty lines at the simple prompt."""
    for line in lines:
        child.sendline(line)


def test_terminal_ipython_streams_the_run_and_asks_on_stdin(terminal, tmp_path):
    run(
        terminal,
        "%load_ext aimu",
        "from aimu.models.providers.scripted import ScriptedClient, reply, call",
        "m = ScriptedClient([reply('Saving it now.', tool_calls=[call('write_file', "
        "path='a.txt', content='hi')]), 'Wrote a.txt for you.'], delay=0.02)",
    )
    terminal.expect(PROMPT)
    terminal.expect(PROMPT)
    terminal.expect(PROMPT)
    run(terminal, "%%agent --model m --tools fs", "Write hi to a.txt", "", "")
    terminal.expect("Saving it now.")
    terminal.expect(r"\[tool write_file\(path='a.txt', content='hi'\)\] running")
    terminal.expect(
        r"Approve write_file\(path='a.txt', content='hi'\)\? "
        r"\[y\]es / \[n\]o / \[a\]lways / or type a reason to deny: "
    )
    assert not (tmp_path / "a.txt").exists()
    terminal.sendline("y")
    terminal.expect("approved")
    terminal.expect("Wrote a.txt for you.")
    terminal.expect("-- scripted")
    terminal.expect(PROMPT)
    assert (tmp_path / "a.txt").read_text() == "hi"
    assert "headless" not in terminal.before


def test_a_reason_typed_at_the_terminal_denies_the_call(terminal, tmp_path):
    run(
        terminal,
        "%load_ext aimu",
        "from aimu.models.providers.scripted import ScriptedClient, call",
        "m = ScriptedClient([call('write_file', path='b.txt', content='x'), 'Fine.'])",
    )
    for _ in range(3):
        terminal.expect(PROMPT)
    run(terminal, "%%agent --model m --tools fs", "Write b.txt", "", "")
    terminal.expect("or type a reason to deny: ")
    terminal.sendline("not in this folder")
    terminal.expect("denied: not in this folder")
    terminal.expect("Fine.")
    terminal.expect(PROMPT)
    assert not (tmp_path / "b.txt").exists()


SLOW_NOTE = (
    "async def slow_note(path: str) -> str:\n"
    '    "Wait a moment, then write a note."\n'
    "    await asyncio.sleep(1.5)\n"
    "    pathlib.Path(path).write_text('written')\n"
    "    return 'noted'\n"
)
MCP_SERVER = (
    "server = FastMCP('slow')\n"
    "@server.tool\n"
    "async def slow_note(path: str) -> str:\n"
    '    "Wait a moment, then write a note."\n'
    "    await asyncio.sleep(1.5)\n"
    "    pathlib.Path(path).write_text('written')\n"
    "    return 'noted'\n"
)


def define(child, source: str) -> None:
    """Run a multi-line definition at the simple prompt (an empty line ends it)."""
    child.sendline("exec(" + repr(source) + ")")
    child.expect(PROMPT)


def interrupt_while_running(child, tools: str) -> str:
    """Start a run whose tool waits, press Ctrl-C once it runs; return what the run printed
    after the interrupt, which must end at the prompt within a second."""
    run(child, f"%%agent --model m {tools}", "Write the note.", "", "")
    child.expect(r"\[tool slow_note\(path='n.txt'\)\] running")
    child.sendintr()
    pressed = time.monotonic()
    child.expect(PROMPT)
    assert time.monotonic() - pressed < 1.0
    return child.before


def assert_the_stopped_run_stays_stopped(child, tmp_path) -> None:
    """The next cell shows nothing of the stopped run; its tool never finishes."""
    run(child, "m2 = ScriptedClient(['The second run answers.'])")
    child.expect(PROMPT)
    run(child, "%%agent --model m2 --name second", "Anything else?", "", "")
    child.expect(PROMPT)
    second = child.before
    assert "The second run answers." in second
    run(child, "await asyncio.sleep(2)")  # the loop runs well past the tool's own end
    child.expect(PROMPT)
    later = child.before
    for shown in (second, later):
        assert "noted" not in shown and "Never shown" not in shown
    assert not (tmp_path / "n.txt").exists()
    run(child, "%agent_usage")
    child.expect(PROMPT)
    assert re.search(r"default\s+1\s+1\s+1\s", child.before), child.before


def typed(child, *lines: str) -> None:
    """Type each line and wait for the next prompt."""
    for line in lines:
        child.sendline(line)
        child.expect(PROMPT)


SCRIPTED = "from aimu.models.providers.scripted import ScriptedClient, call"
NOTE_MODEL = "m = ScriptedClient([call('slow_note', path='n.txt'), 'Never shown.'])"


@pytest.mark.parametrize(
    ("definition", "lending", "tools"),
    [
        (SLOW_NOTE, "%tool slow_note", ""),
        (MCP_SERVER, "mcp = MCPClient(server=server)", "--tools mcp --approve auto"),
    ],
    ids=["async-tool", "mcp-call"],
)
def test_ctrl_c_during_a_waiting_tool_stops_the_run_for_good(
    terminal, tmp_path, definition, lending, tools
):
    typed(terminal, "%load_ext aimu", "import asyncio, pathlib", SCRIPTED)
    typed(terminal, "from fastmcp import FastMCP", "from aimu.tools import MCPClient")
    define(terminal, definition)
    typed(terminal, lending, NOTE_MODEL)
    stopped = interrupt_while_running(terminal, tools)
    assert "[interrupted] The run was stopped" in stopped
    assert "Traceback" not in stopped and "base_events" not in stopped
    assert_the_stopped_run_stays_stopped(terminal, tmp_path)


def test_mcp_progress_prints_as_steps_not_json(terminal):
    run(terminal, "%load_ext aimu", "from fastmcp import FastMCP, Context")
    run(terminal, "from aimu.models.providers.scripted import ScriptedClient, call")
    run(terminal, "from aimu.tools import MCPClient")
    for _ in range(4):
        terminal.expect(PROMPT)
    define(
        terminal,
        "server = FastMCP('steps')\n"
        "@server.tool\n"
        "async def count_to(n: int, ctx: Context) -> str:\n"
        '    "Count, reporting each step."\n'
        "    for step in range(1, n + 1):\n"
        "        await ctx.report_progress(step, n, f'step {step}' if step > 1 else None)\n"
        "    return 'counted'\n",
    )
    run(terminal, "mcp = MCPClient(server=server)")
    run(terminal, "m = ScriptedClient([call('count_to', n=2), 'Done.'])")
    terminal.expect(PROMPT)
    terminal.expect(PROMPT)
    run(terminal, "%%agent --model m --tools mcp --approve auto", "Count.", "", "")
    terminal.expect(PROMPT)
    printed = terminal.before
    assert "… 1/2\r\n" in printed and "… 2/2 · step 2" in printed
    assert '"progress"' not in printed
