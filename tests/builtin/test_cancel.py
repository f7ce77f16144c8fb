"""A call cancelled while a worker thread runs it stops what it started."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from aimu.tools import cancel
from aimu.tools.builtin import _process


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def cancel_once_started(pid_file, fn, *args):
    task = asyncio.ensure_future(cancel.run_in_thread(fn, *args))
    while not (pid_file.exists() and pid_file.read_text().strip()):
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return int(pid_file.read_text())


def test_cancelling_the_awaiting_task_kills_the_supervised_child(tmp_path):
    pid_file = tmp_path / "pid"
    outcome: dict = {}

    def supervised() -> None:
        try:
            _process.run(
                ["/bin/sh", "-c", f"echo $$ > {pid_file}; exec sleep 30"],
                env=_process.child_env(),
                timeout=60,
            )
        except cancel.CallCancelled as exc:
            outcome["stopped"] = (str(exc), time.monotonic())

    cancelled_at = time.monotonic()
    pid = asyncio.run(cancel_once_started(pid_file, supervised))
    deadline = time.monotonic() + 2
    while "stopped" not in outcome and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "processes killed" in outcome["stopped"][0]
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(pid)
    assert outcome["stopped"][1] - cancelled_at < 2


def test_a_thread_started_without_run_in_thread_sees_no_cancellation():
    assert cancel.current() is None
    assert asyncio.run(cancel.run_in_thread(cancel.current)) is not None
    assert cancel.current() is None


def test_watch_after_cancel_is_readable_at_once():
    cancellation = cancel.Cancellation()
    cancellation.cancel()
    with cancellation.watch() as fd:
        assert os.read(fd, 1) == b"!"
