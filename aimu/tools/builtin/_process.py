"""The subprocess supervisor behind ``execute_python`` and ``run_command`` (POSIX).

Each program runs under :mod:`._reaper`, a small supervisor process that is a child
subreaper: when the program exits, its time runs out, or the call is stopped, the reaper
kills every descendant, including those that left the process group or the session
(``setsid``, ``set -m``, a double fork), and this side waits until it has. Output is read as
it arrives and kept to a bounded head and tail, so a flood costs neither memory nor the
model's context.

The program can signal its own supervisor (``kill -9 $PPID``, ``kill -STOP $PPID``). The
reaper reports on a status pipe when it has reaped everything; one that dies without saying
so, or is found stopped, no longer vouches for anything, and this side ends what it can
still reach itself (:mod:`._leftovers`), saying in :attr:`Finished.supervision` what it
verified and what it could not. The environment is an allowlist, so API keys in this process's
environment never reach a child; while children run this process is also non-dumpable, so
they cannot read its initial environment through ``/proc/<pid>/environ`` either.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import itertools
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

from aimu.tools._capture import HEAD, TAIL, HeadTail, join
from aimu.tools.builtin import _leftovers
from aimu.tools.stopping import current_stop

RESULT_LIMIT = 1 << 20
_CHUNK = 1 << 16
_DRAIN_GRACE = 0.5
_STOP_GRACE = 3.0
_POLL = 0.05
_WATCH = 0.25  # seconds between looks at whether the reaper was stopped
_REAPER = (sys.executable, "-I", "-S", str(Path(__file__).with_name("_reaper.py")))
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4


@dataclass(frozen=True)
class Finished:
    """How a supervised child ended and what it wrote.

    ``supervision`` is ``""`` when the reaper ended everything the program started (and
    ``returncode`` is the program's); otherwise it says, for the model, what happened to
    the reaper and what was verified after it, and ``returncode`` is not the program's.
    """

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    result: bytes = b""
    cancelled: bool = False
    supervision: str = ""


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
    mark = _leftovers.new_mark()
    env = {**env, _leftovers.MARK_NAME: mark}
    status_read, status_write = os.pipe()
    pass_fds: tuple[int, ...] = (status_write,)
    result_read = None
    if result_channel:
        result_read, result_write = os.pipe()
        pass_fds = (status_write, result_write)
        argv = [*argv, str(result_write)]
    try:
        with _undumpable():
            proc = subprocess.Popen(
                [*_REAPER, str(os.getpid()), str(status_write), *argv],
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
            watch = _Watch(proc)
            try:
                done = _supervise(proc, timeout, stdin, result_read, current_stop(), watch)
            finally:
                if proc.returncode is None:
                    _stop(proc)
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream is not None and not stream.closed:
                        stream.close()
                watch.status = _read_all(status_read)
                if not watch.clean:
                    watch.swept = _leftovers.sweep(watch.program, mark)
            if watch.clean and not watch.stopped:
                return done
            return dataclasses.replace(done, supervision=watch.account(proc.returncode))
    finally:
        for fd in (*pass_fds, result_read, status_read):
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


class _Watch:
    """What this side knows of the reaper: whether it was found stopped, what it reported on
    its status pipe, and, when it did not report ``clean``, what :func:`_leftovers.sweep`
    found after it."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.stopped = False
        self.status = b""
        self.swept = _leftovers.Swept()

    def reaper_stopped(self) -> bool:
        """Whether the reaper is stopped (``SIGSTOP``, or traced); then it reaps nothing."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state in (b"T", b"t")

    @property
    def clean(self) -> bool:
        """The reaper said every descendant it could see is dead and reaped."""
        return b"clean" in self.status.split()

    @property
    def program(self) -> int | None:
        words = self.status.split()
        for word, value in itertools.pairwise(words):
            if word == b"started" and value.isdigit():
                return int(value)
        return None

    def account(self, returncode: int | None) -> str:
        """What happened to the reaper and what was verified after, for the model."""
        stopped = "The command stopped its supervisor (SIGSTOP), so the call was ended. "
        if self.clean:
            return (
                stopped + "The supervisor was resumed and ended everything the command "
                "started. The command's exit code is not known."
            )
        if returncode is not None and returncode < 0:
            died = f"was killed ({signal_name(-returncode)})"
        else:
            died = f"exited (code {returncode})"
        swept = self.swept
        one = swept.killed == 1
        found = (
            f"{swept.killed} process{'' if one else 'es'} of the command "
            f"{'was' if one else 'were'} still running and {'was' if one else 'were'} killed"
        )
        if swept.surviving:
            found += f"; {swept.surviving} could not be killed and may still be running"
        return (
            (stopped if self.stopped else "")
            + f"The command's supervisor {died} before it could end what the command "
            f"started. {found}. A process that left the command's session and cleared its "
            "environment cannot be found and may still be running. The command's exit code "
            "is not known."
        )


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``signal N`` for a number with no name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _read_all(fd: int) -> bytes:
    """What is left in the reaper's status pipe (its writer has exited: no wait)."""
    os.set_blocking(fd, False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    return b"".join(chunks)


def _supervise(
    proc: subprocess.Popen,
    timeout: float,
    stdin: bytes | None,
    result_fd: int | None,
    stop: threading.Event | None,
    watch: _Watch,
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
                    _ask_to_stop(proc)
                    deadline = now + _STOP_GRACE
                if not exited and not watch.stopped and watch.reaper_stopped():
                    watch.stopped = True
                    if not stopping:
                        stopping = True
                        deadline = now + _STOP_GRACE
                    _ask_to_stop(proc)
                if now >= deadline:
                    if exited:
                        break
                    if stopping:
                        if proc.poll() is None:
                            _kill_group(proc)
                        break
                    timed_out = stopping = True
                    _ask_to_stop(proc)
                    deadline = now + _STOP_GRACE
                    continue
                wait = min(deadline - now, _WATCH)
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


def _ask_to_stop(proc: subprocess.Popen) -> None:
    """SIGTERM the reaper, and resume it in case the program stopped it."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGCONT)


def _stop(proc: subprocess.Popen) -> None:
    """Ask the reaper to kill everything and exit; force it after a grace period."""
    _ask_to_stop(proc)
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
