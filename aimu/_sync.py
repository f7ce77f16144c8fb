"""Drive async code from synchronous code on long-lived event loops, interrupt-safe.

Every thread that calls in gets one event loop, kept for the thread's life, so what lives on
a loop — the providers' SDK clients, their TLS set-up and keep-alive connections — serves the
next run too instead of being rebuilt. With no loop running in the calling thread the work
runs right there on an :class:`asyncio.Runner`, whose Ctrl-C handling cancels the running step
so ``finally`` blocks clean up before ``KeyboardInterrupt`` is raised. Where a loop is already
running (a Jupyter cell calling sync code), it runs on a long-lived worker thread owned by the
calling thread.

A loop is closed — the resources registered with :func:`at_close` first — when the thread
that owned it has ended (checked whenever a new loop starts) and at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import queue
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: Seconds a thread waiting on a loop thread sleeps between looks for an interrupt; the one
#: interval of every sync-over-async bridge (this module, the sync MCP client, nested runs).
POLL = 0.1

_DONE = object()
_local = threading.local()
_lock = threading.Lock()
_owned: list[tuple[weakref.ref[threading.Thread], _Home]] = []
_closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[Callable[[], Awaitable]]] = (
    weakref.WeakKeyDictionary()
)


def at_close(loop: asyncio.AbstractEventLoop, close: Callable[[], Awaitable[Any]]) -> None:
    """Await ``close()`` before ``loop`` is closed, if it is one of the loops kept here."""
    with _lock:
        _closers.setdefault(loop, []).append(close)


def run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``make()`` returns to its end and return its result."""
    if _running():
        return _worker().run(make)
    try:
        return _runner().run(make(), context=contextvars.copy_context())
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None  # a cancelled run reads as an interrupt, as below


def iterate(make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """Yield the items of the async iterator ``make()`` returns."""
    if _running():
        return _worker().iterate(make)
    return _iterate_here(make)


def _running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _iterate_here(make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    home = _home()
    runner = _runner()
    owner = threading.current_thread()
    context = contextvars.copy_context()
    iterator = context.run(make)
    try:
        while True:
            try:
                item = runner.run(iterator.__anext__(), context=context)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                raise KeyboardInterrupt from None
            yield item
    finally:
        # Dropped unfinished at exit, in another thread or mid-run, it is closed with its loop.
        aclose = getattr(iterator, "aclose", None)
        here = threading.current_thread() is owner and not _running()
        if aclose is not None and home.runner is runner and here:
            runner.run(aclose(), context=context)


class _Home:
    """What one thread owns: its runner, and the worker it uses while a loop runs in it."""

    def __init__(self) -> None:
        self.runner: asyncio.Runner | None = None
        self.worker: _Worker | None = None

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        if self.runner is not None:
            runner, self.runner = self.runner, None
            try:
                runner.run(_release(runner.get_loop()))
            finally:
                runner.close()


def _home() -> _Home:
    home = getattr(_local, "home", None)
    if home is None:
        home = _local.home = _Home()
        with _lock:
            ended = [h for t, h in _owned if (thread := t()) is None or not thread.is_alive()]
            _owned[:] = [(t, h) for t, h in _owned if h not in ended]
            _owned.append((weakref.ref(threading.current_thread()), home))
        if ended:
            _close_homes(ended)
    return home


def _close_homes(homes: list[_Home]) -> None:
    """Close the homes of threads that have ended; from a helper thread if a loop runs here."""
    if not _running():
        for home in homes:
            home.close()
        return
    helper = threading.Thread(target=_close_homes, args=(homes,), name="aimu-sync-close")
    helper.start()
    helper.join()


def _runner() -> asyncio.Runner:
    home = _home()
    if home.runner is None:
        home.runner = asyncio.Runner(loop_factory=asyncio.new_event_loop)
    return home.runner


def _worker() -> _Worker:
    home = _home()
    if home.worker is None:
        home.worker = _Worker()
    return home.worker


async def _release(loop: asyncio.AbstractEventLoop) -> None:
    """Await the closers registered for ``loop`` (errors are ignored: it is going away)."""
    with _lock:
        closers = _closers.pop(loop, [])
    for close in closers:
        with contextlib.suppress(Exception):  # a pool that cannot close cleanly goes anyway
            await close()


class _Worker:
    """A daemon thread running an event loop forever, for callers whose thread has one."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="aimu-sync", daemon=True)
        self.thread.start()

    def run(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        (result,) = self.iterate(lambda: _once(make))
        return result

    def iterate(self, make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
        items: queue.Queue = queue.Queue()
        context = contextvars.copy_context()
        tasks: list[asyncio.Task] = []

        async def pump() -> None:
            try:
                async for item in make():
                    items.put((True, item))
            except BaseException as exc:  # handed to the consuming thread
                items.put((False, exc))

        def start() -> None:
            task = self.loop.create_task(pump(), context=context)
            task.add_done_callback(lambda _: items.put((True, _DONE)))
            tasks.append(task)

        self.loop.call_soon_threadsafe(start)
        finished = False
        try:
            while True:
                try:
                    ok, item = items.get(timeout=POLL)
                except queue.Empty:
                    continue
                if item is _DONE:
                    finished = True
                    return
                if not ok:
                    if isinstance(item, asyncio.CancelledError):
                        raise KeyboardInterrupt
                    raise item
                yield item
        finally:
            if not finished:
                self.loop.call_soon_threadsafe(lambda: tasks[0].cancel())
                while items.get()[1] is not _DONE:
                    pass

    def close(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
        runner = asyncio.Runner(loop_factory=lambda: self.loop)
        try:
            runner.run(_release(self.loop))
        finally:
            runner.close()


async def _once(make: Callable[[], Coroutine[Any, Any, T]]) -> AsyncIterator[T]:
    yield await make()


@atexit.register
def _close_all() -> None:
    """Close every kept loop whose thread is not in the middle of a run."""
    with _lock:
        homes = [h for _, h in _owned]
        _owned.clear()
    for home in homes:
        loop = home.runner.get_loop() if home.runner is not None else None
        if loop is None or not loop.is_running():
            home.close()
