"""Batch runs in a real kernel: the progress bar, and ``%%agent --each``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "batch"))

from ticket_server import TicketServer


@pytest.fixture
def tickets():
    server = TicketServer(delay=0.02)
    yield server
    server.wire.close()


def test_a_batch_in_a_cell_shows_a_progress_bar_that_ends_as_a_static_line(kernel, tickets):
    run = kernel.ok(
        f"agent = aimu.Agent(aimu.client('openai:wire@{tickets.url}', max_retries=0))\n"
        "items = [{'text': f'disk {i} broken'} for i in range(12)]\n"
        "result = aimu.batch('Classify: {text}', items, agent=agent, concurrency=4)\n"
        "print([it.status for it in result].count('ok'))"
    )
    assert run.stdout.strip() == "12"
    widgets = [m for m in run.of_type("display_data")
               if "application/vnd.jupyter.widget-view+json" in m["content"]["data"]]  # fmt: skip
    assert widgets, "no progress widget was shown"
    final = run.displays[-1]["content"]["data"]["text/plain"]
    assert final.startswith("batch: 12/12 done, 0 failed")


def rows_cell(tickets, flags: str = "") -> str:
    return (
        (
            "import pandas as pd\n"
            "df = pd.DataFrame({'id': ['a', 'b', 'c', 'd'], 'text': ['disk broken', 'font ugly', "
            "'server down', 'slow page']}).set_index('id')\n"
            "topic = 'support'\n"
        ),
        f"%%agent --each df --model openai:wire@{tickets.url} {flags}\n"
        "Classify this {topic} ticket: {text}",
    )


def test_each_row_fills_the_template_and_results_land_as_a_dataframe(kernel, tickets):
    setup, cell = rows_cell(tickets, "--out results --concurrency 2")
    kernel.ok(setup)
    kernel.ok(cell)
    table = kernel.value(
        "[(i, r.status, r.answer) for i, r in results[['status', 'answer']].iterrows()]"
    )
    assert [list(row) for row in table] == [
        ["a", "ok", "urgent: disk broken"],
        ["b", "ok", "routine: font ugly"],
        ["c", "ok", "urgent: server down"],
        ["d", "ok", "routine: slow page"],
    ]
    assert sorted(tickets.prompts) == sorted(
        f"Classify this support ticket: {t}"
        for t in ("disk broken", "font ugly", "server down", "slow page")
    )
    assert tickets.peak <= 2


def test_without_out_the_dataframe_is_the_cells_value(kernel, tickets):
    setup, cell = rows_cell(tickets)
    kernel.ok(setup)
    run = kernel.ok(cell)
    (result,) = run.of_type("execute_result")
    assert "text/html" in result["content"]["data"]
    assert "urgent: disk broken" in result["content"]["data"]["text/plain"]


def test_a_batch_whose_tools_would_ask_is_refused_until_a_policy_is_declared(kernel, tickets):
    setup, cell = rows_cell(tickets, "--tools fs --out results")
    kernel.ok(setup)
    refused = kernel.execute(cell)
    assert refused.status == "error"
    message = refused.reply["evalue"]
    assert "write_file" in message and "--approve auto" in message
    assert tickets.prompts == []

    kernel.ok(cell.replace("--tools fs", "--tools fs --approve deny"))
    assert kernel.value("list(results.status)") == ["ok"] * 4


def test_an_unknown_placeholder_is_named_before_anything_runs(kernel, tickets):
    setup, cell = rows_cell(tickets)
    kernel.ok(setup)
    bad = kernel.execute(cell.replace("{text}", "{txt}"))
    assert bad.status == "error"
    assert "{txt}" in bad.reply["evalue"] and "text" in bad.reply["evalue"]
    assert tickets.prompts == []


def test_an_interrupted_batch_keeps_what_finished(kernel, tickets, tmp_path):
    import threading
    import time

    tickets.delay = 0.3
    kernel.ok("rows = [{'text': f'ticket {i}'} for i in range(40)]\n")
    checkpoint = tmp_path / "rows.jsonl"
    moments = {}

    def interrupt_when_started() -> None:
        while len(tickets.prompts) < 4:
            time.sleep(0.01)
        moments["interrupt"] = time.monotonic()
        kernel.km.interrupt_kernel()

    watcher = threading.Thread(target=interrupt_when_started)
    watcher.start()
    run = kernel.execute(
        f"%%agent --each rows --model openai:wire@{tickets.url} --out partial "
        f"--concurrency 2 --checkpoint {checkpoint}\nClassify: {{text}}"
    )
    moments["idle"] = time.monotonic()
    watcher.join()
    assert moments["idle"] - moments["interrupt"] < 2.0
    assert run.reply.get("ename") == "AgentInterrupted"
    assert "rows finished" in "\n".join(run.error_lines)
    kept = kernel.value("len(partial)")
    assert 0 < kept < 40
    assert len(checkpoint.read_text().splitlines()) == kept


def test_each_with_a_schema_gives_one_column_per_field(kernel, tickets):
    setup, cell = rows_cell(tickets, "--out results --schema Ticket")
    kernel.ok(
        setup + "from typing import Literal\nfrom pydantic import BaseModel\n"
        "class Ticket(BaseModel):\n    label: Literal['urgent', 'routine']\n    summary: str\n"
    )
    kernel.ok(cell)
    assert kernel.value("list(results.label)") == ["urgent", "routine", "urgent", "routine"]
    assert tickets.wire.bodies[0]["response_format"]["json_schema"]["name"] == "Ticket"


def test_options_that_need_one_conversation_are_refused_with_each(kernel, tickets):
    setup, cell = rows_cell(tickets, "--name other")
    kernel.ok(setup)
    refused = kernel.execute(cell)
    assert refused.reply["ename"] == "UsageError"
    assert "--name does not apply" in refused.reply["evalue"]
    assert tickets.prompts == []
