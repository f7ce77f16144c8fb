"""The offline model's answers after a tool call state the tool's value, across the course.

tests/notebooks/grounding.py lists every ``local``-model cell of the course that lends tools and
how the tool's value is read from the recorded result; ``bench/grounded_answers.py`` prints the
same measurement cell by cell. What the ``local`` provider controls is the answer turn: once a
tool result holding the value is in the transcript, the answer must state it. Whether the
135M model calls a tool with the right arguments in the first place is its own limit, and a
cell where it did not has no value to state.
"""

from __future__ import annotations

import pytest
from course_run import NOTEBOOK_TIMEOUT
from grounding import CELLS, outcome

pytestmark = pytest.mark.timeout(NOTEBOOK_TIMEOUT * 3)


def test_answers_whose_tool_result_held_the_value_state_it_all_but_one_at_most():
    found = [outcome(cell) for cell in CELLS]
    given = [o for o in found if o.values]
    misses = [
        (o.cell.notebook, o.cell.tag, o.values[:1], o.answer) for o in given if not o.grounded
    ]
    assert len(given) >= 5, [(o.cell.notebook, o.cell.tag, o.answer) for o in found]
    assert len(misses) <= 1, misses


def test_the_first_notebooks_tool_cells_all_answer_with_the_tools_value():
    found = [outcome(cell) for cell in CELLS if cell.notebook == "01_getting_started"]
    assert [(o.cell.tag, o.grounded) for o in found] == [
        ("tools", True),
        ("calculate", True),
        ("lookup", True),
    ], [(o.cell.tag, o.values, o.answer) for o in found]
