"""aimu.batch on one machine, against a Chat Completions server on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Literal

import pandas as pd
import pytest
from pydantic import BaseModel

import aimu
from aimu.batch import BatchInterrupted, BatchStats
from aimu.models.errors import AuthenticationError

ROOT = Path(__file__).parents[2]


def tickets_list(count: int) -> list[dict[str, str]]:
    return [
        {"id": f"T{i}", "text": f"ticket {i}: server {'down' if i % 3 == 0 else 'slow'}"}
        for i in range(count)
    ]


def agent_for(server, **options) -> aimu.Agent:
    return aimu.Agent(aimu.client(f"openai:wire@{server.url}", max_retries=0), **options)


class Ticket(BaseModel):
    label: Literal["urgent", "routine"]
    summary: str


def test_results_come_back_in_input_order_whatever_order_they_finish(tickets):
    items = tickets_list(30)
    result = aimu.batch("Classify {id}: {text}", items, agent=agent_for(tickets), concurrency=8)

    assert len(result) == 30 and not result.failed and not result.interrupted
    for position, (item, outcome) in enumerate(zip(items, result, strict=True)):
        assert outcome.index == position and outcome.item == item
        expected = "urgent" if "down" in item["text"] else "routine"
        assert outcome.answer == f"{expected}: server {item['text'].rsplit(' ', 1)[-1]}"
        assert outcome.value == outcome.answer and outcome.status == "ok"
        assert outcome.usage == {"input_tokens": 10, "output_tokens": 3}
    assert result.usage == {"input_tokens": 300, "output_tokens": 90}


def test_concurrency_bound_is_reached_and_never_exceeded(tickets):
    tickets.delay = 0.1
    aimu.batch("Classify: {text}", tickets_list(20), agent=agent_for(tickets), concurrency=5)
    assert tickets.peak == 5


def test_each_item_gets_a_fresh_conversation_of_the_template(tickets):
    agent = agent_for(tickets, system_message="You sort support tickets.")
    agent.run("Classify: warm-up ticket")
    before = list(agent.messages)
    tickets.wire.requests.clear()

    aimu.batch("Classify: {text}", tickets_list(4), agent=agent, concurrency=2)

    assert agent.messages == before
    for body in tickets.wire.bodies:
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["system", "user"]
        assert "warm-up" not in json.dumps(body["messages"])


def test_a_429_storm_slows_the_batch_and_loses_nothing(tickets):
    tickets.rate_limited = 25
    started = time.monotonic()
    result = aimu.batch(
        "Classify: {text}", tickets_list(12), agent=agent_for(tickets), concurrency=6, retries=0
    )
    assert [it.status for it in result] == ["ok"] * 12
    assert all(it.attempts == 1 for it in result)  # waiting out a rate limit is not an attempt
    assert tickets.rate_limited == 0
    assert time.monotonic() - started >= 0.1  # the server's Retry-After was waited out


def test_an_item_that_keeps_failing_is_recorded_and_the_batch_goes_on(tickets):
    items = tickets_list(6)
    tickets.fail_prompts = {f"Classify: {items[2]['text']}": 5, f"Classify: {items[4]['text']}": 1}
    result = aimu.batch(
        "Classify: {text}", items, agent=agent_for(tickets), concurrency=3, retries=1
    )
    assert [it.status for it in result] == ["ok", "ok", "failed", "ok", "ok", "ok"]
    failed = result[2]
    assert failed.attempts == 2 and failed.answer is None and failed.value is None
    assert "HTTP 500" in failed.error and "crashed" in failed.error
    assert result[4].attempts == 2 and result[4].ok
    assert result.failed == [failed]


def test_errors_every_item_would_hit_stop_the_batch_at_once(tickets):
    tickets.wire.default = None
    from provider_wire import json_error

    tickets.wire.script(*[json_error(401, {"error": {"message": "bad key"}})] * 3)
    with pytest.raises(AuthenticationError):
        aimu.batch("Classify: {text}", tickets_list(50), agent=agent_for(tickets), concurrency=2)
    assert len(tickets.wire.requests) <= 3


def test_schema_values_are_validated_instances(tickets):
    result = aimu.batch(
        "Reply in JSON. Classify: {text}",
        tickets_list(4),
        agent=agent_for(tickets),
        schema=Ticket,
        concurrency=2,
    )
    assert [type(it.value) for it in result] == [Ticket] * 4
    assert [it.value.label for it in result] == ["urgent", "routine", "routine", "urgent"]
    frame = result.to_pandas()
    assert list(frame["label"]) == ["urgent", "routine", "routine", "urgent"]
    assert "value" not in frame.columns


class Escalation(BaseModel):
    label: Literal["urgent", "routine"]
    priority: int  # the server never sends one


def test_an_answer_that_never_matches_the_schema_fails_that_item(tickets):
    result = aimu.batch(
        "Classify: {text}", tickets_list(2), agent=agent_for(tickets), schema=Escalation, retries=0
    )
    assert [it.status for it in result] == ["failed", "failed"]
    assert "StructuredOutputError" in result[0].error and "priority" in result[0].error
    first = tickets.wire.bodies[0]
    assert first["response_format"]["json_schema"]["name"] == "Escalation"  # native, on the wire


def test_dataframe_rows_fill_the_template_and_keep_their_index(tickets):
    frame = pd.DataFrame(tickets_list(5)).set_index("id")
    result = aimu.batch("Classify: {text}", frame, agent=agent_for(tickets))
    out = result.to_pandas()
    assert list(out.index) == ["T0", "T1", "T2", "T3", "T4"]
    assert list(out["status"]) == ["ok"] * 5
    assert out.loc["T3", "answer"].startswith("urgent")


def test_strings_and_callables_make_prompts_too(tickets):
    strings = aimu.batch("Classify: {item}", ["disk broken", "font ugly"], agent=agent_for(tickets))
    assert [it.answer for it in strings] == ["urgent: disk broken", "routine: font ugly"]
    called = aimu.batch(lambda t: f"Classify: {t['text'].upper()}", tickets_list(1),
                        agent=agent_for(tickets))  # fmt: skip
    assert called[0].prompt == "Classify: TICKET 0: SERVER DOWN"


@pytest.mark.parametrize(
    ("task", "items", "error", "words"),
    [
        ("Classify: {txt}", [{"text": "a"}], ValueError, ["item 0", "txt", "text"]),
        ("Classify this", [{"text": "a"}], ValueError, ["placeholder", "{item}"]),
        ("Classify: {text}", {"text": "a"}, TypeError, ["single item"]),
        (lambda item: 42, [{"text": "a"}], TypeError, ["must return the prompt"]),
        (42, [{"text": "a"}], TypeError, ["template string"]),
    ],
)
def test_a_task_that_cannot_be_filled_is_refused_before_anything_runs(
    tickets, task, items, error, words
):
    with pytest.raises(error) as caught:
        aimu.batch(task, items, agent=agent_for(tickets))
    for word in words:
        assert word in str(caught.value)
    assert tickets.wire.requests == []


@pytest.mark.parametrize(
    ("option", "value"),
    [("concurrency", 0), ("concurrency", True), ("retries", -1), ("backend", "dask")],
)
def test_bad_options_are_refused_with_the_name(tickets, option, value):
    with pytest.raises(ValueError, match=option):
        aimu.batch("Classify: {text}", tickets_list(1), agent=agent_for(tickets), **{option: value})


def test_progress_sees_every_finished_item(tickets):
    seen: list[tuple[int, int, int]] = []

    class Recorder:
        def __init__(self, stats: BatchStats):
            seen.append((stats.done, stats.total, stats.failed))

        def update(self, stats: BatchStats) -> None:
            seen.append((stats.done, stats.total, stats.tokens))

        def close(self, stats: BatchStats) -> None:
            seen.append((-1, stats.done, stats.failed))

    aimu.batch("Classify: {text}", tickets_list(3), agent=agent_for(tickets), progress=Recorder)
    assert seen == [(0, 3, 0), (1, 3, 13), (2, 3, 26), (3, 3, 39), (-1, 3, 0)]


def test_the_checkpoint_skips_what_succeeded_and_retries_what_failed(tickets, tmp_path):
    items = tickets_list(6)
    checkpoint = tmp_path / "runs.jsonl"
    tickets.fail_prompts = {f"Classify: {items[1]['text']}": 1}
    first = aimu.batch("Classify: {text}", items, agent=agent_for(tickets), retries=0,
                       checkpoint=checkpoint)  # fmt: skip
    assert [it.status for it in first] == ["ok", "failed", "ok", "ok", "ok", "ok"]
    assert len(checkpoint.read_text().splitlines()) == 6

    tickets.prompts.clear()
    second = aimu.batch("Classify: {text}", items, agent=agent_for(tickets), retries=0,
                        checkpoint=checkpoint)  # fmt: skip
    assert tickets.prompts == [f"Classify: {items[1]['text']}"]
    assert [it.status for it in second] == ["ok"] * 6
    assert [it.resumed for it in second] == [True, False, True, True, True, True]
    assert [it.answer for it in second] == [it.answer or second[1].answer for it in first]


def test_a_failed_items_error_reaches_the_checkpoint_without_its_secrets(tmp_path):
    from provider_wire import WireServer, json_error

    said = {"error": {"message": "upstream refused Authorization: Bearer tokCk9f8e7d6c5b4a"}}
    checkpoint = tmp_path / "runs.jsonl"
    with WireServer(default=json_error(400, said)) as wire:
        agent = aimu.Agent(aimu.client(f"openai:wire@{wire.url}", max_retries=0))
        (item,) = aimu.batch("Classify: {text}", tickets_list(1), agent=agent, retries=0,
                             checkpoint=checkpoint)  # fmt: skip
    assert item.status == "failed" and "upstream refused" in item.error
    written = checkpoint.read_text()
    assert "Bearer [hidden]" in written and "tokCk9f8e7d6c5b4a" not in written


def test_a_directory_checkpoint_and_schema_values_come_back_validated(tickets, tmp_path):
    options = {"agent": agent_for(tickets), "schema": Ticket, "checkpoint": tmp_path / "ck"}
    (tmp_path / "ck").mkdir()
    aimu.batch("Reply in JSON. Classify: {text}", tickets_list(3), **options)
    tickets.prompts.clear()
    again = aimu.batch("Reply in JSON. Classify: {text}", tickets_list(3), **options)
    assert tickets.prompts == []
    assert all(isinstance(it.value, Ticket) and it.resumed for it in again)
    assert (tmp_path / "ck" / "batch.jsonl").is_file()


def test_a_cut_short_checkpoint_line_is_ignored(tickets, tmp_path):
    checkpoint = tmp_path / "runs.jsonl"
    aimu.batch("Classify: {text}", tickets_list(2), agent=agent_for(tickets), checkpoint=checkpoint)
    with checkpoint.open("a") as file:
        file.write('{"key": "abc", "sta')
    tickets.prompts.clear()
    again = aimu.batch("Classify: {text}", tickets_list(3), agent=agent_for(tickets),
                       checkpoint=checkpoint)  # fmt: skip
    assert len(tickets.prompts) == 1 and [it.ok for it in again] == [True] * 3


RUN_BATCH = textwrap.dedent(
    """
    import signal, sys, json
    import aimu
    from aimu.batch import BatchInterrupted
    # Ctrl-C raises KeyboardInterrupt here even when the test run was started with SIGINT
    # ignored (a background job, some CI runners), which this process would inherit.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    url, checkpoint = sys.argv[1], sys.argv[2]
    items = [{"text": f"ticket {i}"} for i in range(40)]
    agent = aimu.Agent(aimu.client(f"openai:wire@{url}", max_retries=0))
    print("started", flush=True)
    try:
        aimu.batch("Classify: {text}", items, agent=agent, concurrency=2, checkpoint=checkpoint)
    except BatchInterrupted as stop:
        print(json.dumps({"finished": len(stop.result), "total": stop.result.total}), flush=True)
        sys.exit(3)
    """
)


def start_batch_process(tickets, checkpoint: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", RUN_BATCH, tickets.url, str(checkpoint)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout.readline().strip() == "started"
    return process


def wait_for_lines(path: Path, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"the checkpoint never reached {count} lines")


def test_a_killed_batch_resumes_without_redoing_finished_items(tickets, tmp_path):
    checkpoint = tmp_path / "runs.jsonl"
    tickets.delay = 0.05
    process = start_batch_process(tickets, checkpoint)
    wait_for_lines(checkpoint, 8)
    process.kill()
    process.wait(timeout=10)
    finished = {json.loads(line)["index"] for line in checkpoint.read_text().splitlines()}
    assert 8 <= len(finished) < 40
    done_prompts = {f"Classify: ticket {i}" for i in finished}

    tickets.prompts.clear()
    items = [{"text": f"ticket {i}"} for i in range(40)]
    result = aimu.batch("Classify: {text}", items, agent=agent_for(tickets), concurrency=8,
                        checkpoint=checkpoint)  # fmt: skip
    assert not done_prompts & set(tickets.prompts)
    assert len(tickets.prompts) == 40 - len(finished)
    assert [it.answer for it in result] == [f"routine: ticket {i}" for i in range(40)]


def test_ctrl_c_stops_promptly_and_keeps_what_finished(tickets, tmp_path):
    checkpoint = tmp_path / "runs.jsonl"
    tickets.delay = 0.2
    process = start_batch_process(tickets, checkpoint)
    wait_for_lines(checkpoint, 4)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=10)
    assert time.monotonic() - sent < 2.0
    assert process.returncode == 3
    report = json.loads(out.strip().splitlines()[-1])
    assert report["total"] == 40 and 4 <= report["finished"] < 40
    assert len(checkpoint.read_text().splitlines()) == report["finished"]


def test_batch_interrupted_is_a_keyboard_interrupt():
    assert issubclass(BatchInterrupted, KeyboardInterrupt)


async def test_the_async_batch_runs_in_the_callers_loop(tickets):
    result = await aimu.aio.batch("Classify: {item}", ["disk broken"], agent=agent_for(tickets))
    assert result[0].answer == "urgent: disk broken"
