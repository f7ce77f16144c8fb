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
