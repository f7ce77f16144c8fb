"""Batch backends: the OpenAI Batch API and Anthropic Message Batches, against loopback fakes
speaking their wire formats, driven by the official SDKs."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from summaries import recorder

import aimu
from aimu.batch import BatchRun, BatchSetupError

sys.path.insert(0, str(Path(__file__).parents[1] / "providers"))

from batch_wire import (
    AnthropicBatchFake,
    Clock,
    OpenAIBatchFake,
    last_user_text,
    tool_result,
)

BACKENDS = {
    "openai-batch": (OpenAIBatchFake, "openai"),
    "anthropic-batch": (AnthropicBatchFake, "anthropic"),
}


@pytest.fixture(params=list(BACKENDS))
def fake(request):
    """A fake of each provider's batch API; ``fake.backend`` and ``fake.agent(...)`` use it."""
    cls, provider = BACKENDS[request.param]
    server = cls(latency=0.2)
    server.backend = request.param
    server.provider = provider

    def agent(**options):
        client = aimu.client(f"{provider}:wire", base_url=server.url, api_key="sk-test",
                             max_retries=0)  # fmt: skip
        return aimu.Agent(client, **options)

    server.agent = agent
    yield server
    server.close()


def tickets(count: int) -> list[dict[str, str]]:
    return [
        {"text": f"ticket {i}: server {'down' if i % 3 == 0 else 'slow'}"} for i in range(count)
    ]


def run(fake, items, **options):
    options.setdefault("agent", fake.agent())
    options.setdefault("progress", False)
    return aimu.batch("Classify: {text}", items, backend=fake.backend, poll_interval=0.02,
                      **options)  # fmt: skip


def test_results_come_back_in_input_order_from_one_submitted_batch(fake):
    items = tickets(12)
    result = run(fake, items)

    assert fake.creations == 1
    assert [it.index for it in result] == list(range(12)) and not result.failed
    for item, outcome in zip(items, result, strict=True):
        expected = "urgent" if "down" in item["text"] else "routine"
        assert outcome.answer == f"{expected}: {item['text'].rsplit(' ', 1)[-1]}"
        assert outcome.usage == {"input_tokens": 10, "output_tokens": 3}
    (batch,) = fake.batches.values()
    assert len(batch.requests) == 12
    assert fake.polls >= 2, "the batch was polled until it ended"


def test_the_progress_shows_the_provider_status_and_the_round(fake):
    lines: list[str] = []

    Recorder = recorder(lines)

    run(fake, tickets(4), progress=Recorder)
    status = "in_progress"
    assert any("round 1: batch " in line and f" {status}: 4 submitted" in line for line in lines)
    assert "4/4 done" in lines[-1]


def test_a_two_round_tool_agent_finishes_through_two_submissions(fake):
    @aimu.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def brain(body):
        result = tool_result(body)
        if result is None:
            number = int(last_user_text(body).rsplit(" ", 1)[-1])
            return [("add", {"a": number, "b": 100})]
        return f"The sum is {result}."

    fake.brain = brain
    rounds: list[int] = []

    Recorder = recorder(rounds, lambda stats: stats.round)

    result = run(fake, [{"text": f"add to {n}"} for n in range(5)], agent=fake.agent(tools=[add]),
                 progress=Recorder)  # fmt: skip

    assert fake.creations == 2 and set(rounds) == {0, 1, 2}
    assert [it.answer for it in result] == [f"The sum is {n + 100}." for n in range(5)]
    assert [it.usage["input_tokens"] for it in result] == [20] * 5  # two turns each
    first, second = fake.batches.values()
    assert len(first.requests) == len(second.requests) == 5


def test_an_expired_batch_keeps_what_completed_and_retries_the_rest(fake):
    fake.latency, fake.expires_after = 1.0, 0.5
    items = tickets(10)
    result = run(fake, items)

    assert not result.failed and [it.index for it in result] == list(range(10))
    first, *later = fake.batches.values()
    assert len(first.requests) == 10
    retried = sum(len(b.requests) for b in later)
    assert 0 < retried < 10, "only the expired requests were sent again"
    assert {it.attempts for it in result} == {1, 2}


def test_a_partly_failed_batch_retries_only_the_failed_requests(fake):
    items = tickets(6)
    fake.fail = {f"Classify: {items[1]['text']}": 1, f"Classify: {items[4]['text']}": 1}
    result = run(fake, items)

    assert not result.failed
    first, second = fake.batches.values()
    assert len(first.requests) == 6 and len(second.requests) == 2
    assert [it.attempts for it in result] == [1, 2, 1, 1, 2, 1]


def test_failures_that_outlast_the_retries_are_failed_items(fake):
    items = tickets(3)
    fake.fail = {f"Classify: {items[2]['text']}": 5}
    result = run(fake, items, retries=1)
    assert [it.status for it in result] == ["ok", "ok", "failed"]
    assert "the model crashed" in result[2].error
    assert fake.creations == 2


def test_cancelling_keeps_what_finished_and_does_not_retry_the_rest(fake):
    clock = fake.clock = Clock(speed=0.0)  # frozen until advanced
    fake.latency = 100.0

    async def main():
        run_ = BatchRun("Classify: {text}", tickets(10), agent=fake.agent(),
                        backend=fake.backend, poll_interval=0.02, progress=False)  # fmt: skip
        items = []

        async def cancel_midway():
            while not fake.polls:
                await asyncio.sleep(0.01)
            clock.advance(40.0)  # four of ten done
            await run_.cancel()

        canceller = asyncio.ensure_future(cancel_midway())
        async for item in run_:
            items.append(item)
        await canceller
        return run_.result()

    result = asyncio.run(main())
    assert fake.cancels == 1 and fake.creations == 1
    assert [it.status for it in result] == ["ok"] * 4 + ["failed"] * 6
    assert all("cancelled" in it.error for it in result.failed)
    assert all(it.attempts == 1 for it in result)


def test_the_checkpoint_holds_the_batch_id_and_a_rerun_polls_it_instead_of_paying_again(
    fake, tmp_path
):
    clock = fake.clock = Clock(speed=0.0)
    fake.latency = 10.0
    checkpoint = tmp_path / "runs.jsonl"

    async def start_and_abandon():
        run_ = BatchRun("Classify: {text}", tickets(5), agent=fake.agent(), checkpoint=checkpoint,
                        backend=fake.backend, poll_interval=0.02, progress=False)  # fmt: skip
        task = asyncio.ensure_future(_drain(run_))
        while not fake.polls:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(start_and_abandon())
    (line,) = [json.loads(x) for x in checkpoint.read_text().splitlines()]
    (batch_id,) = fake.batches
    assert line["batch"] == batch_id and len(line["requests"]) == 5

    clock.advance(20.0)
    result = run(fake, tickets(5), checkpoint=checkpoint)
    assert fake.creations == 1
    assert not result.failed and len(result) == 5


def test_the_async_batch_runs_on_a_batch_backend_too(fake):
    async def main():
        return await aimu.aio.batch(
            "Classify: {text}",
            tickets(3),
            agent=fake.agent(),
            backend=fake.backend,
            poll_interval=0.02,
            progress=False,
        )

    result = asyncio.run(main())
    assert [it.ok for it in result] == [True] * 3 and fake.creations == 1


async def _drain(run_):
    async for _ in run_:
        pass


def test_a_batch_backend_needs_the_provider_it_names(fake):
    other = "anthropic" if fake.provider == "openai" else "openai"
    agent = aimu.Agent(aimu.client(f"{other}:wire", base_url=fake.url, api_key="k"))
    with pytest.raises(BatchSetupError, match=f"use a '{fake.provider}:MODEL' model"):
        run(fake, tickets(1), agent=agent)


def test_batch_prices_are_half_the_list_price_on_a_batch_backend(fake):
    aimu.prices[f"{fake.provider}:wire"] = (1000.0, 2000.0)
    try:
        result = run(fake, tickets(4))
    finally:
        del aimu.prices[f"{fake.provider}:wire"]
    listed = 4 * (10 * 1000.0 + 3 * 2000.0) / 1e6
    assert result.cost == pytest.approx(listed / 2)
    assert ", $0.03>" in repr(result)
