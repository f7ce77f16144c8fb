"""Running an ``%%agent`` cell from inside another cell magic (``%%time``, ``%%capture``).

Those magics run their body synchronously, with the kernel's event loop blocked beneath
them, so the run cannot be awaited on that loop. It runs to completion on a loop of its own
in a worker thread, in the cell's context (its output lands in this cell, and ``%%capture``
sees it). An interrupt raises ``KeyboardInterrupt`` in the waiting main thread, which
cancels the run on its loop; the run's own ``finally`` blocks then clean up as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from aimu._sync import POLL
from aimu_jupyter.run._wake import sigint_raises


def run_to_completion(make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run the coroutine ``make()`` on a new loop in a worker thread and return its value."""
    state: dict[str, Any] = {}
    started = threading.Event()
    finished = threading.Event()

    async def main() -> Any:
        state["task"] = asyncio.current_task()
        state["loop"] = asyncio.get_running_loop()
        started.set()
        return await make()

    def work() -> None:
        try:
            state["result"] = asyncio.run(main())
        except BaseException as exc:  # handed to the waiting thread
            state["error"] = exc
        finally:
            started.set()
            finished.set()

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(work,), name="aimu-nested-run")
    thread.start()
    with sigint_raises():
        try:  # an Event, not join(): an interrupted join() can return early on 3.11
            while not finished.wait(POLL):
                pass
        except KeyboardInterrupt:
            started.wait()
            if "loop" in state:
                with contextlib.suppress(RuntimeError):  # the loop may have just ended
                    state["loop"].call_soon_threadsafe(state["task"].cancel)
            finished.wait()
    thread.join()
    if "error" in state:
        raise state["error"]
    return state.get("result")
