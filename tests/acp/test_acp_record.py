"""A notebook run headless with an ACP agent cell, saved and reopened: the record is all there."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from acp_setup import AGENT, NOTES

sys.path.insert(0, str(Path(__file__).parents[1] / "notebooks"))

from course_run import RUN_MIME, course

CELLS = [
    "%load_ext aimu",
    f'%%agent --model "acp:{AGENT}"\nPlease read the notes, then edit them.',
]


def test_the_saved_record_reopens_with_cards_plan_and_decisions(tmp_path, notes):
    path = tmp_path / "run.ipynb"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nbformat.write(notebook, path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIMU_")}
    nbformat.write(course.execute(path, env=env), path)
    reopened = nbformat.read(path, as_version=4)
    outputs = reopened.cells[1].outputs
    record = next(o["data"][RUN_MIME] for o in outputs if RUN_MIME in o.get("data", {}))
    assert record["status"] == "done"
    names = [e["name"] for e in record["events"] if e["type"] == "tool"]
    assert names == ["Read notes.txt", "Edit notes.txt"]
    assert [e["type"] for e in record["events"]][:2] == ["thinking", "plan"]
    edit = next(e for e in record["events"] if e.get("name") == "Edit notes.txt")
    assert edit["approval"]["by"] == "policy"
    assert edit["status"] == "denied"
    assert notes.read_text() == NOTES
    data = next(o["data"] for o in outputs if "text/markdown" in o.get("data", {}))
    assert "Read notes.txt" in data["text/markdown"]
    assert "denied by policy" in data["text/markdown"]
    assert "[tool Edit notes.txt" in data["text/plain"]
