"""Drive an async iterator from synchronous code, interrupt-safe.

With no event loop running in this thread, the iterator runs here on an
:class:`asyncio.Runner`, whose Ctrl-C handling cancels the running step so the iterator's
``finally`` blocks clean up before ``KeyboardInterrupt`` is raised. Where a loop is already
running (a Jupyter cell calling sync code), it runs on a worker thread with its own loop.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


def iterate(make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """Yield the items of the async iterator ``make()`` returns."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _iterate_here(make)
    return _iterate_in_thread(make)


def _iterate_here(make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    with asyncio.Runner() as runner:
        iterator = make()
        try:
            while True:
                try:
                    item = runner.run(iterator.__anext__())
                except StopAsyncIteration:
                    return
                yield item
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                runner.run(aclose())


def _iterate_in_thread(make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    items: queue.Queue = queue.Queue()
    state: dict = {}
    started = threading.Event()

    async def pump() -> None:
        state["task"] = asyncio.current_task()
        state["loop"] = asyncio.get_running_loop()
        started.set()
        try:
            async for item in make():
                items.put((True, item))
        except BaseException as exc:  # handed to the consuming thread
            items.put((False, exc))
        finally:
            items.put((True, _DONE))

    thread = threading.Thread(target=asyncio.run, args=(pump(),), name="aimu-sync", daemon=True)
    thread.start()
    started.wait()
    try:
        while True:
            try:
                ok, item = items.get(timeout=0.1)
            except queue.Empty:
                continue
            if item is _DONE:
                return
            if not ok:
                if isinstance(item, asyncio.CancelledError):
                    raise KeyboardInterrupt
                raise item
            yield item
    finally:
        if thread.is_alive():
            state["loop"].call_soon_threadsafe(state["task"].cancel)
            thread.join()
