"""A notebook run headless with an ACP agent cell, saved and reopened: the record is all there."""

from __future__ import annotations

import nbformat
from acp_setup import AGENT, NOTES
from test_headless import record_of, run_notebook

CELLS = [
    "%load_ext aimu",
    f'%%agent --model "acp:{AGENT}"\nPlease read the notes, then edit them.',
]


def test_the_saved_record_reopens_with_cards_plan_and_decisions(tmp_path, notes):
    notebook = run_notebook(tmp_path, CELLS)
    reopened = nbformat.read(tmp_path / "run.ipynb", as_version=4)
    assert reopened == notebook
    outputs = notebook.cells[1].outputs
    record = record_of(notebook.cells[1])
    assert record["status"] == "done"
    names = [e["name"] for e in record["events"] if e["type"] == "tool"]
    assert names == ["Read notes.txt", "Edit notes.txt"]
    edit = next(e for e in record["events"] if e.get("name") == "Edit notes.txt")
    assert edit["approval"]["by"] == "policy"
    assert edit["status"] == "denied"
    assert notes.read_text() == NOTES
    data = next(o["data"] for o in outputs if "text/markdown" in o.get("data", {}))
    assert "Read notes.txt" in data["text/markdown"] and "denied by policy" in data["text/markdown"]
    assert "[tool Edit notes.txt" in data["text/plain"]
