"""The subprocess supervisor behind ``execute_python`` and ``run_command`` (POSIX).

Each program runs under :mod:`._reaper`, a small supervisor process that is a child
subreaper: when the program exits, its time runs out, or the call is stopped, the reaper
kills every descendant, including those that left the process group or the session
(``setsid``, ``set -m``, a double fork), and this side waits until it has. Output is read as
it arrives and kept to a bounded head and tail, so a flood costs neither memory nor the
model's context. The environment is an allowlist, so API keys in this process's
environment never reach a child; while children run this process is also non-dumpable, so
they cannot read its initial environment through ``/proc/<pid>/environ`` either.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from aimu.tools.builtin._capture import HEAD, TAIL, HeadTail, join
from aimu.tools.stopping import current_stop

RESULT_LIMIT = 1 << 20
_CHUNK = 1 << 16
_DRAIN_GRACE = 0.5
_STOP_GRACE = 3.0
_POLL = 0.05
_REAPER = (sys.executable, "-I", "-S", str(Path(__file__).with_name("_reaper.py")))
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4


@dataclass(frozen=True)
class Finished:
    """How a supervised child ended and what it wrote."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    result: bytes = b""
    cancelled: bool = False


def run(
    argv: list[str],
    *,
    env: dict,
    timeout: float,
    cwd: str | None = None,
    stdin: bytes | None = None,
    result_channel: bool = False,
) -> Finished:
    """Run ``argv`` under the reaper until it ends, ``timeout`` seconds pass, or the call is
    stopped (:func:`aimu.tools.stopping.current_stop`); then nothing it started is left.

    ``stdin`` is written to the child's standard input, which is otherwise ``/dev/null``.
    With ``result_channel`` a pipe's write end is passed to the child, its descriptor number
    appended to ``argv``; what the child writes there comes back as ``result``. Raises
    ``OSError`` when the program cannot be started.
    """
    argv = [_program(argv[0], env, cwd), *argv[1:]]
    pass_fds: tuple[int, ...] = ()
    result_read = None
    if result_channel:
        result_read, result_write = os.pipe()
        pass_fds = (result_write,)
        argv = [*argv, str(result_write)]
    try:
        with _undumpable():
            proc = subprocess.Popen(
                [*_REAPER, str(os.getpid()), *argv],
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
                pass_fds=pass_fds,
            )
            for fd in pass_fds:
                os.close(fd)
            pass_fds = ()
            try:
                return _supervise(proc, timeout, stdin, result_read, current_stop())
            finally:
                if proc.returncode is None:
                    _stop(proc)
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream is not None and not stream.closed:
                        stream.close()
    finally:
        for fd in (*pass_fds, result_read):
            if fd is not None:
                os.close(fd)


def _program(name: str, env: Mapping[str, str], cwd: str | None) -> str:
    """``name`` as a path (looked up on the child's ``PATH`` when it has no slash, taken
    from ``cwd`` when relative), or the ``OSError`` an exec of it would raise, before the
    reaper starts."""
    if os.sep in name:
        path: str | None = os.path.join(cwd or "", name)
    else:
        path = shutil.which(name, path=env.get("PATH", os.defpath))
    if path is None or not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    if not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
    return path


def _supervise(
    proc: subprocess.Popen,
    timeout: float,
    stdin: bytes | None,
    result_fd: int | None,
    stop: threading.Event | None,
) -> Finished:
    out: HeadTail[bytes] = HeadTail(b"", HEAD, TAIL)
    err: HeadTail[bytes] = HeadTail(b"", HEAD, TAIL)
    result: HeadTail[bytes] = HeadTail(b"", RESULT_LIMIT, 0)
    assert proc.stdout is not None and proc.stderr is not None
    exit_fd = _exit_fd(proc.pid)
    timed_out = cancelled = stopping = exited = False
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout.fileno(), selectors.EVENT_READ, out)
        sel.register(proc.stderr.fileno(), selectors.EVENT_READ, err)
        if result_fd is not None:
            sel.register(result_fd, selectors.EVENT_READ, result)
        if exit_fd is not None:
            sel.register(exit_fd, selectors.EVENT_READ, "exit")
        pending = memoryview(stdin or b"")
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
        try:
            while not exited or _reading(sel):
                now = time.monotonic()
                if stop is not None and stop.is_set() and not stopping:
                    cancelled = stopping = True
                    proc.send_signal(signal.SIGTERM)
                    deadline = now + _STOP_GRACE
                if now >= deadline:
                    if exited:
                        break
                    if stopping:
                        if proc.poll() is None:
                            _kill_group(proc)
                        break
                    timed_out = stopping = True
                    proc.send_signal(signal.SIGTERM)
                    deadline = now + _STOP_GRACE
                    continue
                wait = deadline - now
                if exit_fd is None or stop is not None:
                    wait = min(wait, _POLL)
                for key, _ in sel.select(wait):
                    if key.data == "exit":
                        sel.unregister(exit_fd)
                    elif key.data == "stdin":
                        pending = _feed(sel, proc.stdin, pending)
                    elif chunk := os.read(key.fd, _CHUNK):
                        key.data.add(chunk)
                    else:
                        sel.unregister(key.fd)
                if not exited and _has_exited(proc, sel, exit_fd):
                    exited = True
                    deadline = min(deadline, time.monotonic() + _DRAIN_GRACE)
        finally:
            if exit_fd is not None:
                os.close(exit_fd)
    return Finished(
        returncode=proc.wait(),
        stdout=_text(out),
        stderr=_text(err),
        timed_out=timed_out,
        result=result.parts()[0],
        cancelled=cancelled,
    )


def _reading(sel: selectors.BaseSelector) -> bool:
    return any(key.data not in ("exit", "stdin") for key in sel.get_map().values())


def _stop(proc: subprocess.Popen) -> None:
    """Ask the reaper to kill everything and exit; force it after a grace period."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(_STOP_GRACE)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait()


def _has_exited(proc: subprocess.Popen, sel: selectors.BaseSelector, exit_fd: int | None) -> bool:
    if exit_fd is not None:
        return exit_fd not in sel.get_map()
    return proc.poll() is not None


def _feed(sel: selectors.BaseSelector, stdin: IO[bytes], pending: memoryview) -> memoryview:
    try:
        pending = pending[os.write(stdin.fileno(), pending[:_CHUNK]) :]
    except BrokenPipeError:
        pending = pending[:0]
    if not pending:
        sel.unregister(stdin.fileno())
        stdin.close()
    return pending


def _exit_fd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux), without reaping it:
    the group is killed while its leader's id cannot yet be reused."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class _Dumpable:
    """This process's dumpable flag, cleared while any supervised child runs (Linux).

    A non-dumpable process's ``/proc/<pid>/environ`` and memory are unreadable to other
    processes of the same user that lack ``CAP_SYS_PTRACE`` (the reaper drops it, and the
    two other capabilities that allow it, for a root child), so a child cannot lift API
    keys from this process's initial environment.
    The flag is restored when the last child ends: a debugger or profiler can attach again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._before = 0
        try:
            self._prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            self._prctl = None

    @contextlib.contextmanager
    def cleared(self) -> Iterator[None]:
        self._enter()
        try:
            yield
        finally:
            self._exit()

    def _enter(self) -> None:
        with self._lock:
            if self._users == 0 and self._prctl is not None:
                self._before = max(self._prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0), 0)
                if self._before:
                    self._prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
            self._users += 1

    def _exit(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._prctl is not None and self._before:
                self._prctl(_PR_SET_DUMPABLE, self._before, 0, 0, 0)


_undumpable = _Dumpable().cleared


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _text(buffer: HeadTail[bytes]) -> str:
    head, tail = buffer.parts()
    return join(
        head.decode("utf-8", "replace"), tail.decode("utf-8", "replace"), buffer.dropped, "bytes"
    )
