"""Money: the price table, costs in results and progress, and the batch's cost ceiling."""

from __future__ import annotations

import pytest
from summaries import recorder

import aimu
from aimu.batch import BatchSetupError
from aimu.models.prices import format_money


def agent_for(server) -> aimu.Agent:
    return aimu.Agent(aimu.client(f"openai:wire@{server.url}", max_retries=0))


@pytest.fixture
def priced():
    """The loopback model at $1,000 / $2,000 per million tokens: 10 in + 3 out = $0.016 a run."""
    aimu.prices["openai:wire"] = (1000.0, 2000.0)
    yield 0.016
    del aimu.prices["openai:wire"]


def items(count: int) -> list[dict[str, str]]:
    return [{"text": f"ticket {i}"} for i in range(count)]


def test_prices_set_by_name_apply_and_unknown_ones_show_tokens_only(tickets):
    aimu.prices["openai:my-ft-model"] = (0.3, 1.2)
    assert aimu.prices["openai:my-ft-model"].batch_output == pytest.approx(0.6)
    del aimu.prices["openai:my-ft-model"]

    seen = []

    Recorder = recorder(seen)

    result = aimu.batch("Classify: {text}", items(2), agent=agent_for(tickets), progress=Recorder)
    assert result.cost is None and "$" not in repr(result)
    assert not any("$" in line for line in seen) and "26 tokens" in seen[-1]


def test_the_built_in_list_prices_apply_only_to_the_providers_own_api():
    official = aimu.client("openai:gpt-4o-mini", api_key="sk-test")
    elsewhere = aimu.client("openai:gpt-4o-mini@http://127.0.0.1:9/v1")
    assert aimu.prices.for_client(official).input == pytest.approx(0.15)
    assert aimu.prices.for_client(elsewhere) is None
    dated = aimu.client("anthropic:claude-sonnet-4-5-20250929", api_key="k")
    assert aimu.prices.for_client(dated).output == pytest.approx(15.0)


@pytest.mark.parametrize("bad", [(1,), (1, -2), ("1", "2"), (float("nan"), 1), True])
def test_a_price_that_is_not_two_or_four_non_negative_numbers_is_refused(bad):
    with pytest.raises(ValueError, match="US dollars per million tokens"):
        aimu.prices["openai:x"] = bad


def test_money_is_shown_in_dollars():
    assert format_money(0.42) == "$0.42"
    assert format_money(1234.5) == "$1,234.50"
    assert format_money(0.0031) == "$0.0031"


def test_the_result_and_the_progress_show_the_cost_and_its_projection(tickets, priced):
    seen = []

    Recorder = recorder(seen)

    result = aimu.batch("Classify: {text}", items(10), agent=agent_for(tickets), concurrency=1,
                        progress=Recorder)  # fmt: skip
    assert result.cost == pytest.approx(10 * priced)
    assert "$0.00 so far" in seen[0] and "$0.02 so far (~$0.16 in all)" in seen[1]
    assert "$0.16 so far" in seen[-1] and "in all" not in seen[-1]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_the_cost_ceiling_stops_new_items_within_one_item_of_the_limit(
    tickets, priced, tmp_path, concurrency
):
    checkpoint = tmp_path / "runs.jsonl"
    limit = 0.1
    result = aimu.batch("Classify: {text}", items(20), agent=agent_for(tickets),
                        concurrency=concurrency, max_cost=limit,
                        checkpoint=checkpoint)  # fmt: skip
    assert result.stopped == "the cost limit ($0.10)" and result.interrupted
    assert limit - priced <= result.cost <= limit + priced
    assert "stopped for the cost limit ($0.10)" in repr(result)
    ran = len(result)

    tickets.prompts.clear()
    rest = aimu.batch("Classify: {text}", items(20), agent=agent_for(tickets),
                      concurrency=concurrency, checkpoint=checkpoint)  # fmt: skip
    assert len(rest) == 20 and not rest.failed and rest.stopped is None
    assert len(tickets.prompts) == 20 - ran, "what finished under the ceiling is kept"


def test_a_cost_ceiling_needs_a_price(tickets):
    with pytest.raises(BatchSetupError, match=r"aimu.prices\['openai:wire'\] = \(input, output\)"):
        aimu.batch("Classify: {text}", items(2), agent=agent_for(tickets), max_cost=1.0)
