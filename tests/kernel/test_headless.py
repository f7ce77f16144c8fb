"""Headless execution with nbclient (as papermill and CI run notebooks): no widgets, the
declared policy decides each gated call, and the saved notebook holds a readable record."""

from __future__ import annotations

import os

import nbformat
import pytest
from kernel_harness import RUN_MIME, kernel_env
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

SETUP = """\
%load_ext aimu
from aimu.models.providers.scripted import ScriptedClient, reply, call
m = ScriptedClient([
    reply("Writing the file.", tool_calls=[call("write_file", path="out.txt", content="x")]),
    lambda messages, tools: "Model read: " + messages[-1]["content"],
])
"""


def run_notebook(tmp_path, cells, **env):
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in cells],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    saved = os.environ.copy()
    os.environ.clear()
    os.environ.update(kernel_env(tmp_path, **env))
    try:
        client = NotebookClient(notebook, timeout=60, resources={"metadata": {"path": tmp_path}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    path = tmp_path / "run.ipynb"
    nbformat.write(notebook, path)
    return nbformat.read(path, as_version=4)


def record_of(cell):
    return next(o["data"][RUN_MIME] for o in cell.outputs if RUN_MIME in o.get("data", {}))


def test_nbclient_run_denies_gated_calls_and_records_the_decision(tmp_path):
    notebook = run_notebook(tmp_path, [SETUP, "%%agent --model m --tools fs\nWrite out.txt"])
    agent_cell = notebook.cells[1]
    assert not (tmp_path / "out.txt").exists()
    assert not [o for o in agent_cell.outputs if WIDGET_VIEW in o.get("data", {})]
    record = record_of(agent_cell)
    assert record["status"] == "done"
    card = record["events"][1]
    assert card["name"] == "write_file" and card["status"] == "denied"
    assert card["approval"]["by"] == "policy"
    answer = record["events"][-1]["text"]
    assert answer.startswith("Model read: Tool 'write_file' was not approved: no one is there")
    display = next(o for o in agent_cell.outputs if RUN_MIME in o.get("data", {}))
    assert "write_file" in display["data"]["text/plain"]
    assert "denied by policy" in display["data"]["text/markdown"]
    assert "Model read:" in display["data"]["text/markdown"]


def test_nbclient_run_with_aimu_approval_auto_runs_the_gated_call(tmp_path):
    notebook = run_notebook(
        tmp_path, [SETUP, "%%agent --model m --tools fs\nWrite out.txt"], AIMU_APPROVAL="auto"
    )
    assert (tmp_path / "out.txt").read_text() == "x"
    card = record_of(notebook.cells[1])["events"][1]
    assert card["approval"] == {"approved": True, "reason": "", "by": "policy"}


def test_approve_flag_wins_over_the_environment(tmp_path):
    notebook = run_notebook(
        tmp_path,
        [SETUP, "%%agent --model m --tools fs --approve deny\nWrite out.txt"],
        AIMU_APPROVAL="auto",
    )
    assert not (tmp_path / "out.txt").exists()
    assert record_of(notebook.cells[1])["events"][1]["status"] == "denied"


def test_run_all_stops_at_an_agent_error(tmp_path):
    cells = [
        SETUP.replace("m = ScriptedClient([", "m = ScriptedClient([RuntimeError('boom'), "),
        "%%agent --model m\nhi",
        "after = True",
    ]
    with pytest.raises(CellExecutionError):
        run_notebook(tmp_path, cells)
