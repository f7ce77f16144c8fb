"""Ending what a supervised program left running when its reaper could not (Linux ``/proc``).

The program can signal its own supervisor: killed (``kill -9 $PPID``) the reaper reaps
nothing, and what the program started is re-parented to init, out of reach of a subreaper.
Then this side looks for those processes itself: every process of the program's session or
process group, and every process whose environment carries the run's mark (a random value
in :data:`MARK_NAME` that only that run's processes inherit, also those that left the
session). Each is opened as a pidfd, checked again, killed through the pidfd (so a reused
pid is never hit), and its death awaited. What it reports is what it saw: a process that
left the session and cleared its environment cannot be found.
"""

from __future__ import annotations

import os
import secrets
import select
import signal
import time
from dataclasses import dataclass

MARK_NAME = "AIMU_RUN_MARK"
_ROUNDS = 5
_DEATH_WAIT = 2.0


def new_mark() -> str:
    """A fresh mark for one run."""
    return secrets.token_hex(16)


@dataclass(frozen=True)
class Swept:
    """Processes of a run found still running after its reaper: ``killed`` were killed and
    seen to die; ``surviving`` were still alive when the wait ended."""

    killed: int = 0
    surviving: int = 0


def sweep(program: int | None, mark: str) -> Swept:
    """Kill every process of ``program``'s session or group, or marked with ``mark``, and
    wait for each to die. Repeats while new ones turn up (one may fork as it is found)."""
    pending: dict[int, int | None] = {}
    for _ in range(_ROUNDS):
        found = [pid for pid in _belonging(program, mark) if pid not in pending]
        if not found:
            break
        for pid in found:
            sent, fd = _kill(pid, program, mark)
            if sent:
                pending[pid] = fd
    dead = _wait_for_deaths(pending)
    return Swept(killed=dead, surviving=len(pending) - dead)


def _belonging(program: int | None, mark: str) -> list[int]:
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [
        int(name)
        for name in names
        if name.isdigit() and int(name) != me and _belongs(int(name), program, mark)
    ]


def _belongs(pid: int, program: int | None, mark: str) -> bool:
    """Whether ``pid`` is alive and of the run: in the program's session or group, or marked."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return False
    if fields[0] in (b"Z", b"X"):
        return False
    if program and program in (int(fields[2]), int(fields[3])):
        return True
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read()
    except OSError:
        return False
    return f"{MARK_NAME}={mark}".encode() in environ.split(b"\0")


def _kill(pid: int, program: int | None, mark: str) -> tuple[bool, int | None]:
    """SIGKILL ``pid`` once it is checked to be of the run, through a pidfd where there is
    one: ``(sent, pidfd to wait on)``; ``sent`` is false when it was gone (or not of the
    run) by then."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        if not _belongs(pid, program, mark):
            return False, None
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            return False, None
        return True, None
    if not _belongs(pid, program, mark):
        os.close(fd)
        return False, None
    try:
        signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        os.close(fd)
        return False, None
    return True, fd


def _wait_for_deaths(pending: dict[int, int | None]) -> int:
    """How many of ``pending`` died within :data:`_DEATH_WAIT`; closes their pidfds. One
    without a pidfd counts as dead once ``/proc`` shows it gone or a zombie."""
    deadline = time.monotonic() + _DEATH_WAIT
    waiting = {fd for fd in pending.values() if fd is not None}
    try:
        while waiting and (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(waiting), [], [], left)
            waiting.difference_update(ready)
    finally:
        for fd in pending.values():
            if fd is not None:
                os.close(fd)
    unwatched = [pid for pid, fd in pending.items() if fd is None and _alive(pid)]
    return len(pending) - len(waiting) - len(unwatched)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False
