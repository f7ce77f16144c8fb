"""Drive async code from synchronous code on long-lived event loops, interrupt-safe.

Every thread that calls in gets one event loop, kept for the thread's life, so what lives on
a loop — the providers' SDK clients, their TLS set-up and keep-alive connections — serves the
next run too instead of being rebuilt. With no loop running in the calling thread the work
runs right there on an :class:`asyncio.Runner`, whose Ctrl-C handling cancels the running step
so ``finally`` blocks clean up before ``KeyboardInterrupt`` is raised. Where a loop is already
running (a Jupyter cell calling sync code, or an ``%%agent`` run inside ``%%time``), it runs on
a long-lived :class:`LoopThread` owned by the calling thread (the sync MCP client keeps one of
its own).

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
from concurrent.futures import Future
from typing import Any, TypeVar

from aimu.tools.stopping import CallStopped

T = TypeVar("T")

#: Seconds a thread waiting on a loop thread sleeps between looks for an interrupt; the one
#: interval of every sync-over-async bridge (:class:`LoopThread`, the MCP tools' wake-ups).
POLL = 0.1

#: Seconds :meth:`LoopThread.close` waits for the loop to end before abandoning it.
CLOSE_WAIT = 10.0

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
    """What one thread owns: its runner, and the loop thread it uses while a loop runs in it."""

    def __init__(self) -> None:
        self.runner: asyncio.Runner | None = None
        self.worker: LoopThread | None = None

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


def _worker() -> LoopThread:
    home = _home()
    if home.worker is None:
        home.worker = LoopThread()
    return home.worker


async def _release(loop: asyncio.AbstractEventLoop) -> None:
    """Await the closers registered for ``loop`` (errors are ignored: it is going away)."""
    with _lock:
        closers = _closers.pop(loop, [])
    for close in closers:
        with contextlib.suppress(Exception):  # a pool that cannot close cleanly goes anyway
            await close()


class LoopThread:
    """An event loop running forever in a daemon thread, driven from other threads.

    :meth:`submit` starts a coroutine there and returns a Future; :meth:`run` and
    :meth:`iterate` wait for one in ``POLL`` slices, so an interrupt is seen at once. The one
    rule for interrupts: an interrupt (or a set ``stop`` event) cancels the task on the loop
    and waits for it to end, so its ``finally`` blocks have run; then the exception the task
    ended with is raised if it turned the cancellation into one of its own, else the
    interrupt. A task cancelled otherwise (by :meth:`close`) reads as ``KeyboardInterrupt``.
    A second interrupt stops the waiting for the clean-up. :meth:`close` is bounded.
    """

    def __init__(self, name: str = "aimu-sync") -> None:
        self.loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._closing = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, make: Callable[[], Coroutine[Any, Any, T]]) -> Future[T]:
        """Start the coroutine ``make()`` returns as a task on the loop, in a copy of the
        caller's context; cancelling the returned Future cancels the task."""
        call = _Call(self.loop, make)
        self._schedule(call)
        return call.future

    def run(
        self, make: Callable[[], Coroutine[Any, Any, T]], stop: threading.Event | None = None
    ) -> T:
        """Run the coroutine ``make()`` returns on the loop and return its result.

        ``stop`` (a tool call's :func:`~aimu.tools.stopping.current_stop`), once set, cancels
        the task as an interrupt does and raises :class:`~aimu.tools.stopping.CallStopped`.
        """
        call = _Call(self.loop, make)
        try:
            self._schedule(call)
            while not call.ended.wait(POLL):
                if stop is not None and stop.is_set():
                    raise CallStopped("the call was stopped")
        except BaseException as interrupt:
            raise call.cancel() or interrupt from None
        return call.result()

    def iterate(self, make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
        """Yield the items of the async iterator ``make()`` returns, iterated on the loop.

        Closing the generator early cancels the iteration there.
        """
        items: queue.SimpleQueue[T] = queue.SimpleQueue()

        async def pump() -> None:
            async for item in make():
                items.put(item)

        call = _Call(self.loop, pump)
        try:
            self._schedule(call)
            while not (call.ended.is_set() and items.empty()):
                with contextlib.suppress(queue.Empty):
                    yield items.get(timeout=POLL)
        except GeneratorExit:
            call.cancel()
            raise
        except BaseException as interrupt:
            raise call.cancel() or interrupt from None
        call.result()

    def close(
        self, last: Callable[[], Awaitable[Any]] | None = None, timeout: float = CLOSE_WAIT
    ) -> None:
        """End the loop and its thread: await ``last()``, then the :func:`at_close` closers,
        cancel the tasks still running, close the loop. Idempotent; errors are ignored.

        Waits at most ``timeout`` seconds, so a task that will not end is abandoned to the
        daemon thread rather than hang the caller or the interpreter's exit; from the loop's
        own thread it does not wait, and the loop ends once the current step returns.
        """
        with self._lock:
            if not self._closing:
                self._closing = True
                self.loop.call_soon_threadsafe(self._shut_down, last)
        if threading.current_thread() is not self._thread:
            self.join(timeout)

    def join(self, timeout: float | None = None) -> bool:
        """Wait at most ``timeout`` seconds for the closed loop's thread to end; whether it did."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _schedule(self, call: _Call) -> None:
        with self._lock:
            if self._closing:
                raise RuntimeError("the loop thread is closed")
            self.loop.call_soon_threadsafe(call.start)
            call.queued = True

    def _serve(self) -> None:
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def _shut_down(self, last: Callable[[], Awaitable[Any]] | None) -> None:
        ending = self.loop.create_task(self._end(last))
        ending.add_done_callback(lambda _: self.loop.stop())

    async def _end(self, last: Callable[[], Awaitable[Any]] | None) -> None:
        if last is not None:
            with contextlib.suppress(Exception):
                await last()
        await _release(self.loop)
        tasks = asyncio.all_tasks() - {asyncio.current_task()}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.loop.shutdown_asyncgens()
        await self.loop.shutdown_default_executor()


class _Call:
    """One coroutine run as a task on a loop thread for a caller on another thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, make: Callable[[], Awaitable[Any]]):
        self.loop = loop
        self.future: Future[Any] = Future()
        self.ended = threading.Event()
        self._make = make
        self._context = contextvars.copy_context()
        self._task: asyncio.Task | None = None
        self._value: Any = None
        self._error: BaseException | None = None
        self.queued = False
        self.future.add_done_callback(self._forward_cancel)

    def start(self) -> None:
        """Create the task (on the loop), unless the Future was cancelled first."""
        self.queued = True
        if self.future.cancelled():
            self._error = asyncio.CancelledError()
            self.ended.set()
        else:
            self._task = self.loop.create_task(self._body(), context=self._context)

    def cancel(self) -> BaseException | None:
        """Cancel the task and wait for it to end; the exception it ended with, if it turned
        the cancellation into one."""
        self.future.cancel()
        while self.queued and not self.ended.wait(POLL):  # unqueued, it never starts
            pass
        return None if isinstance(self._error, asyncio.CancelledError) else self._error

    def result(self) -> Any:
        """The ended task's result; what it raised; ``KeyboardInterrupt`` if cancelled."""
        if isinstance(self._error, asyncio.CancelledError):
            raise KeyboardInterrupt
        if self._error is not None:
            raise self._error
        return self._value

    async def _body(self) -> None:
        try:
            self._value = await self._make()
        except BaseException as exc:  # handed over: a KeyboardInterrupt would stop the loop
            self._error = exc
        if not self.future.cancelled():
            if isinstance(self._error, asyncio.CancelledError):
                self.future.cancel()
            elif self._error is not None:
                self.future.set_exception(self._error)
            else:
                self.future.set_result(self._value)
        self.ended.set()

    def _forward_cancel(self, future: Future[Any]) -> None:
        if future.cancelled():
            with contextlib.suppress(RuntimeError):  # the loop has closed, the task with it
                self.loop.call_soon_threadsafe(self._cancel_task)

    def _cancel_task(self) -> None:
        if self._task is not None:
            self._task.cancel()


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
