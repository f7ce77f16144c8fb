"""The supervisor process between a tool and the program it runs (Linux first, POSIX after).

Run as ``python -I -S _reaper.py PARENT_PID STATUS_FD PROGRAM [ARGS...]`` by
:mod:`._process`. It makes itself a child subreaper, so every descendant that leaves the
process group or the session (``setsid``, ``set -m``, a double fork) is re-parented to it
rather than to init; then it spawns the program in a session of its own and waits. When the
program exits, or the tool asks it to stop (SIGTERM: a timeout, a cancelled call) or the
tool's process dies (its parent-death signal), it kills every descendant it can see in
``/proc`` and reaps them until none is left, then exits the way the program did.

On ``STATUS_FD`` it reports ``started PID`` once the program runs and ``clean`` once every
descendant is reaped. A reaper that exits without saying ``clean`` was killed (the program
can signal its parent), and the tool ends what it can still find itself.

Before starting the program it also narrows what the program can read of the tool's
process: as root it drops ``CAP_SYS_PTRACE``, ``CAP_SYS_ADMIN`` and ``CAP_PERFMON`` from
the bounding set (each alone lets root read a non-dumpable process's ``/proc/<pid>/environ``
and memory; the tool's process makes itself non-dumpable while it supervises), so neither
the program nor anything it runs can regain them. Standard library only, and kept fast to start.
"""

from __future__ import annotations

import _signal as signal  # the C module: ``signal`` would import enum, a slow start
import ctypes
import os
import sys

_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_CHILD_SUBREAPER = 36
# Each of these alone lets root read a non-dumpable process's /proc/<pid>/environ and mem.
_CAP_SYS_PTRACE, _CAP_SYS_ADMIN, _CAP_PERFMON = 19, 21, 38


class _Stop(Exception):
    """The tool asked for the program to be stopped, or the tool's process died."""


def _prctl(option: int, value: int) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def _children_table() -> dict[int, list[int]]:
    table: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in (b"Z", b"X"):
            table.setdefault(int(fields[1]), []).append(int(name))
    return table


def _descendants(root: int) -> list[int]:
    table = _children_table()
    found, stack = [], list(table.get(root, ()))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(table.get(pid, ()))
    return found


def _quietly(send, *args: int) -> bool:
    """Send a signal; ``False`` if the process or group is already gone."""
    try:
        send(*args)
    except OSError:
        return False
    return True


def _kill_everything(program: int) -> None:
    """SIGKILL every live descendant and reap children until there are none.

    Every descendant is a child or has a living ancestor that is one (orphans are
    re-parented here), so with no child left there is nothing to look for in ``/proc``.
    """
    _quietly(os.killpg, program, signal.SIGKILL)
    me = os.getpid()
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0]:
                continue
            for pid in _descendants(me):
                _quietly(os.kill, pid, signal.SIGKILL)
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _exit_like(status: int | None) -> None:
    if status is None or not os.WIFSIGNALED(status):
        os._exit(os.WEXITSTATUS(status) if status is not None else 124)
    number = os.WTERMSIG(status)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass
    try:
        signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
    except (OSError, ValueError):
        pass  # SIGKILL and SIGSTOP cannot be handled; they need no reset
    os.kill(os.getpid(), number)
    os._exit(128 + number)


_STOPPING = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _report(fd: int, line: str) -> bool:
    """Tell the tool's process ``line``; ``False`` if it is no longer listening, which is no
    reason to stop cleaning up."""
    try:
        os.write(fd, f"{line}\n".encode())
    except OSError:
        return False
    return True


def main(parent: int, status_fd: int, argv: list[str]) -> None:
    for number in _STOPPING:
        signal.signal(number, _stop)
    status: int | None = None
    program = 0
    os.set_inheritable(status_fd, False)
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            raise _Stop
        if os.geteuid() == 0:
            for capability in (_CAP_SYS_PTRACE, _CAP_SYS_ADMIN, _CAP_PERFMON):
                _prctl(_PR_CAPBSET_DROP, capability)
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
        program = _spawn(argv)
        if not program:
            _report(status_fd, "clean")
            os._exit(127)
        _report(status_fd, f"started {program}")
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)
        status = os.waitpid(program, 0)[1]
    except _Stop:
        status = None
    for number in _STOPPING:
        signal.signal(number, signal.SIG_IGN)
    if program:
        _kill_everything(program)
    _report(status_fd, "clean")
    _exit_like(status)


def _spawn(argv: list[str]) -> int:
    """Start the program in a session of its own, with default signal handling; ``0`` (having
    said why on stderr) when it cannot be started."""
    defaults = [*_STOPPING, signal.SIGPIPE, signal.SIGXFSZ]
    try:
        return os.posix_spawn(
            argv[0], argv, os.environ, setsid=True, setsigdef=defaults, setsigmask=()
        )
    except OSError as exc:
        os.write(2, f"cannot run {argv[0]}: {exc.strerror or exc}\n".encode())
        return 0


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])
