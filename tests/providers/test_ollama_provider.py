"""The ``ollama`` provider against a loopback server speaking Ollama's NDJSON chat stream."""

from __future__ import annotations

import asyncio
import threading

import pytest
from provider_wire import WireServer, collect, json_error, ollama_ndjson, ollama_turn, tool_spec

import aimu
import aimu.aio
from aimu.models import (
    ContextOverflowError,
    ModelError,
    Phase,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    TurnEnd,
    Usage,
)
from aimu.models.errors import ModelConnectionError, ModelNotFoundError


@aimu.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: First number.
        b: Second number.
    """
    return a + b


def llama(server: WireServer, **options):
    return aimu.client(f"ollama:qwen3:8b@{server.url}", retry_backoff=0.01, **options)


async def test_ndjson_stream_yields_text_thinking_tool_calls_and_usage(server):
    server.script(
        ollama_turn(
            "Adding.",
            [("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})],
            thinking="Two sums.",
            usage=(41, 13),
        )
    )
    events = await collect(llama(server), [{"role": "user", "content": "hi"}], [tool_spec()])
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "Two sums."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Adding."
    calls = [e for e in events if isinstance(e, ToolCallRequest)]
    assert [(c.name, c.arguments) for c in calls] == [
        ("add", {"a": 1, "b": 2}),
        ("add", {"a": 3, "b": 4}),
    ]
    assert len({c.id for c in calls}) == 2
    assert events[-1] == TurnEnd(Usage(41, 13), "tool_calls")


async def test_model_id_with_colons_and_options_reach_the_server(server):
    server.script(ollama_turn("ok"))
    client = llama(server, temperature=0, num_ctx=8192, think=True, keep_alive="5m")
    transcript = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "add"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "add", "content": "3"},
    ]  # fmt: skip
    await collect(client, transcript, [tool_spec()])
    [request] = server.requests
    assert request.path == "/api/chat"
    body = request.json
    assert body["model"] == "qwen3:8b"
    assert body["think"] is True
    assert body["keep_alive"] == "5m"
    assert body["options"] == {"temperature": 0, "num_ctx": 8192}
    assert body["tools"][0]["function"]["name"] == "add"
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][2].get("content", "") == ""  # the SDK drops empty fields
    assert body["messages"][2]["tool_calls"] == [
        {"function": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    ]
    assert body["messages"][3] == {"role": "tool", "content": "3", "tool_name": "add"}


async def test_agent_round_trip_through_ollama(server):
    server.script(ollama_turn("", [("add", {"a": 40, "b": 2})]), ollama_turn("It is 42."))
    agent = aimu.aio.Agent(llama(server), tools=[add])
    assert await agent.run("What is 40 + 2?") == "It is 42."
    assert server.requests[1].json["messages"][-1] == {
        "role": "tool",
        "content": "42",
        "tool_name": "add",
    }


async def test_503_then_success_is_retried(server):
    server.script(json_error(503, {"error": "loading model"}), ollama_turn("made it"))
    events = await collect(llama(server), [{"role": "user", "content": "hi"}])
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "made it"
    assert len(server.requests) == 2


async def test_500_after_exhausted_retries_is_a_clear_error(server):
    broken = json_error(500, {"error": "llama runner process has terminated"})
    server.script(broken, broken)
    with pytest.raises(ModelError, match=r"HTTP 500.*retries ran out.*runner process"):
        await collect(llama(server, max_retries=1), [{"role": "user", "content": "hi"}])
    assert len(server.requests) == 2


async def test_missing_model_says_how_to_pull_it(server):
    server.script(json_error(404, {"error": "model 'qwen3:8b' not found"}))
    with pytest.raises(ModelNotFoundError, match="ollama pull qwen3:8b"):
        await collect(llama(server), [{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1


async def test_context_overflow_raises_its_own_error(server):
    server.script(json_error(400, {"error": "input length exceeds the context length"}))
    with pytest.raises(ContextOverflowError):
        await collect(llama(server), [{"role": "user", "content": "long"}])


async def test_error_line_inside_the_stream_is_reported(server):
    server.script(ollama_ndjson([{"error": "an error was encountered while running the model"}]))
    with pytest.raises(ModelError, match="while running the model"):
        await collect(llama(server), [{"role": "user", "content": "hi"}])


async def test_connection_refused_names_the_host_and_the_variable(closed_port_url):
    client = aimu.client(f"ollama:qwen3@{closed_port_url}")
    with pytest.raises(ModelConnectionError, match="OLLAMA_HOST") as caught:
        await collect(client, [{"role": "user", "content": "hi"}])
    assert closed_port_url in str(caught.value)


async def test_ollama_host_variable_is_used(server, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    server.script(ollama_turn("ok"))
    await collect(aimu.client("ollama:qwen3"), [{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1


async def test_interrupt_mid_stream_leaves_a_valid_transcript(server):
    gate = threading.Event()
    server.script(
        ollama_turn("Partial answer here.", parts=3, gate=gate, gate_at=2),
        ollama_turn("Fresh answer."),
    )
    agent = aimu.aio.Agent(llama(server), tools=[add])
    text_seen = asyncio.Event()

    async def run() -> None:
        async for chunk in agent.stream("hi"):
            if chunk.phase is Phase.TEXT:
                text_seen.set()

    task = asyncio.create_task(run())
    await text_seen.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent.messages[-1]["role"] == "assistant"
    assert await agent.run("again") == "Fresh answer."


def test_unknown_option_fails_when_the_client_is_built(server):
    with pytest.raises(TypeError, match="num_ctxx"):
        llama(server, num_ctxx=5)


def test_one_client_serves_several_sync_runs(server):
    server.default = ollama_turn("Again.")
    agent = aimu.Agent(llama(server))
    assert [agent.run("one"), agent.run("two")] == ["Again.", "Again."]
