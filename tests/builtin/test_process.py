"""The supervisor shared by execute_python and run_command."""

import os
import sys

import pytest

from aimu._child_env import ENV_ALLOWLIST, child_env
from aimu.tools.builtin import _process


def run(argv, **kwargs):
    return _process.run(argv, env=child_env(), timeout=kwargs.pop("timeout", 10), **kwargs)


def test_a_child_that_ignores_its_input_neither_hangs_nor_raises():
    done = run(["/bin/sh", "-c", "exit 0"], stdin=b"x" * 5_000_000)
    assert done.returncode == 0 and not done.timed_out


def test_large_input_is_delivered_whole():
    done = run(["wc", "-c"], stdin=b"y" * 3_000_000)
    assert done.stdout.strip() == "3000000"


def test_undecodable_output_is_replaced_not_raised():
    done = run(["/bin/sh", "-c", r"printf '\377\376ok'"])
    assert done.stdout.endswith("ok") and "\ufffd" in done.stdout


def test_a_missing_program_raises_oserror_and_leaks_no_descriptors():
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    with pytest.raises(OSError):
        run(["/nonexistent/program"], result_channel=True)
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before


def test_the_result_channel_is_separate_from_stdout():
    code = "import os, sys; print('visible'); os.write(int(sys.argv[1]), b'report')"
    done = run([sys.executable, "-c", code], result_channel=True)
    assert done.stdout == "visible\n"
    assert done.result == b"report"


def test_child_env_is_the_allowlist_plus_passthrough_and_extra(monkeypatch):
    monkeypatch.setenv("LC_TIME", "C")
    monkeypatch.setenv("MY_SECRET_KEY", "hidden")
    monkeypatch.setenv("WANTED", "yes")
    env = child_env(["WANTED", "NOT_SET_ANYWHERE"], extra={"MPLBACKEND": "Agg"})
    assert env["LC_TIME"] == "C" and env["WANTED"] == "yes" and env["MPLBACKEND"] == "Agg"
    assert "MY_SECRET_KEY" not in env and "NOT_SET_ANYWHERE" not in env
    assert set(env) <= set(ENV_ALLOWLIST) | {"LC_TIME", "WANTED", "MPLBACKEND"}


def test_without_pidfd_the_exit_is_noticed_by_polling(monkeypatch, process_dies):
    monkeypatch.setattr(_process, "_exit_fd", lambda pid: None)
    done = run(["/bin/sh", "-c", "sleep 300 & echo $!"])
    assert not done.timed_out and done.returncode == 0
    assert process_dies(int(done.stdout))
    slow = run(["/bin/sh", "-c", "exec >&- 2>&-; sleep 300"], timeout=0.5)
    assert slow.timed_out
