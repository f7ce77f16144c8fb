"""The course as committed: eleven notebooks, saved without outputs, each picking its model first."""

from __future__ import annotations

import json

import nbformat
import pytest
from course_run import NOTEBOOKS

COURSE = [
    "01_getting_started",
    "02_your_own_tools",
    "03_approvals",
    "04_streaming_tools",
    "05_notebook_workspace",
    "06_builtin_tools",
    "07_mcp",
    "08_memory_and_retrieval",
    "09_subagents",
    "10_seeing_and_leaving",
    "11_outside_agents",
]


def test_the_course_is_the_eleven_notebooks_in_order():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == COURSE


@pytest.mark.parametrize("name", COURSE)
def test_notebook_is_committed_without_outputs_or_execution_counts(name):
    raw = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())
    notebook = nbformat.from_dict(raw)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{name}: a cell was saved with its outputs"
            assert cell.execution_count is None, f"{name}: a cell was saved with its count"
    assert "widgets" not in notebook.metadata, f"{name}: saved with widget state"


@pytest.mark.parametrize("name", COURSE)
def test_notebook_states_its_goal_then_picks_the_model_in_its_first_code_cell(name):
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert notebook.cells[0].cell_type == "markdown"
    assert "**Goal:**" in notebook.cells[0].source
    first_code = next(c for c in notebook.cells if c.cell_type == "code")
    assert first_code.metadata.get("tags") == ["setup"]
    assert first_code.source.startswith("%load_ext aimu")
    assert "%config AimuMagics.model = MODEL" in first_code.source
    assert "135M" in first_code.source


@pytest.mark.parametrize("name", COURSE)
def test_scripted_cells_are_labelled_scripted(name):
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    uses_scripted = any(
        "ScriptedClient(" in c.source for c in notebook.cells if c.cell_type == "code"
    )
    labelled = any("**scripted**" in c.source for c in notebook.cells if c.cell_type == "markdown")
    assert labelled == uses_scripted


@pytest.mark.parametrize("name", COURSE)
def test_no_cell_relies_on_a_tag_that_papermill_ignores(name):
    """nbclient and nbconvert let a cell tagged ``raises-exception`` fail; papermill stops at
    any error, so such a notebook runs under one and fails under the other."""
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    tagged = [c.id for c in notebook.cells if "raises-exception" in c.metadata.get("tags", [])]
    assert tagged == [], f"{name}: cells {tagged} expect to fail, which papermill does not allow"
