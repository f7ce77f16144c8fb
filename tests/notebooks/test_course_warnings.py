"""The course runs without a warning: no cell of a notebook that uses ``%%agent`` shows a
warning, a traceback or a task destroyed while pending on stderr, with every
``RuntimeWarning`` (a coroutine never awaited among them) an error. The library's own log
lines (a sub-agent's dropped tools) are meant for the reader and may stay.

Each notebook runs in a fresh kernel started with ``PYTHONWARNINGS=error::RuntimeWarning``
(nbclient, ``allow_stdin`` off, offline models), as a first Run All does.
"""

from __future__ import annotations

import pytest
from course_run import NOTEBOOKS, course, headless_env

AGENT_NOTEBOOKS = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb") if "%%agent" in p.read_text())


def stderr_of(notebook) -> list[tuple[int, str]]:
    """``(cell index, text)`` of every stderr stream the executed notebook's cells wrote."""
    return [
        (index, output.get("text", ""))
        for index, cell in enumerate(notebook.cells)
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream" and output.get("name") == "stderr"
    ]


@pytest.mark.parametrize("name", AGENT_NOTEBOOKS)
def test_a_course_notebook_shows_no_warning_or_traceback_with_runtime_warnings_as_errors(
    name, tmp_path
):
    env = {**headless_env(), "PYTHONWARNINGS": "error::RuntimeWarning"}
    executed = course.execute(NOTEBOOKS / name, env=env)
    problems = ("Warning", "Traceback", "never awaited", "was destroyed but it is pending")
    assert [(i, text) for i, text in stderr_of(executed) if any(p in text for p in problems)] == []
