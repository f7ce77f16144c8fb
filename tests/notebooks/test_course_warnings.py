"""The course runs without a warning: no cell of a notebook that uses ``%%agent`` writes to
stderr, with every ``RuntimeWarning`` (a coroutine never awaited among them) an error.

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
def test_a_course_notebook_writes_nothing_to_stderr_with_runtime_warnings_as_errors(
    name, tmp_path
):
    env = {**headless_env(), "PYTHONWARNINGS": "error::RuntimeWarning"}
    executed = course.execute(NOTEBOOKS / name, env=env)
    assert stderr_of(executed) == []
