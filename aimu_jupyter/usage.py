"""``%agent_usage``: tokens, model calls, tool calls and time per conversation, from events.

Every ``%%agent`` run reports to the session's :class:`UsageLog` through an event sink
bound to its conversation; the log adds up each finished run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aimu.agents.events import Event

COLUMNS = (
    "conversation",
    "runs",
    "model calls",
    "tool calls",
    "input tokens",
    "output tokens",
    "time",
)


@dataclass
class Totals:
    """One conversation's sums over its finished runs."""

    runs: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0

    def row(self, name: str) -> tuple[str, ...]:
        counts = (self.runs, self.model_calls, self.tool_calls, self.input_tokens,
                  self.output_tokens)  # fmt: skip
        return (name, *(f"{n:,}" for n in counts), f"{self.seconds:.1f} s")


class UsageLog:
    """What the notebook's runs used, per conversation."""

    def __init__(self) -> None:
        self.conversations: dict[str, Totals] = {}

    def sink(self, conversation: str) -> Callable[[Event], None]:
        """The event sink for one run of ``conversation``."""

        def count(event: Event) -> None:
            if event.type != "run_finished":
                return
            totals = self.conversations.setdefault(conversation, Totals())
            totals.runs += 1
            totals.model_calls += event.model_calls
            totals.tool_calls += event.tool_calls
            totals.input_tokens += event.input_tokens
            totals.output_tokens += event.output_tokens
            totals.seconds += event.duration_s

        return count

    def bundle(self) -> dict[str, str]:
        """The table as Markdown and plain text."""
        if not self.conversations:
            text = "No %%agent runs in this notebook yet."
            return {"text/plain": text, "text/markdown": text}
        rows = [totals.row(name) for name, totals in self.conversations.items()]
        widths = [max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
        plain = "\n".join(_aligned(row, widths) for row in [COLUMNS, *rows])
        markdown = "\n".join(
            [f"| {' | '.join(COLUMNS)} |", "|" + "---|" + "---:|" * (len(COLUMNS) - 1)]
            + [f"| {' | '.join(row)} |" for row in rows]
        )
        return {"text/plain": plain, "text/markdown": markdown}


def _aligned(row: tuple[str, ...], widths: list[int]) -> str:
    """The first column left-aligned, the numbers right-aligned."""
    cells = [row[0].ljust(widths[0])]
    cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
    return "  ".join(cells)
