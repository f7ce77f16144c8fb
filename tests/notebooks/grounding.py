"""Which of the course's offline-model answers are grounded in the tool result they got.

Every ``local``-model cell of the course that offers tools is listed in :data:`CELLS` with how
to read *the tool's value* out of the tool result (a date, a count, an amount, a file name).
An answer is grounded when it states that value. The value is always taken from, or checked
against, the tool result the run recorded, never from what the model wrote.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from course_run import answer_text, executed, tool_cards

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]  # fmt: skip


def _date(result: str) -> list[str]:
    """The ISO date in a date tool's result, and the spellings a sentence may use for it."""
    found = re.search(r"(\d{4})-(\d{2})-(\d{2})", result)
    if not found:
        return []
    month, day = found.group(2), found.group(3)
    name, number = MONTHS[int(month) - 1], str(int(day))
    return [found.group(0), f"{name} {number}", f"{number} {name}", f"{number}st {name}"]


def _constant(*spellings: str) -> Callable[[str], list[str]]:
    """A value the right call's result holds (a call with wrong arguments finds none)."""
    return lambda result: list(spellings) if spellings[0] in result else []


def _names(pattern: str) -> Callable[[str], list[str]]:
    """The names a listing holds (none when the tool answered with an error)."""
    return lambda result: [] if result.startswith("Error") else re.findall(pattern, result)


@dataclass(frozen=True)
class Cell:
    notebook: str
    tag: str
    tool: str
    value: Callable[[str], list[str]]


CELLS = (
    Cell("01_getting_started", "tools", "get_current_date_and_time", _date),
    Cell("01_getting_started", "calculate", "calculate", _constant("112.5")),
    Cell("01_getting_started", "lookup", "read_file", _constant("07:30")),
    Cell("02_your_own_tools", "model-call", "letter_counter", _constant("3")),
    Cell("03_approvals", "model-call", "list_directory", _names(r"[\w.-]+\.txt")),
    Cell("04_streaming_tools", "model-call", "count_primes", _constant("669")),
    Cell("05_notebook_workspace", "model-call", "list_variables", _constant("sales")),
    Cell("06_builtin_tools", "files", "read_file", _constant("25")),
    Cell("06_builtin_tools", "model-call", "get_web_content", _constant("3.80")),
    Cell("07_mcp", "model-call", "check_stock", _constant("30")),
    Cell("08_memory_and_retrieval", "model-call", "retrieve_context", _constant("300")),
    Cell("09_subagents", "model-call", "spawn_subagent", _constant("2496", "2,496")),
)


@dataclass(frozen=True)
class Outcome:
    cell: Cell
    called: bool
    values: list[str]
    answer: str

    @property
    def grounded(self) -> bool:
        return any(value in self.answer for value in self.values)


def outcome(cell: Cell) -> Outcome:
    """What the cell's run did: whether it called the tool, its value, the final answer."""
    record = executed(cell.notebook).record(cell.tag)
    cards = [c for c in tool_cards(record) if c["name"] == cell.tool and c["status"] == "done"]
    values = [v for card in cards for v in cell.value(str(card["result"]))]
    return Outcome(cell, bool(cards), values, answer_text(record).strip())
