"""The offline model's answers after a tool call state the tool's value, across the course.

tests/notebooks/grounding.py lists every ``local``-model cell of the course that lends tools and
how the tool's value is read from the recorded result; ``bench/grounded_answers.py`` prints the
same measurement cell by cell.
"""

from __future__ import annotations

import pytest
from course_run import NOTEBOOK_TIMEOUT
from grounding import CELLS, outcome

pytestmark = pytest.mark.timeout(NOTEBOOK_TIMEOUT)


@pytest.mark.parametrize("notebook", sorted({cell.notebook for cell in CELLS}))
def test_an_answer_given_the_tools_value_states_it(notebook):
    found = [outcome(cell) for cell in CELLS if cell.notebook == notebook]
    misses = [(o.cell.tag, o.values[:1], o.answer) for o in found if o.values and not o.grounded]
    assert misses == []


def test_the_first_notebooks_tool_cells_all_answer_with_the_tools_value():
    found = [outcome(cell) for cell in CELLS if cell.notebook == "01_getting_started"]
    assert [(o.cell.tag, o.grounded) for o in found] == [
        ("tools", True),
        ("calculate", True),
        ("lookup", True),
    ], [(o.cell.tag, o.values, o.answer) for o in found]
