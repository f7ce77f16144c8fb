"""Provider batch backends and approval by sample, in a real kernel."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from kernel_harness import SETUP, Widgets

sys.path.insert(0, str(Path(__file__).parents[1] / "providers"))

from batch_wire import Clock, OpenAIBatchFake

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def fake():
    server = OpenAIBatchFake(latency=10.0, clock=Clock(speed=0.0))
    yield server
    server.close()


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")
        time.sleep(0.02)


def test_a_kernel_restart_mid_batch_resumes_polling_the_same_batch(kernel, fake, tmp_path):
    checkpoint = tmp_path / "rows.jsonl"
    cell = (
        f"%%agent --each rows --model openai:wire@{fake.url} --backend openai-batch "
        f"--poll-interval 0.05 --checkpoint {checkpoint} --out results\n"
        "Classify: {text}"
    )
    kernel.ok("rows = [{'text': f'server {i} down'} for i in range(6)]")
    kernel.client.execute(cell)
    wait_for(lambda: fake.polls >= 1)
    (line,) = [json.loads(x) for x in checkpoint.read_text().splitlines()]
    (batch_id,) = fake.batches

    kernel.km.restart_kernel(now=True)
    kernel.client.wait_for_ready(timeout=60)
    fake.clock.advance(20.0)  # the provider finished while the kernel was gone
    kernel.ok(SETUP)
    kernel.ok("rows = [{'text': f'server {i} down'} for i in range(6)]")
    kernel.ok(cell)

    assert line["batch"] == batch_id
    assert fake.creations == 1, "the rerun polled the batch it had paid for"
    assert kernel.value("list(results.status)") == ["ok"] * 6
    assert kernel.value("list(results.answer)") == ["urgent: down"] * 6


def decision_buttons(widgets: Widgets) -> str | None:
    return widgets.button("Approve the rest like these")


def test_sampled_approval_asks_exactly_k_rows_then_runs_the_rest_unasked(kernel, tmp_path):
    kernel.ok(
        "rows = [{'name': f'n{i}'} for i in range(5)]\n"
        "def turn(messages, tools):\n"
        "    if messages[-1]['role'] == 'tool':\n"
        "        return 'Wrote it.'\n"
        "    name = messages[-1]['content'].rsplit(' ', 1)[-1]\n"
        "    return call('write_file', path=name + '.txt', content=name)\n"
        "m = ScriptedClient([turn] * 10)\n"
    )
    widgets = Widgets()
    panels: list[str] = []
    decisions: list[str] = []

    def on_message(msg):
        widgets.see(msg)
        data = msg["content"].get("data", {})
        if msg["msg_type"] not in ("display_data", "update_display_data"):
            return
        view = data.get(WIDGET_VIEW)
        if view is None or view["model_id"] in panels + decisions:
            return
        if widgets.is_inbox_box(msg):
            return
        rest = decision_buttons(widgets)
        approve = widgets.button("Approve")
        if rest is not None and rest not in decisions:
            decisions.append(view["model_id"])
            kernel.click(rest)
        elif approve is not None:
            panels.append(view["model_id"])
            assert "approval sample of 2" in data["text/plain"]
            kernel.click(approve)

    result = kernel.execute(
        "%%agent --each rows --model m --tools fs --approve sample:2 --concurrency 1 "
        "--out results\nWrite {name}",
        on_message=on_message,
    )
    assert result.status == "ok", result.error_lines
    assert len(panels) == 2, "exactly the two sample rows asked"
    assert len(decisions) == 1
    assert sorted(p.name for p in tmp_path.glob("n*.txt")) == [f"n{i}.txt" for i in range(5)]
    assert kernel.value("list(results.status)") == ["ok"] * 5
    final = [m for m in result.displays if "approval sample" in str(m["content"]["data"])]
    assert "the rest were approved like these" in final[-1]["content"]["data"]["text/plain"]


def test_stopping_after_the_sample_runs_no_more_rows(kernel, tmp_path):
    kernel.ok(
        "rows = [{'name': f'n{i}'} for i in range(4)]\n"
        "def turn(messages, tools):\n"
        "    if messages[-1]['role'] == 'tool':\n"
        "        return 'Wrote it.'\n"
        "    name = messages[-1]['content'].rsplit(' ', 1)[-1]\n"
        "    return call('write_file', path=name + '.txt', content=name)\n"
        "m = ScriptedClient([turn] * 8)\n"
    )
    widgets = Widgets()
    clicked: set[str] = set()

    def on_message(msg):
        widgets.see(msg)
        data = msg["content"].get("data", {})
        view = data.get(WIDGET_VIEW)
        if msg["msg_type"] not in ("display_data", "update_display_data") or view is None:
            return
        if view["model_id"] in clicked or widgets.is_inbox_box(msg):
            return
        clicked.add(view["model_id"])
        stop = widgets.button("Stop the batch")
        kernel.click(stop if stop is not None else widgets.button("Approve"))

    result = kernel.execute(
        "%%agent --each rows --model m --tools fs --approve sample:1 --out results\nWrite {name}",
        on_message=on_message,
    )
    assert result.status == "ok", result.error_lines
    assert [p.name for p in tmp_path.glob("n*.txt")] == ["n0.txt"]
    assert kernel.value("len(results)") == 1
    shown = [str(m["content"]["data"]) for m in result.displays]
    assert any("stopped for the approval sample: Stop was chosen" in text for text in shown)


def test_headless_sampled_approval_keeps_todays_rule(kernel):
    kernel.ok("rows = [{'name': 'a'}]\nm = ScriptedClient(['x'])")
    refused = kernel.execute(
        "%%agent --each rows --model m --tools fs --approve sample:2\nWrite {name}",
        allow_stdin=False,
    )
    assert refused.reply["ename"] == "UsageError"
    assert "--approve auto" in refused.reply["evalue"]


def test_agent_usage_and_the_footer_show_cost_where_the_price_is_known(kernel):
    kernel.ok(
        "aimu.prices['scripted:priced'] = (100000.0, 100000.0)\n"
        "m = ScriptedClient(['one two three'], model='priced')\n"
        "u = ScriptedClient(['four'], model='unpriced')"
    )
    priced = kernel.ok("%%agent --model m\nsay three words")
    kernel.ok("%%agent --model u --name other\nsay one")
    plain = priced.displays[-1]["content"]["data"]["text/plain"]
    footer = plain.splitlines()[-1]
    assert footer.startswith("-- scripted:priced · ") and " · $" in footer
    shown = kernel.ok("%agent_usage").of_type("display_data")[0]["content"]["data"]["text/plain"]
    rows = {line.split()[0]: line for line in shown.splitlines()}
    assert "cost" in rows["conversation"]
    assert "$" in rows["default"] and "n/a" in rows["other"]
