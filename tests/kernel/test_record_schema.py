"""The run record has one format: every record real runs publish in a kernel matches
``aimu_jupyter/view/record.schema.json``, and the golden records the lab extension's jest
tests read (``labextension/test/fixtures/records``) are the ones these runs write.

When the writer changes on purpose, rewrite the golden files with
``AIMU_WRITE_GOLDEN=1 pytest tests/kernel/test_record_schema.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from kernel_harness import SETUP, Widgets, start_kernel
from test_approval import clicker

ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((ROOT / "aimu_jupyter/view/record.schema.json").read_text())
GOLDEN = ROOT / "labextension/test/fixtures/records"
REWRITE = "AIMU_WRITE_GOLDEN=1 pytest tests/kernel/test_record_schema.py"

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
TOOLS = f"""\
import base64, dataclasses
from aimu.tools import Image, ToolResult

@aimu.tool
def chart(month: str) -> ToolResult:
    '''Draw the sales chart of a month.'''
    png = Image.from_bytes(base64.b64decode({PNG!r}), description='sales by month')
    svg = Image.from_bytes(b'<svg xmlns="http://www.w3.org/2000/svg"/>', description='logo')
    return ToolResult(f'charted {{month}}', (png, svg))

@dataclasses.dataclass
class City:
    name: str
    population: int
"""

#: Code whose text holds a bidi control and whose output holds an escape sequence.
CONTROL_CODE = 'role = "user\u202e nimda"\nprint("\\x1b[1mdone\\x1b[0m")'

#: name: (the model's turns, the cell, the approval panels' answers in order)
RUNS: dict[str, tuple[str, str, tuple[tuple[str, ...], ...]]] = {
    "plain_answer": (
        "['The fastest month was **March**, up 12%.']",
        "\nWhich month grew fastest?",
        (),
    ),
    "tool_approved": (
        "[call('write_file', path='note.txt', content='hi'), 'Wrote it.']",
        "--tools fs\nWrite hi to note.txt",
        (("approve",),),
    ),
    "tool_denied": (
        "[call('write_file', path='x.txt', content='x'), 'Understood.']",
        "--tools fs\nWrite x",
        (("deny", "use the data folder"),),
    ),
    "always_allowed": (
        "[call('write_file', path='a.txt', content='1'), call('write_file', path='b.txt',"
        " content='2'), 'Both written.']",
        "--tools fs\nWrite a and b",
        (("always", "Always allow write_file"),),
    ),
    "images": (
        "[call('chart', month='March'), 'Here is March.']",
        "--tools chart\nChart March",
        (),
    ),
    "code_with_controls": (
        f"[call('python', code={CONTROL_CODE!r}), 'Ran it.']",
        "--tools python\nRun it",
        (("approve",),),
    ),
    "schema_answer": (
        """['{"name": "Lyon", "population": 522000}']""",
        "--schema City --out city\nLargest city of the Rhône?",
        (),
    ),
}


def normalized(record: dict[str, Any], folder: str) -> dict[str, Any]:
    """The record with what differs between runs fixed: its run id, inbox key, duration,
    tool call ids (numbered in order) and the kernel's working ``folder``."""
    record = json.loads(json.dumps(record).replace(folder, "/home/user/notebook"))
    record["run"] = "0" * 32
    record["duration_s"] = 1.25
    if record["inbox"] is not None:
        record["inbox"] = "1" * 32
    ids: dict[str, str] = {}

    def renumber(events: list[dict[str, Any]]) -> None:
        for event in events:
            if event["type"] == "tool":
                event["id"] = ids.setdefault(event["id"], f"call_{len(ids) + 1}")
                renumber(event["children"])

    renumber(record["events"])
    return record


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """Every record each run published, in order, from one real kernel."""
    tmp_path = tmp_path_factory.mktemp("records")
    kernel = start_kernel(tmp_path)
    try:
        kernel.ok(SETUP + TOOLS)
        runs = {}
        for name, (turns, cell, answers) in RUNS.items():
            kernel.ok(f"m = ScriptedClient({turns})")
            widgets = Widgets()
            result = kernel.execute(
                f"%%agent --model m --new {cell}",
                on_message=clicker(kernel, widgets, *answers),
            )
            assert result.status == "ok", result.error_lines
            runs[name] = result.records()
        return str(tmp_path), runs
    finally:
        kernel.client.stop_channels()
        kernel.km.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def golden(published) -> dict[str, dict[str, Any]]:
    """The golden records: each run's final record, and one saved while it waited."""
    folder, runs = published
    records = {name: normalized(records[-1], folder) for name, records in runs.items()}
    waiting = [
        r
        for r in runs["tool_approved"]
        if any(e.get("status") == "awaiting_approval" for e in r["events"])
    ]
    records["unfinished"] = normalized(waiting[0], folder)
    return records


def test_every_record_a_run_publishes_matches_the_schema(published):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for name, records in published[1].items():
        assert len(records) >= 2, name
        for record in records:
            problems = [
                f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(record)
            ]
            assert not problems, (name, problems)


def test_the_golden_records_show_what_they_are_named_for(golden):
    tool = {name: record["events"][0] for name, record in golden.items() if name != "plain_answer"}
    assert golden["plain_answer"]["events"] == [
        {"type": "text", "text": "The fastest month was **March**, up 12%."}
    ]
    assert tool["tool_approved"]["approval"]["by"] == "user"
    assert tool["tool_denied"]["approval"] == {
        "approved": False,
        "reason": "use the data folder",
        "by": "user",
    }
    later = golden["always_allowed"]["events"][1]["approval"]
    assert tool["always_allowed"]["approval"]["by"] == later["by"] == "always"
    assert later["chosen_at"] == "write_file(path='a.txt', content='1')"
    assert [i["mime_type"] for i in tool["images"]["images"]] == ["image/png", "image/svg+xml"]
    assert "logo: not sent" in tool["images"]["images_note"]
    controls = tool["code_with_controls"]
    assert controls["arguments"]["code"] == CONTROL_CODE
    assert "\u202e" not in controls["code_markdown"]["code"]
    assert controls["code_markdown"]["code"].startswith('```python\nrole = "user<U+202E> nimda"')
    assert controls["shown"]["arguments"]["code"] == CONTROL_CODE.replace("\u202e", "<U+202E>")
    assert "\x1b" in controls["result"] and "\x1b" not in controls["shown"]["result"]
    assert "shown" not in tool["tool_approved"]
    assert tool["tool_approved"]["code_markdown"] == {"content": "```\nhi\n```"}
    assert json.loads(golden["schema_answer"]["events"][0]["text"])["name"] == "Lyon"
    assert golden["unfinished"]["status"] == "running"
    assert tool["unfinished"]["status"] == "awaiting_approval"


def test_the_golden_files_are_the_records_the_writer_writes(golden):
    written = {name: json.dumps(record, indent=2, ensure_ascii=False) + "\n"
               for name, record in golden.items()}  # fmt: skip
    if os.environ.get("AIMU_WRITE_GOLDEN"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for stale in GOLDEN.glob("*.json"):
            stale.unlink()
        for name, text in written.items():
            (GOLDEN / f"{name}.json").write_text(text, encoding="utf-8")
    on_disk = {path.stem: path.read_text(encoding="utf-8") for path in GOLDEN.glob("*.json")}
    assert sorted(on_disk) == sorted(written), f"the golden files are stale: {REWRITE}"
    for name, text in written.items():
        assert on_disk[name] == text, f"{name}.json is stale: {REWRITE}"
