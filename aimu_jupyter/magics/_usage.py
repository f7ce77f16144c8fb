"""``%agent_usage``: tokens, cost, model calls, tool calls and time per conversation.

Every ``%%agent`` run reports to the session's :class:`UsageLog` through an event sink
bound to its conversation and the price of its model; the log adds up each finished run.
Cost is shown in US dollars where the model's price is known (:data:`aimu.prices`), else
"n/a": tokens only, never a made-up number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aimu.agents.events import Event
from aimu.models.prices import Price, format_money

COLUMNS = (
    "conversation",
    "runs",
    "model calls",
    "tool calls",
    "input tokens",
    "output tokens",
    "cost",
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
    #: US dollars; ``None`` once a run of a model without a known price is counted.
    cost: float | None = 0.0

    def row(self, name: str) -> tuple[str, ...]:
        counts = (self.runs, self.model_calls, self.tool_calls, self.input_tokens,
                  self.output_tokens)  # fmt: skip
        cost = "n/a" if self.cost is None else format_money(self.cost)
        return (name, *(f"{n:,}" for n in counts), cost, f"{self.seconds:.1f} s")


class UsageLog:
    """What the notebook's runs used, per conversation."""

    def __init__(self) -> None:
        self.conversations: dict[str, Totals] = {}

    def sink(self, conversation: str, price: Price | None = None) -> Callable[[Event], None]:
        """The event sink for one run of ``conversation`` on a model of ``price``."""

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
            if totals.cost is not None:
                usage = {"input_tokens": event.input_tokens, "output_tokens": event.output_tokens}
                totals.cost = None if price is None else totals.cost + price.cost(usage)

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
