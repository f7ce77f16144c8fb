"""A notebook executed again with the response cache asks the model nothing and shows the
same records, each saying it was replayed; ``--fresh`` asks again for one cell; tools still
run. Real kernels (nbclient) against the OpenAI wire-format fake on loopback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from kernel_harness import RUN_MIME
from test_headless import run_notebook

sys.path.insert(0, str(Path(__file__).parents[1] / "providers"))

from provider_wire import WireServer, lookup_reply


@pytest.fixture
def wire():
    with WireServer(default=lookup_reply) as server:
        yield server


def cells(wire: WireServer, store: Path, *, fresh_second: bool = False) -> list[str]:
    second = "%%agent --fresh" if fresh_second else "%%agent"
    return [
        f"%load_ext aimu\n%config AimuMagics.model = 'openai:wire-model@{wire.url}/v1'\n"
        f"%config AimuMagics.cache = {str(store)!r}",
        "import aimu\nlog = []\n"
        "def lookup(topic: str) -> str:\n"
        "    'Look a figure up.'\n"
        "    log.append(topic)\n"
        "    return 'up 4%'\n"
        "%tool lookup",
        "%%agent\nHow are sales?",
        f"{second}\nAnd in one word?",
        "rows = [{'region': 'north'}, {'region': 'south'}]",
        "%%agent --each rows --out table\nHow is the {region}?",
        "print(len(log), list(table['answer']))",
    ]


def execute(tmp_path: Path, sources: list[str]) -> nbformat.NotebookNode:
    """The notebook run by nbclient; the kernel imports the code under test (run_notebook
    gives it an environment of its own, without this process's PYTHONPATH)."""
    return run_notebook(tmp_path, sources, **{"PYTHONPATH": os.environ.get("PYTHONPATH", "")})


def records(notebook: nbformat.NotebookNode) -> list[dict]:
    return [
        output["data"][RUN_MIME]
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if RUN_MIME in output.get("data", {})
    ]


def footers(notebook: nbformat.NotebookNode) -> list[str]:
    return [
        output["data"]["text/plain"].rsplit("-- ", 1)[-1]
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if RUN_MIME in output.get("data", {})
    ]


def printed(notebook: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in notebook.cells[-1].outputs)


def without_timing(record: dict) -> dict:
    """A record without what differs between two executions: its time, the replay note and
    the run's own id."""
    return {k: v for k, v in record.items() if k not in ("duration_s", "replayed", "run")}


def test_a_notebook_executed_again_asks_the_model_nothing_and_shows_the_same_records(
    tmp_path, wire
):
    store = tmp_path / "answers.sqlite"
    first = execute(tmp_path, cells(wire, store))
    asked = len(wire.requests)
    assert asked == 8  # a tool call and an answer for each of two cells and two rows
    again = execute(tmp_path, cells(wire, store))
    assert len(wire.requests) == asked
    assert [without_timing(r) for r in records(again)] == [
        without_timing(r) for r in records(first)
    ]
    assert all("replayed" not in r for r in records(first))
    assert all(r["replayed"]["turns"] for r in records(again))
    assert all("replayed (answered " in footer for footer in footers(again))
    assert printed(first) == printed(again)
    assert printed(again).startswith("4 ")  # the tool ran in this kernel too, four times


def test_fresh_asks_the_model_again_for_that_cell_only(tmp_path, wire):
    store = tmp_path / "answers.sqlite"
    execute(tmp_path, cells(wire, store))
    asked = len(wire.requests)
    fresh = execute(tmp_path, cells(wire, store, fresh_second=True))
    sent = wire.bodies[asked:]
    assert len(sent) == 2
    assert all(
        [m["content"] for m in body["messages"] if m["role"] == "user"][-1] == "And in one word?"
        for body in sent
    )
    assert ["replayed" in r for r in records(fresh)] == [True, False]


def test_cache_flag_replays_one_cell_and_agent_cache_shows_and_clears_it(kernel, tmp_path):
    store = tmp_path / "cell.sqlite"
    kernel.ok("m = ScriptedClient(['Once only.', 'Twice.'])")
    cell = f"%%agent --model m --new --cache {store}\nSay it."
    first, again = kernel.ok(cell), kernel.ok(cell)
    assert "replayed" not in first.record
    assert again.record["events"] == first.record["events"]
    assert "replayed (answered " in again.bundle["text/plain"]
    assert kernel.value("len(m.requests)") == 1
    uncached = kernel.ok("%%agent --model m --new\nSay it.")
    assert uncached.record["events"][0]["text"] == "Twice."
    shown = kernel.ok(f"%agent_cache --path {store}").stdout
    assert "1 answer," in shown and "1 hit" in shown and "scripted" in shown
    cleared = kernel.ok(f"%agent_cache clear --all --path {store}").stdout
    assert cleared.strip() == f"Cleared 1 answer from {store}."
    refused = kernel.execute("%agent_cache clear")
    assert refused.status == "error"
    assert "say what to clear" in refused.reply["evalue"]
    wrong = kernel.execute("%agent_cache --frobnicate")
    assert wrong.status == "error" and "unrecognized arguments" in wrong.reply["evalue"]
