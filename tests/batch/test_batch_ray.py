"""backend="ray": the same batch on a real local Ray cluster (2 CPUs)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

import aimu
from aimu.batch import BatchSetupError
from aimu.tools import builtin


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def make_agent(server, **options) -> aimu.Agent:
    return aimu.Agent(aimu.client(f"openai:wire@{server.url}", max_retries=0), **options)


def test_a_ray_batch_gives_the_same_results_as_a_local_one(ray_cluster, tickets, tmp_path):
    items = [{"text": f"ticket {i}: disk {'broken' if i % 4 == 0 else 'full'}"} for i in range(24)]
    agent = make_agent(tickets, tools=[builtin.calculate])
    local = aimu.batch("Classify: {text}", items, agent=agent, concurrency=6)
    checkpoint = tmp_path / "ray.jsonl"
    remote = aimu.batch("Classify: {text}", items, agent=agent, concurrency=6, backend="ray",
                        checkpoint=checkpoint)  # fmt: skip

    assert [it.answer for it in remote] == [it.answer for it in local]
    assert [it.status for it in remote] == ["ok"] * 24
    assert remote.usage == local.usage
    assert tickets.peak <= 6
    assert len(checkpoint.read_text().splitlines()) == 24

    tickets.prompts.clear()
    resumed = aimu.batch("Classify: {text}", items, agent=agent, backend="ray",
                         checkpoint=checkpoint)  # fmt: skip
    assert tickets.prompts == [] and all(it.resumed for it in resumed)


def test_a_tool_that_cannot_be_pickled_is_named_before_anything_starts(tickets):
    lock = threading.Lock()

    @aimu.tool
    def guarded_count(word: str) -> int:
        """Count letters under a lock."""
        with lock:
            return len(word)

    with pytest.raises(BatchSetupError, match="guarded_count") as caught:
        aimu.batch("Count: {item}", ["a"], agent=make_agent(tickets, tools=[guarded_count]),
                   backend="ray")  # fmt: skip
    assert "backend='local'" in str(caught.value)
    assert tickets.wire.requests == []


def test_a_tool_bound_to_this_process_says_why_it_cannot_go(tickets):
    @aimu.tool
    def python(code: str) -> str:
        """Run code in the notebook."""
        return code

    python.__tool_local_only__ = "it runs in this notebook's kernel and sees its variables"
    with pytest.raises(BatchSetupError, match="notebook's kernel"):
        aimu.batch("Run: {item}", ["1"], agent=make_agent(tickets, tools=[python]), backend="ray")


def test_without_ray_the_error_names_the_extra(tickets, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(BatchSetupError, match=r"aimu-jupyter\[ray\]"):
        aimu.batch("Classify: {item}", ["a"], agent=make_agent(tickets), backend="ray")
