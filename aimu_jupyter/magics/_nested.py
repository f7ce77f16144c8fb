"""Running an ``%%agent`` cell from inside another cell magic (``%%time``, ``%%capture``).

Those magics run their body synchronously, with the kernel's event loop blocked beneath
them, so the run cannot be awaited on that loop. It runs to completion on the kernel
thread's :class:`~aimu._sync.LoopThread`, in a copy of the cell's context (its output lands
in this cell, and ``%%capture`` sees it). SIGINT raises ``KeyboardInterrupt`` in the waiting
main thread, which cancels the run on its loop; the run's own ``finally`` blocks clean up,
and the cell ends as the run did (``AgentInterrupted``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from aimu._sync import run
from aimu_jupyter.run._wake import sigint_raises


def run_to_completion(make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run the coroutine ``make()`` returns on a loop thread and return its value."""
    with sigint_raises():
        return run(make)
