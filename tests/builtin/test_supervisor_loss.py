"""A command that kills or stops its own supervisor still leaves nothing the caller can find,
and the result says only what was verified.

Real subprocesses; the process table is read from /proc (Linux).
"""

from __future__ import annotations

import os
import time

import pytest

from aimu.tools.builtin import execute_python, run_command

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc (Linux)")

KILLED_CLAIM = "everything it started were killed"


def _pids(out: str) -> list[int]:
    return [int(word) for word in out.split("stdout:\n", 1)[-1].split() if word.isdigit()]


def test_killing_the_supervisor_first_leaves_no_descendant_and_says_so(process_dies):
    started = time.monotonic()
    out = run_command("echo $$; kill -9 $PPID; exec sleep 1000")
    assert time.monotonic() - started < 15, "waited for the timeout instead of noticing"
    (program,) = _pids(out)
    assert process_dies(program, within=5)
    assert out.startswith("The command's supervisor was killed (SIGKILL)"), out
    assert "1 process of the command was still running and was killed" in out
    assert "exit code:" not in out and KILLED_CLAIM not in out


def test_what_left_the_session_before_the_supervisor_died_is_found_by_the_runs_mark(
    process_dies,
):
    out = run_command(
        "setsid sh -c 'echo $$; exec sleep 1000' & sleep 0.3; echo $$; kill -9 $PPID; "
        "exec sleep 1000"
    )
    escaped, program = _pids(out)
    assert process_dies(escaped, within=5) and process_dies(program, within=5)
    assert "2 processes of the command were still running and were killed" in out


def test_stopping_the_supervisor_ends_the_call_without_claiming_more_than_it_saw(process_dies):
    started = time.monotonic()
    out = run_command("echo $$; kill -STOP $PPID; exec sleep 1000", timeout=60)
    assert time.monotonic() - started < 15, "waited for the timeout instead of noticing"
    (program,) = _pids(out)
    assert process_dies(program, within=5)
    assert out.startswith("The command stopped its supervisor (SIGSTOP)"), out
    assert KILLED_CLAIM not in out


def test_a_command_that_finished_after_stopping_its_supervisor_does_not_wait_for_the_timeout():
    started = time.monotonic()
    out = run_command("kill -STOP $PPID; echo finished", timeout=60)
    assert time.monotonic() - started < 15
    assert "finished" in out and "stopped its supervisor" in out


def test_python_code_that_kills_its_supervisor_leaves_nothing_behind(process_dies):
    code = (
        "import random\nos = random._os\n"
        "print(os.getpid(), flush=True)\n"
        "os.kill(os.getppid(), 9)\n"
        "os.execv('/bin/sleep', ['sleep', '1000'])\n"
    )
    out = execute_python(code)
    (program,) = [int(word) for word in out.split() if word.isdigit() and int(word) > 1]
    assert process_dies(program, within=5)
    assert "supervisor was killed (SIGKILL)" in out and KILLED_CLAIM not in out
