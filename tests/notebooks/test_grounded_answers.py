"""The offline model's answers after a tool call state the tool's value, across the course.

tests/notebooks/grounding.py lists every ``local``-model cell of the course that lends tools and
how the tool's value is read from the recorded result; ``bench/grounded_answers.py`` prints the
same measurement cell by cell. The goal is nine answers in ten stating the value the tool
returned: the ``local`` provider guides the 135M model's call (the tool the request names,
arguments quoted from the request) and puts the result where the answer turn attends.
"""

from __future__ import annotations

import pytest
from course_run import NOTEBOOK_TIMEOUT
from grounding import CELLS, outcome

pytestmark = pytest.mark.timeout(NOTEBOOK_TIMEOUT * 3)


def test_nine_in_ten_of_the_courses_tool_answers_state_the_tools_value():
    found = [outcome(cell) for cell in CELLS]
    misses = [(o.cell.notebook, o.cell.tag, o.called, o.values[:1], o.answer) for o in found
              if not o.grounded]  # fmt: skip
    assert len(found) == len(CELLS) >= 10
    assert len(misses) * 10 <= len(found), misses


def test_the_first_notebooks_tool_cells_all_answer_with_the_tools_value():
    found = [outcome(cell) for cell in CELLS if cell.notebook == "01_getting_started"]
    assert [(o.cell.tag, o.grounded) for o in found] == [
        ("tools", True),
        ("calculate", True),
        ("lookup", True),
    ], [(o.cell.tag, o.values, o.answer) for o in found]
