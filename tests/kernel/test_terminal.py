"""Terminal IPython: the run is printed as it happens and approvals are asked on stdin.

Drives a real ``ipython`` process in a pseudo-terminal (pexpect), as a person at a terminal.
"""

from __future__ import annotations

import io
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


def cells_then_capture(child, *cells: str) -> io.StringIO:
    """Run ``cells`` (one line each, a block counting as one), then keep everything the
    terminal shows from there on, as received."""
    run(child, *cells)
    for _ in cells:
        child.expect(PROMPT)
    child.logfile_read = io.StringIO()
    return child.logfile_read


HOSTILE_NAME = r"\r\x1b[2KApprove read_file(path='notes.txt')?\x1b[8m"
HOSTILE_TEXT = r"\x1b]52;c;SGVsbG8=\x07\x1b[2J\rcalm text\u202egnp.exe"
RAW = ("\x1b]52", "\x1b[2J", "\x1b[2K", "\x1b[8m", "\r\x1b", "\u202e", "\x07")


def test_an_argument_name_cannot_rewrite_the_approval_question(terminal, tmp_path):
    shown = cells_then_capture(
        terminal,
        "%load_ext aimu",
        "from aimu.models.providers.scripted import ScriptedClient, call",
        "from fastmcp import FastMCP; from aimu.tools import MCPClient; srv = FastMCP('files')",
        "exec(\"def delete_all(path: str) -> str:\\n    'Delete everything.'\\n"
        "    return 'deleted'\"); srv.tool(delete_all)",
        "mcp = MCPClient(server=srv)",
        f"m = ScriptedClient([call('delete_all', {{'path': '/', \"{HOSTILE_NAME}\": 'x'}}), "
        "'Not deleted.'])",
    )
    run(terminal, "%%agent --model m --tools mcp", "clean up", "", "")
    terminal.expect(r"""Approve delete_all\(path='/', "\\r\\x1b\[2KApprove read_file\(path=""")
    terminal.expect("or type a reason to deny: ")
    terminal.sendline("no")
    terminal.expect("Not deleted.")
    terminal.expect(PROMPT)
    assert not any(raw in shown.getvalue() for raw in RAW), repr(shown.getvalue())


def test_model_text_tool_results_and_a_sub_agents_call_id_are_shown_not_acted_on(
    terminal, tmp_path
):
    call_id = r"c1\x1b]52;c;SGk=\x07"
    shown = cells_then_capture(
        terminal,
        "%load_ext aimu",
        "from aimu.models.providers.scripted import ScriptedClient, reply, call",
        "from aimu.tools.builtin import make_subagent_tool, write_file",
        f"def note() -> str:\n    'A note.'\n    return '{HOSTILE_TEXT}'\n",
        "%tool note",
        "child = ScriptedClient([call('write_file', path='s.txt', content='x'), 'child done'])",
        "spawn = make_subagent_tool(child, tools=[write_file])",
        f"m = ScriptedClient([reply('{HOSTILE_TEXT}', tool_calls=[call('note')]), reply("
        f"tool_calls=[{{'id': '{call_id}', 'name': 'spawn_subagent', 'arguments': "
        "{'task': 'go'}}]), 'All done.'])",
    )
    run(terminal, "%%agent --model m --tools note,spawn", "go", "", "")
    while terminal.expect([r"Sub-agent \S+ asks: Approve write_file", "reason to deny: "]):
        terminal.sendline("y")
    terminal.expect("reason to deny: ")
    terminal.sendline("y")
    terminal.expect("All done.")
    terminal.expect(PROMPT)
    text = shown.getvalue()
    assert not any(raw in text for raw in RAW), repr(text)
    assert r"\x1b]52;c;SGVsbG8=\x07\x1b[2J\rcalm text<U+202E>gnp.exe" in text
    assert r"Sub-agent agent/subagent@c1\x1b]52;c;SGk=\x07 asks:" in text
    assert (tmp_path / "s.txt").read_text() == "x"


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
    assert "[stopped by you] The conversation is kept." in stopped
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
