"""Helpers: run the course notebooks headless, once each, and read what their cells produced.

Each notebook is executed by papermill, as a classroom check or a CI job would run it (a
fresh kernel, ``allow_stdin`` off, so approvals follow the declared policy; any error output
fails the notebook, whatever a cell's tags say), in an environment stripped of model settings
and API keys: every agent cell runs on the embedded ``local`` model or on a scripted one,
offline. ``scripts/course.py``'s own ``execute`` (nbclient) runs them in the main job's test.
Cells are found by their tags, not their positions.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
RUN_MIME = "application/vnd.aimu.run+json"
#: Seconds a notebook test may take: its execution on a busy 2-core machine included.
NOTEBOOK_TIMEOUT = 1200
#: Variables that would pick a model, a provider or an approval policy.
MODEL_SETTINGS = ("AIMU_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "JUPYTER")


def _load_course() -> Any:
    spec = importlib.util.spec_from_file_location("course", ROOT / "scripts" / "course.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


course = _load_course()


def headless_env() -> dict[str, str]:
    """This process's environment without anything that picks a model or a policy."""
    return {k: v for k, v in os.environ.items() if not k.startswith(MODEL_SETTINGS)}


class Executed:
    """An executed notebook, with lookups by cell tag."""

    def __init__(self, name: str, notebook: Any, seconds: float):
        self.name = name
        self.notebook = notebook
        self.seconds = seconds

    def cell(self, tag: str) -> Any:
        found = [c for c in self.notebook.cells if tag in c.metadata.get("tags", [])]
        assert len(found) == 1, f"{self.name}: expected one cell tagged {tag!r}, found {len(found)}"
        return found[0]

    def record(self, tag: str) -> dict[str, Any]:
        """The final run record of the agent cell tagged ``tag``."""
        records = [
            o["data"][RUN_MIME] for o in self.cell(tag).outputs if RUN_MIME in o.get("data", {})
        ]
        assert len(records) == 1, f"{self.name}[{tag}]: expected one run record, got {records}"
        return records[0]

    def stdout(self, tag: str) -> str:
        return course.stdout_of(self.cell(tag))

    def result(self, tag: str) -> str:
        """The ``text/plain`` of the cell's value (its last bare expression)."""
        values = [o for o in self.cell(tag).outputs if o["output_type"] == "execute_result"]
        assert values, f"{self.name}[{tag}] shows no value"
        return values[-1]["data"]["text/plain"]

    def value(self, tag: str) -> Any:
        """The cell's value, read back from its repr."""
        return ast.literal_eval(self.result(tag))

    def text(self) -> str:
        """Everything the notebook's cells printed or displayed as text, for leak checks."""
        parts = []
        for cell in self.notebook.cells:
            for output in cell.get("outputs", []):
                parts.append(output.get("text", ""))
                parts.extend(str(v) for v in output.get("data", {}).values())
        return "\n".join(parts)


_executed: dict[str, Executed] = {}


def papermill(path: Path, output: Path, env: dict[str, str]) -> Any:
    """Execute the notebook at ``path`` with papermill's command line, in ``env``; return the
    executed notebook (written to ``output``). A failing cell fails the test, naming it."""
    import nbformat

    command = [sys.executable, "-m", "papermill", str(path), str(output), "--cwd",
               str(path.parent), "--kernel", "python3", "--execution-timeout",
               str(course.CELL_TIMEOUT), "--no-progress-bar", "--log-level", "WARNING"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"papermill failed on {path.name}:\n{done.stderr[-6000:]}"
    return nbformat.read(output, as_version=4)


def executed(name: str) -> Executed:
    """The notebook ``name`` executed headless, once per test session."""
    if name not in _executed:
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as folder:
            output = Path(folder) / f"{name}.ipynb"
            notebook = papermill(NOTEBOOKS / f"{name}.ipynb", output, headless_env())
        _executed[name] = Executed(name, notebook, time.monotonic() - started)
        print(f"{name} executed in {_executed[name].seconds:.0f} s", file=sys.stderr)
    return _executed[name]


def tool_cards(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The top-level tool cards of a run record, in order."""
    return [event for event in record["events"] if event["type"] == "tool"]


def answer_text(record: dict[str, Any]) -> str:
    """The model's text after its last tool call: the final answer."""
    text = []
    for event in record["events"]:
        if event["type"] == "tool":
            text = []
        elif event["type"] == "text":
            text.append(event["text"])
    return "".join(text)


def specs_of(tools: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """``{tool name: JSON schema of its arguments}``."""
    return {
        t.__tool_spec__["function"]["name"]: t.__tool_spec__["function"]["parameters"]
        for t in tools
    }


def assert_model_run(record: dict[str, Any], offered: dict[str, dict[str, Any]]) -> None:
    """What the machinery guarantees for a run on the offline model, whatever it chose to say:
    the run finished with an answer; every tool it called was one it was offered and got a
    result back; every call that ran had arguments valid against the tool's schema (a call
    cut off by the token limit is not run: the model is told, and its card says so)."""
    assert record["model"] == "local"
    assert record["status"] == "done", record["error"]
    assert answer_text(record).strip()
    for card in tool_cards(record):
        assert card["name"] in offered, f"{card['name']} was not offered"
        assert card["status"] in ("done", "error", "denied")
        assert card["result"]
        if card["status"] == "done":
            jsonschema.validate(card["arguments"], offered[card["name"]])


def defined_by(executed: Executed, tag: str) -> dict[str, Any]:
    """The names a plain-Python cell of the notebook defines, run here in the test process."""
    namespace: dict[str, Any] = {}
    exec(compile(executed.cell(tag).source, f"<{executed.name}[{tag}]>", "exec"), namespace)
    return namespace


def defined_by_file(path: Path) -> dict[str, Any]:
    """The names a Python file defines, run here as a module that is not ``__main__``."""
    namespace: dict[str, Any] = {"__name__": path.stem}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace
