"""A stop signal that reaches a synchronous tool running on a worker thread.

Cancelling the task that awaits ``asyncio.to_thread(fn)`` cannot stop ``fn``: the thread
runs on. :func:`run_in_thread` is ``to_thread`` plus a :class:`threading.Event` that is set
when the awaiting task is cancelled; the thread sees it through :func:`current_stop` (the
event travels in the context ``to_thread`` copies). Tools that start processes
(``run_command``, ``execute_python``) watch it and kill what they started.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

_current: ContextVar[threading.Event | None] = ContextVar("aimu_tool_stop", default=None)


class CallStopped(Exception):
    """Raised in a worker thread whose call was cancelled, once what it started is stopped."""


def current_stop() -> threading.Event | None:
    """The stop event of the call running in this context, or ``None`` outside one."""
    return _current.get()


async def run_in_thread(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``await asyncio.to_thread(fn, ...)``, setting the call's stop event on cancellation."""
    stop = threading.Event()
    token = _current.set(stop)
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except asyncio.CancelledError:
        stop.set()
        raise
    finally:
        _current.reset(token)
