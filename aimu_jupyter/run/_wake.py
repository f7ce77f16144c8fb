"""Signals and a running agent: an interrupt must act at once, wherever the run waits.

ipykernel turns SIGINT into a cancellation of the cell's task from a Python signal handler.
CPython runs that handler in the main thread, and only when the main thread runs bytecode:
if the signal lands on another thread while the loop sleeps in ``epoll`` (an async tool
awaiting ``asyncio.sleep(20)``, a quiet model stream, a tool in a worker thread), nothing
runs the handler until the loop wakes for some other reason. A wakeup descriptor
(:func:`signal.set_wakeup_fd`) makes the C-level handler write a byte the loop watches: the
loop wakes at once, the handler runs, the cell's task is cancelled.

Where the run blocks the main thread instead (a stdin prompt, a run nested in ``%%time``),
:func:`sigint_raises` makes SIGINT raise ``KeyboardInterrupt`` there.

Terminal IPython has no kernel to do the cancelling: its SIGINT raises ``KeyboardInterrupt``
wherever the main thread is, which during an async tool is the event loop's ``select``. The
exception leaves the loop with the run's task still pending, and the next cell's
``run_until_complete`` resumes it. :func:`sigint_cancels` makes SIGINT cancel the run's task
instead, as the kernel does.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def wake_on_signals() -> Iterator[None]:
    """While the block runs, a signal wakes the running event loop.

    Does nothing off the main thread (signals are not handled there) or when a wakeup
    descriptor is already set (whoever set it wakes the loop, e.g. asyncio's own handlers).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    if previous != -1:
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
        yield
        return
    loop.add_reader(reader.fileno(), _drain, reader)
    try:
        yield
    finally:
        signal.set_wakeup_fd(-1)
        loop.remove_reader(reader.fileno())
        reader.close()
        writer.close()


def _drain(reader: socket.socket) -> None:
    with contextlib.suppress(BlockingIOError, InterruptedError):
        while reader.recv(512):
            pass


@contextlib.contextmanager
def sigint_raises() -> Iterator[None]:
    """While the block runs in the main thread, SIGINT raises ``KeyboardInterrupt`` (the
    kernel's own handler only schedules a cancellation, which a blocked loop never runs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def sigint_cancels() -> Iterator[None]:
    """While the block runs in the main thread, SIGINT cancels the current task (a second
    SIGINT before it ends raises ``KeyboardInterrupt``, as :func:`asyncio.run` does)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    pressed = 0

    def cancel(signum: int, frame: Any) -> None:
        nonlocal pressed
        pressed += 1
        if pressed > 1 or task is None or task.done():
            raise KeyboardInterrupt
        loop.call_soon_threadsafe(task.cancel)

    previous = signal.signal(signal.SIGINT, cancel)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
