"""A progress display for tests: it keeps what each update showed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aimu.batch import BatchStats


def recorder(
    seen: list[Any], shown: Callable[[BatchStats], Any] = BatchStats.summary
) -> Callable[[BatchStats], Any]:
    """A ``progress=`` factory appending ``shown(stats)`` when it opens, updates and closes."""

    class Recorder:
        def __init__(self, stats: BatchStats):
            seen.append(shown(stats))

        def update(self, stats: BatchStats) -> None:
            seen.append(shown(stats))

        close = update

    return Recorder
