"""Nothing a supervised child starts outlives the call, and it cannot read this process's keys.

Real subprocesses; the process table is read from /proc (Linux).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from aimu.tools.builtin import execute_python, run_command
from aimu.tools.stopping import run_in_thread

ESCAPE = "import random\nos = random._os\n"
_FORK_THEN = (
    "pid = os.fork()\nif pid == 0:\n    {leave}\n    os.execv('/bin/sleep', ['sleep', '1000'])\n"
    "print(pid)"
)
LEAVE_THE_SESSION = "setsid sh -c 'echo $$; exec sleep 1000' &"

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc (Linux)")


def _pids(out: str) -> list[int]:
    return [int(word) for word in out.split("stdout:\n", 1)[-1].split() if word.isdigit()]


@pytest.mark.parametrize(
    "command",
    [
        "bash -c 'set -m; sleep 1000 & echo $!'",
        LEAVE_THE_SESSION + " sleep 0.2",
        "setsid -f sh -c 'echo $$; exec sleep 1000'; sleep 0.2",
        "( ( setsid sh -c 'echo $$; exec sleep 1000' & ) & ); sleep 0.2",
    ],
    ids=["set-m-job", "setsid", "setsid-fork", "double-fork-then-setsid"],
)
def test_run_command_leaves_nothing_behind_that_left_the_group(command, process_dies):
    out = run_command(command)
    assert out.startswith("exit code: 0"), out
    (escaped,) = _pids(out)
    assert process_dies(escaped, within=5)


@pytest.mark.parametrize(
    "code",
    [
        _FORK_THEN.format(leave="os.setsid()"),
        "print(os.posix_spawn('/bin/sleep', ['sleep', '1000'], {}, setpgroup=0))",
        _FORK_THEN.format(leave="os.setpgid(0, 0)"),
    ],
    ids=["fork-setsid", "spawn-own-group", "fork-setpgid"],
)
def test_execute_python_leaves_nothing_behind_that_left_the_group(code, process_dies):
    out = execute_python(ESCAPE + code)
    (escaped,) = [int(word) for word in out.split() if word.isdigit()]
    assert process_dies(escaped, within=5)


def test_a_timeout_kills_what_left_the_session(process_dies):
    out = run_command(LEAVE_THE_SESSION + " sleep 1000", timeout=1)
    assert out.startswith("Timed out after 1 s")
    (escaped,) = _pids(out)
    assert process_dies(escaped, within=5)


def _wait_for_pid(path) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.strip().isdigit():
            return int(text)
        time.sleep(0.05)
    raise AssertionError("the command never started")


def test_cancelling_a_threaded_call_kills_the_whole_tree(tmp_path, process_dies):
    marker = tmp_path / "pid"
    command = f"setsid sh -c 'echo $$ > {marker}; exec sleep 1000' & sleep 1000"

    async def scenario() -> float:
        task = asyncio.create_task(run_in_thread(run_command, command, timeout=120))
        await asyncio.to_thread(_wait_for_pid, marker)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic()

    cancelled_at = asyncio.run(scenario())  # returns once the worker thread has finished
    assert time.monotonic() - cancelled_at < 10, "the call ran on after its cancellation"
    assert process_dies(int(marker.read_text()), within=5)


def test_an_interrupt_in_the_calling_thread_kills_the_whole_tree(
    tmp_path, process_dies, sigint_handled
):
    marker = tmp_path / "pid"
    command = f"setsid sh -c 'echo $$ > {marker}; exec sleep 1000' & sleep 1000"
    assert threading.current_thread() is threading.main_thread()

    def interrupt() -> None:
        _wait_for_pid(marker)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_command(command, timeout=600)
    assert process_dies(int(marker.read_text()), within=5)


_CALLER = """
import ctypes, os, subprocess, sys
from aimu.tools.builtin import execute_python, run_command
me = os.getpid()
plain = subprocess.run(["cat", f"/proc/{me}/environ"], capture_output=True).stdout
print("CONTROL", os.environ["OPENAI_API_KEY"].encode() in plain)
print(run_command(f"cat /proc/{me}/environ; echo; cat /proc/$PPID/environ"))
print(execute_python(
    "import random\\nos = random._os\\n"
    f"for pid in ({me}, os.getppid()):\\n"
    "    try:\\n"
    "        fd = os.open(f'/proc/{pid}/environ', os.O_RDONLY)\\n"
    "        print(os.read(fd, 1 << 20))\\n"
    "    except OSError as exc:\\n"
    "        print('refused', exc.errno)\\n"
))
print("DUMPABLE", ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))
"""


def test_children_cannot_read_this_processs_initial_environment():
    secret = "sk-initial-env-secret-7781"
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CALLER)],
        env={**os.environ, "OPENAI_API_KEY": secret, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    out = child.stdout
    assert "CONTROL True" in out, "a plain child could not read it: the test proves nothing"
    tool_output = out.split("CONTROL True", 1)[1].rsplit("DUMPABLE", 1)[0]
    assert secret not in tool_output
    assert tool_output.count("exit code:") == 1 and "/environ" in tool_output
    assert "DUMPABLE 1" in out, "the caller is dumpable again once its children are gone"


def test_when_the_calling_process_dies_its_commands_die_too(tmp_path, process_dies):
    marker = tmp_path / "pid"
    command = f"setsid sh -c 'echo $$ > {marker}; exec sleep 1000' & sleep 1000"
    caller = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from aimu.tools.builtin import run_command\nrun_command({command!r}, timeout=600)",
        ],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        escaped = _wait_for_pid(marker)
        caller.kill()
    finally:
        caller.wait()
    assert process_dies(escaped, within=5)


def test_cancelling_an_agent_run_kills_a_threaded_commands_tree(tmp_path, process_dies):
    import aimu
    from aimu.models.providers.scripted import ScriptedClient, call

    marker = tmp_path / "pid"
    command = f"setsid sh -c 'echo $$ > {marker}; exec sleep 1000' & sleep 1000"
    calls = [call("run_command", command=command), call("run_command", command="true")]
    model = ScriptedClient([{"text": "", "tool_calls": calls}, "done"])
    agent = aimu.aio.Agent(model, tools=[run_command], concurrent_tool_calls=True)

    async def scenario() -> float:
        task = asyncio.create_task(agent.run("run it"))
        await asyncio.to_thread(_wait_for_pid, marker)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic()

    cancelled_at = asyncio.run(scenario())
    assert time.monotonic() - cancelled_at < 5, "the command ran on after the run was cancelled"
    assert process_dies(int(marker.read_text()), within=5)
    assert agent.messages[-1]["role"] == "assistant"
