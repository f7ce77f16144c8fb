"""Terminal IPython: the run is printed as it happens and approvals are asked on stdin.

Drives a real ``ipython`` process in a pseudo-terminal (pexpect), as a person at a terminal.
"""

from __future__ import annotations

import os
import sys

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
