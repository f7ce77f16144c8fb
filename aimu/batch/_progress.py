"""Progress of a batch: counts a display reads, and the displays themselves.

The library draws a text bar (tqdm) in terminals. The notebook layer registers a widget bar
with :func:`set_default_progress` when it loads, so the library never imports a notebook
package.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class BatchStats:
    """Counts so far. ``done`` includes failed items and items resumed from a checkpoint."""

    total: int
    done: int = 0
    failed: int = 0
    resumed: int = 0
    tokens: int = 0
    waiting_for_rate_limit: bool = False
    started: float = field(default_factory=time.monotonic)
    #: Money spent so far in US dollars (resumed items included), ``None`` without a price.
    cost: float | None = None
    #: Checkpoint records another configuration wrote, ignored (their items run again).
    ignored: int = 0
    #: A batch backend's current round: its number, and the provider's own status line.
    round: int = 0
    provider_status: str = ""
    #: Why no new item starts any more (``"the cost limit"``...), else ``None``.
    stopped: str | None = None
    _ran_cost: float = 0.0

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace of the items run so far, or ``None`` before the first."""
        ran = self.done - self.resumed
        if ran <= 0:
            return None
        return self.elapsed / ran * (self.total - self.done)

    @property
    def projected_cost(self) -> float | None:
        """The whole batch's cost at the pace of the items run so far (``None`` before)."""
        ran = self.done - self.resumed
        if self.cost is None or ran <= 0:
            return None
        return self.cost + self._ran_cost / ran * (self.total - self.done)

    def add(self, usage: dict[str, int], cost: float | None, *, resumed: bool = False) -> None:
        """Count one finished item's tokens and cost."""
        self.tokens += sum(usage.values())
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost
            if not resumed:
                self._ran_cost += cost

    def summary(self) -> str:
        from aimu.models.prices import format_money

        parts = [f"{self.done}/{self.total} done", f"{self.failed} failed"]
        if self.resumed:
            parts.append(f"{self.resumed} from checkpoint")
        if self.ignored:
            parts.append(f"{self.ignored} checkpoint records of another configuration ignored")
        parts.append(f"{self.tokens:,} tokens")
        if self.cost is not None:
            spent = f"{format_money(self.cost)} so far"
            projected = self.projected_cost
            if projected is not None and self.done < self.total and self.stopped is None:
                spent += f" (~{format_money(projected)} in all)"
            parts.append(spent)
        if self.round:
            parts.append(f"round {self.round}: {self.provider_status}".rstrip(": "))
        parts.append(f"{format_seconds(self.elapsed)} elapsed")
        if self.eta is not None and self.done < self.total:
            parts.append(f"ETA {format_seconds(self.eta)}")
        if self.waiting_for_rate_limit:
            parts.append("rate-limited, slowing down")
        if self.stopped:
            parts.append(f"stopped for {self.stopped}")
        return ", ".join(parts)


class Progress(Protocol):
    """A display of a batch's progress; ``update`` is called after every finished item (and
    after every poll of a provider batch)."""

    def update(self, stats: BatchStats) -> None: ...

    def close(self, stats: BatchStats) -> None: ...


ProgressFactory = Callable[[BatchStats], Progress]


class TextProgress:
    """A tqdm bar on stderr with failed / tokens / ETA beside it."""

    def __init__(self, stats: BatchStats):
        from tqdm import tqdm

        self._bar = tqdm(total=stats.total, initial=stats.done, unit="item", file=sys.stderr)
        self._seen = stats.done

    def update(self, stats: BatchStats) -> None:
        self._bar.update(stats.done - self._seen)
        self._seen = stats.done
        postfix: dict[str, object] = {"failed": stats.failed, "tokens": stats.tokens}
        if stats.cost is not None:
            from aimu.models.prices import format_money

            postfix["cost"] = format_money(stats.cost)
        if stats.round:
            postfix["round"] = f"{stats.round} {stats.provider_status}"
        if stats.stopped:
            postfix["stopped"] = stats.stopped
        if stats.waiting_for_rate_limit:
            postfix["rate_limited"] = "yes"
        self._bar.set_postfix(postfix, refresh=False)

    def close(self, stats: BatchStats) -> None:
        self.update(stats)
        self._bar.close()


class NoProgress:
    def update(self, stats: BatchStats) -> None:
        pass

    def close(self, stats: BatchStats) -> None:
        pass


_default: ProgressFactory | None = None


def set_default_progress(factory: ProgressFactory | None) -> None:
    """Make ``factory(stats)`` the display used when ``progress`` is left at its default."""
    global _default
    _default = factory


def make_progress(progress: bool | ProgressFactory | None, stats: BatchStats) -> Progress:
    """``None``: the registered display, else a text bar on a terminal, else nothing."""
    if progress is False:
        return NoProgress()
    if callable(progress) and progress is not True:
        return progress(stats)
    if _default is not None:
        return _default(stats)
    if progress is True or sys.stderr.isatty():
        return TextProgress(stats)
    return NoProgress()


def format_seconds(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
