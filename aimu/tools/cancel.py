"""Stopping what a cancelled call left running in a worker thread.

Cancelling a task stops a coroutine at its next ``await``, but a synchronous tool that the
task runs in a worker thread goes on: its subprocess keeps running, its MCP request stays
open. :func:`run_in_thread` gives the thread a :class:`Cancellation` (a context variable,
which :func:`asyncio.to_thread` copies into the thread) and sets it when the awaiting task
is cancelled; blocking code that watches it (the subprocess supervisor, the MCP client's
wait) stops what it started and raises :class:`CallCancelled`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_current: ContextVar[Cancellation | None] = ContextVar("aimu_cancellation", default=None)


class CallCancelled(Exception):
    """The call running in this worker thread was cancelled; what it started was stopped."""


class Cancellation:
    """Set once, from any thread, when the call a worker thread runs for is cancelled."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._pipes: list[int] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            for fd in self._pipes:
                _poke(fd)

    @contextlib.contextmanager
    def watch(self) -> Iterator[int]:
        """A descriptor that becomes readable once cancelled, for ``select`` loops."""
        read, write = os.pipe()
        with self._lock:
            self._pipes.append(write)
            if self._event.is_set():
                _poke(write)
        try:
            yield read
        finally:
            with self._lock:
                self._pipes.remove(write)
            os.close(read)
            os.close(write)


def current() -> Cancellation | None:
    """The cancellation of the call this thread runs for, if it was started that way."""
    return _current.get()


async def run_in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``await asyncio.to_thread(fn, ...)``, and on cancellation tell the thread to stop."""
    cancellation = Cancellation()
    token = _current.set(cancellation)
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except asyncio.CancelledError:
        cancellation.cancel()
        raise
    finally:
        _current.reset(token)


def _poke(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, b"!")
