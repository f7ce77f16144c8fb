"""The subprocess supervisor behind ``execute_python`` and ``run_command`` (POSIX).

Each child starts in a new session, so it leads its own process group. When the child
exits, or its time runs out, the whole group is killed: nothing it started in the background
outlives the call. (A process that starts its own session escapes the group; that is the
line between isolation and containment.) Output is read as it arrives and kept to a bounded
head and tail, so a flood costs neither memory nor the model's context. The environment is
an allowlist, so API keys in this process's environment never reach a child.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import IO

from aimu.tools import cancel
from aimu.tools.builtin._capture import HEAD, TAIL, HeadTail, join

ENV_ALLOWLIST = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
)
RESULT_LIMIT = 1 << 20
_CHUNK = 1 << 16
_DRAIN_GRACE = 0.5
_POLL = 0.05


def child_env(passthrough: Iterable[str] = (), extra: Mapping[str, str] | None = None) -> dict:
    """The environment a child sees: the allowlist, ``LC_*``, the named passthrough
    variables that are set here, then ``extra``."""
    names = set(ENV_ALLOWLIST).union(passthrough)
    env = {k: v for k, v in os.environ.items() if k in names or k.startswith("LC_")}
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Finished:
    """How a supervised child ended and what it wrote."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    result: bytes = b""


def run(
    argv: list[str],
    *,
    env: dict,
    timeout: float,
    cwd: str | None = None,
    stdin: bytes | None = None,
    result_channel: bool = False,
) -> Finished:
    """Run ``argv`` to completion or ``timeout`` seconds, then kill its process group.

    ``stdin`` is written to the child's standard input, which is otherwise ``/dev/null``.
    With ``result_channel`` a pipe's write end is passed to the child, its descriptor number
    appended to ``argv``; what the child writes there comes back as ``result``. Raises
    ``OSError`` when the program cannot be started, and
    :class:`~aimu.tools.cancel.CallCancelled` (after killing the group) when the call this
    thread runs for is cancelled (:func:`aimu.tools.cancel.run_in_thread`).
    """
    pass_fds: tuple[int, ...] = ()
    result_read = None
    if result_channel:
        result_read, result_write = os.pipe()
        pass_fds = (result_write,)
        argv = [*argv, str(result_write)]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except BaseException:
        for fd in (*pass_fds, result_read):
            if fd is not None:
                os.close(fd)
        raise
    for fd in pass_fds:
        os.close(fd)
    cancellation = cancel.current()
    try:
        with cancellation.watch() if cancellation else contextlib.nullcontext() as cancel_fd:
            return _supervise(proc, timeout, stdin, result_read, cancel_fd)
    finally:
        if proc.returncode is None:
            _kill_group(proc)
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()
        if result_read is not None:
            os.close(result_read)


def _supervise(
    proc: subprocess.Popen,
    timeout: float,
    stdin: bytes | None,
    result_fd: int | None,
    cancel_fd: int | None = None,
) -> Finished:
    out: HeadTail[bytes] = HeadTail(b"", HEAD, TAIL)
    err: HeadTail[bytes] = HeadTail(b"", HEAD, TAIL)
    result: HeadTail[bytes] = HeadTail(b"", RESULT_LIMIT, 0)
    assert proc.stdout is not None and proc.stderr is not None
    exit_fd = _exit_fd(proc.pid)
    timed_out = exited = False
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout.fileno(), selectors.EVENT_READ, out)
        sel.register(proc.stderr.fileno(), selectors.EVENT_READ, err)
        if result_fd is not None:
            sel.register(result_fd, selectors.EVENT_READ, result)
        if exit_fd is not None:
            sel.register(exit_fd, selectors.EVENT_READ, "exit")
        if cancel_fd is not None:
            sel.register(cancel_fd, selectors.EVENT_READ, "cancel")
        pending = memoryview(stdin or b"")
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
        try:
            while len(sel.get_map()) > (cancel_fd is not None):
                now = time.monotonic()
                if now >= deadline:
                    if exited:
                        break
                    timed_out = exited = True
                    _kill_group(proc)
                    deadline = now + _DRAIN_GRACE
                    if exit_fd is not None:
                        sel.unregister(exit_fd)
                    continue
                wait = deadline - now if exit_fd is not None else min(deadline - now, _POLL)
                for key, _ in sel.select(wait):
                    if key.data == "cancel":
                        raise cancel.CallCancelled("the call was cancelled; its processes killed")
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
                    _kill_group(proc)
                    deadline = min(deadline, time.monotonic() + _DRAIN_GRACE)
        finally:
            if exit_fd is not None:
                os.close(exit_fd)
    if not exited:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
        _kill_group(proc)
    return Finished(
        returncode=proc.wait(),
        stdout=_text(out),
        stderr=_text(err),
        timed_out=timed_out,
        result=result.parts()[0],
    )


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


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _text(buffer: HeadTail[bytes]) -> str:
    head, tail = buffer.parts()
    return join(
        head.decode("utf-8", "replace"), tail.decode("utf-8", "replace"), buffer.dropped, "bytes"
    )
