"""The response cache, against the real OpenAI SDK talking to a loopback fake: identical
requests are replayed with no call, changed ones go to the model, tools still run, many
workers share one store, a broken store never stops a run, and no credential is kept."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
import subprocess
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from provider_wire import WireServer, collect, lookup_reply

import aimu
from aimu.models.cache import CacheWarning, ResponseCache
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call, reply

SECRET_KEY = "sk-test-0123456789-do-not-store"
SECRET_HEADER = "header-secret-9876543210"


@pytest.fixture
def wire():
    with WireServer(default=lookup_reply) as server:
        yield server


@pytest.fixture
def store(tmp_path) -> Path:
    return tmp_path / "answers.sqlite"


def model(wire: WireServer, store: Path, **options) -> aimu.ModelClient:
    return aimu.client(f"openai:wire-model@{wire.url}/v1", cache=store, **options)


@dataclass
class Lookup:
    """A tool whose result the test can change, counting its calls."""

    value: str = "up 4%"
    calls: int = 0

    def tool(self):
        @aimu.tool
        def lookup(topic: str) -> str:
            """Look a figure up."""
            self.calls += 1
            return self.value

        return lookup


def chunks(agent: aimu.Agent, task: str, **overrides) -> list:
    return list(agent.run(task, stream=True, **overrides))


# -- replay --------------------------------------------------------------------------------


async def test_an_identical_request_is_answered_from_the_store_in_the_same_pieces(wire, store):
    messages = [{"role": "user", "content": "Say hello."}]
    first = await collect(model(wire, store), messages)
    again = await collect(model(wire, store), messages)
    assert len(wire.requests) == 1
    assert [e for e in again if not hasattr(e, "usage")] == [
        e for e in first if not hasattr(e, "usage")
    ]
    assert len([e for e in first if hasattr(e, "text")]) == 3  # the server's three pieces
    assert first[-1].replayed is None
    assert again[-1].replayed is not None and again[-1].replayed.endswith("Z")
    assert again[-1].usage == first[-1].usage


def test_a_replayed_tool_call_runs_the_tool_again(wire, store):
    data = Lookup()
    first = chunks(aimu.Agent(model(wire, store), tools=[data.tool()]), "How are sales?")
    again = chunks(aimu.Agent(model(wire, store), tools=[data.tool()]), "How are sales?")
    assert len(wire.requests) == 2
    assert data.calls == 2
    results = [c.content["result"] for c in again if c.phase is Phase.TOOL_RESULT]
    assert results == ["up 4%"]
    assert [c.content for c in again if c.phase is Phase.TEXT] == [
        c.content for c in first if c.phase is Phase.TEXT
    ]
    assert "replayed" not in first[-1].content
    assert [turn["iteration"] for turn in again[-1].content["replayed"]] == [1, 2]


def test_a_tool_result_that_changed_sends_the_next_request_to_the_model(wire, store):
    data = Lookup()
    chunks(aimu.Agent(model(wire, store), tools=[data.tool()]), "How are sales?")
    data.value = "down 2%"
    again = chunks(aimu.Agent(model(wire, store), tools=[data.tool()]), "How are sales?")
    assert len(wire.requests) == 3  # the first turn replayed, the second asked anew
    assert wire.bodies[-1]["messages"][-1]["content"] == "down 2%"
    assert again[-1].content["text"] == "The lookup said down 2%."
    assert [turn["iteration"] for turn in again[-1].content["replayed"]] == [1]


class Answer:
    """The schema of the "schema" change (a pydantic model, built when first used)."""

    @staticmethod
    def model():
        from pydantic import BaseModel

        class Figure(BaseModel):
            value: int

        return Figure


def lookup_described(data: Lookup, description: str):
    fn = data.tool()
    fn.__tool_spec__["function"]["description"] = description
    return fn


#: One setting changed for one of three runs: (Agent keywords, run keywords, what it sends).
CHANGES = {
    "system message": ({"system_message": "Be brief."}, {}, "Be brief."),
    "tool spec": ({"tools": "in euros"}, {}, "in euros"),
    "option": ({"generate_kwargs": {"temperature": 0.25}}, {}, '"temperature": 0.25'),
    "thinking": ({"thinking": "low"}, {}, '"reasoning_effort": "low"'),
    "schema": ({}, {"schema": "Figure"}, '"response_format"'),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_makes_exactly_the_changed_requests(wire, store, change):
    agent_change, run_change, sent_text = CHANGES[change]
    data = Lookup()

    def run(prompt: str, changed: bool) -> None:
        options = dict(agent_change) if changed else {}
        tools = [data.tool()]
        if "tools" in options:
            tools = [lookup_described(data, f"Look a figure up, {options.pop('tools')}.")]
        overrides = {"schema": Answer.model()} if changed and run_change else {}
        chunks(aimu.Agent(model(wire, store), tools=tools, **options), prompt, **overrides)

    prompts = ["North?", "South?", "East?"]
    for prompt in prompts:
        run(prompt, changed=False)
    before = len(wire.requests)
    for prompt in prompts:
        run(prompt, changed=prompt == "South?")
    sent = [json.dumps(body) for body in wire.bodies[before:]]
    assert len(sent) == (1 if change == "schema" else 2)  # a schema answer needs no tool
    assert all(_first_user(json.loads(body)) == "South?" for body in sent)
    assert all(sent_text in body for body in sent)
    for prompt in prompts:
        run(prompt, changed=prompt == "South?")
    assert len(wire.requests) == before + len(sent)


def _first_user(body: dict) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


# -- what the store holds --------------------------------------------------------------------


def test_no_credential_reaches_the_store_and_another_key_still_replays(wire, store):
    secret = model(
        wire,
        store,
        api_key=SECRET_KEY,
        default_headers={"X-Api-Key": SECRET_HEADER},
        extra_headers={"X-Other": SECRET_HEADER},
    )
    chunks(aimu.Agent(secret), "Keep this private.")
    assert wire.requests[-1].headers["authorization"] == f"Bearer {SECRET_KEY}"
    other = model(wire, store, api_key="sk-another-key-entirely")
    chunks(aimu.Agent(other), "Keep this private.")
    assert len(wire.requests) == 1
    for path in store.parent.iterdir():
        content = path.read_bytes()
        assert SECRET_KEY.encode() not in content, path
        assert SECRET_HEADER.encode() not in content, path
    assert any(b'" Keep this"' in p.read_bytes() for p in store.parent.iterdir())  # the answer


def test_the_store_is_created_readable_by_its_owner_only(wire, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.delenv("AIMU_CACHE", raising=False)
    client = aimu.client(f"openai:wire-model@{wire.url}/v1", cache=True)
    chunks(aimu.Agent(client), "Hello?")
    folder = tmp_path / "home-cache" / "aimu"
    assert client.store.path == folder / "responses.sqlite"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = list(folder.iterdir())
    assert folder / "responses.sqlite" in files
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_aimu_cache_names_the_store_for_every_client(wire, store, monkeypatch):
    monkeypatch.setenv("AIMU_CACHE", str(store))
    for _ in range(2):
        chunks(aimu.Agent(f"openai:wire-model@{wire.url}/v1"), "Hello?")
    assert len(wire.requests) == 1
    off = aimu.client(f"openai:wire-model@{wire.url}/v1", cache=False)
    chunks(aimu.Agent(off), "Hello?")
    assert len(wire.requests) == 2


# -- a broken store ---------------------------------------------------------------------------


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(8192))


def _truncated(path: Path) -> None:
    filled = ResponseCache(path)
    for number in range(200):
        filled.put(f"key-{number}", "openai", "m", _events(f"answer {number} " * 40))
    filled.close()
    with open(path, "r+b") as file:
        file.truncate(path.stat().st_size // 3)


def _events(text: str):
    from aimu.models.base import TextDelta, TurnEnd

    return [TextDelta(text), TurnEnd()]


@pytest.mark.parametrize("damage", [_garbage, _truncated], ids=["garbage", "truncated"])
def test_a_broken_store_warns_once_and_the_run_proceeds(wire, store, damage):
    damage(store)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        first = aimu.Agent(model(wire, store)).run("Still there?")
        again = aimu.Agent(model(wire, store)).run("Still there?")
    cache_warnings = [w for w in seen if issubclass(w.category, CacheWarning)]
    assert len(cache_warnings) == 1, [str(w.message) for w in cache_warnings]
    assert "moved to answers.sqlite.broken-" in str(cache_warnings[0].message)
    assert first == again == "Answer to: Still there?"
    assert len(wire.requests) == 1  # the fresh store kept the answer
    assert [p.name for p in store.parent.glob("answers.sqlite.broken-*")][:1]


def test_a_store_that_cannot_be_created_warns_once_and_the_runs_go_uncached(wire, tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    unusable = tmp_path / "a-file" / "answers.sqlite"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(2):
            assert aimu.Agent(model(wire, unusable)).run("Hello?") == "Answer to: Hello?"
    assert [issubclass(w.category, CacheWarning) for w in seen] == [True]
    assert "answers are not cached" in str(seen[0].message)
    assert len(wire.requests) == 2


def test_a_database_of_something_else_is_left_alone(wire, store):
    import sqlite3

    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE mine (x)")
    before = store.read_bytes()
    with pytest.warns(CacheWarning, match="something else"):
        assert aimu.Agent(model(wire, store)).run("Hello?") == "Answer to: Hello?"
    assert store.read_bytes() == before


# -- many workers, one store -------------------------------------------------------------------


ROWS = [{"topic": f"topic {n}"} for n in range(24)]


def _batch_worker(url: str, path: str, start: int, results) -> None:
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            rows = [ROWS[(start + n) % len(ROWS)] for n in range(8)]
            client = aimu.client(f"openai:wire-model@{url}/v1", cache=path)
            out = aimu.batch("About {topic}", rows, agent=client, concurrency=4, progress=False)
        results.put({"ok": [item.ok for item in out], "warnings": [str(w.message) for w in seen]})
    except BaseException:
        results.put({"error": traceback.format_exc()})


def test_sixteen_concurrent_batch_workers_share_one_store_and_lose_nothing(wire, store):
    # Spawned, not forked: a fork of a process with threads running (a long test session)
    # can inherit a lock held by one of them and hang.
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [
        context.Process(target=_batch_worker, args=(wire.url, str(store), 3 * n, results))
        for n in range(16)
    ]
    for worker in workers:
        worker.start()
    reports = [results.get(timeout=300) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert [r.get("error") for r in reports] == [None] * 16
    assert all(all(r["ok"]) and len(r["ok"]) == 8 for r in reports)
    assert [w for r in reports for w in r["warnings"]] == []
    stats = ResponseCache(store).stats()
    assert stats.entries == len(ROWS)
    asked = len(wire.requests)
    out = aimu.batch(
        "About {topic}", ROWS, agent=model(wire, store), concurrency=16, progress=False
    )
    assert all(item.ok for item in out)
    assert len(wire.requests) == asked  # every row was kept by some worker


def test_a_batch_run_again_with_added_rows_asks_only_about_the_new_rows(wire, store):
    first = aimu.batch("About {topic}", ROWS[:5], agent=model(wire, store), progress=False)
    assert len(wire.requests) == 5
    more = aimu.batch("About {topic}", ROWS[:7], agent=model(wire, store), progress=False)
    assert len(wire.requests) == 7
    assert more.values[:5] == first.values


# -- clones and sub-agents ----------------------------------------------------------------------


def test_clones_share_the_store(store):
    scripted = aimu.client(ScriptedClient([reply("Once.")]), cache=store)
    assert aimu.Agent(scripted).run("Hi") == "Once."
    clone = scripted.clone()
    assert clone.store is scripted.store
    assert aimu.Agent(clone).run("Hi") == "Once."
    assert clone.inner.requests == []


def test_another_script_is_another_model(store):
    aimu.Agent(aimu.client(ScriptedClient(["One."]), cache=store)).run("Hi")
    other = aimu.client(ScriptedClient(["Two."]), cache=store)
    assert aimu.Agent(other).run("Hi") == "Two."


def test_a_failed_turn_is_not_kept(store):
    @aimu.tool
    def nothing() -> str:
        """Do nothing."""
        return "done"

    failing = aimu.client(ScriptedClient([call("nothing"), RuntimeError("boom")]), cache=store)
    with pytest.raises(RuntimeError, match="boom"):
        aimu.Agent(failing, tools=[nothing]).run("Hi")
    assert ResponseCache(store).stats().entries == 1  # the whole first turn only


# -- the command line ---------------------------------------------------------------------------


def aimu_cache(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aimu", "cache", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_aimu_cache_shows_size_and_hits_and_clears_by_model_and_date(wire, store):
    chunks(aimu.Agent(model(wire, store)), "One?")
    chunks(aimu.Agent(model(wire, store)), "One?")
    chunks(aimu.Agent(aimu.client(ScriptedClient(["Hi."], model="demo"), cache=store)), "Two?")
    shown = aimu_cache("--path", str(store))
    assert shown.returncode == 0, shown.stderr
    assert "2 answers" in shown.stdout and "1 hit" in shown.stdout
    assert "openai:wire-model" in shown.stdout and "scripted:demo" in shown.stdout
    cleared = aimu_cache("clear", "--model", "scripted:demo", "--path", str(store))
    assert cleared.stdout.strip() == f"Cleared 1 answer from {store}."
    kept = aimu_cache("clear", "--before", "2000-01-01", "--path", str(store))
    assert "Cleared 0 answers" in kept.stdout
    assert ResponseCache(store).stats().entries == 1
    refused = aimu_cache("clear", "--path", str(store))
    assert refused.returncode == 2 and "say what to clear" in refused.stderr
    everything = aimu_cache("clear", "--older-than", "0", "--path", str(store))
    assert "Cleared 1 answer" in everything.stdout
    assert ResponseCache(store).stats().entries == 0
