"""The ``anthropic`` provider against a loopback server speaking Messages API SSE events."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from provider_wire import WireServer, anthropic_sse, anthropic_turn, collect, json_error, tool_spec

import aimu
import aimu.aio
from aimu.models import (
    AuthenticationError,
    ContextOverflowError,
    MissingCredentialsError,
    ModelError,
    Phase,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    TurnEnd,
    Usage,
)
from aimu.models.errors import ModelConnectionError

SECRET = "sk-ant-test-8Hq2LmN4pR6tV8xZ0bD2"


@aimu.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: First number.
        b: Second number.
    """
    return a + b


def claude(server: WireServer, **options):
    options.setdefault("api_key", SECRET)
    return aimu.client("anthropic:claude-wire", base_url=server.url, **options)


async def test_stream_of_events_reassembles_text_thinking_and_tool_uses(server):
    server.script(
        anthropic_turn(
            "Adding both.",
            [("toolu_a", "add", '{"a": 1, "b": 2}'), ("toolu_b", "add", '{"a": 3, "b": 4}')],
            thinking="Two sums needed.",
            usage=(50, 17),
        )
    )
    events = await collect(claude(server), [{"role": "user", "content": "hi"}], [tool_spec()])
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "Two sums needed."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Adding both."
    calls = [(e.id, e.name, e.arguments) for e in events if isinstance(e, ToolCallRequest)]
    assert calls == [("toolu_a", "add", {"a": 1, "b": 2}), ("toolu_b", "add", {"a": 3, "b": 4})]
    assert events[-1] == TurnEnd(Usage(50, 17), "tool_use")


async def test_system_prompt_tool_results_and_tool_specs_are_translated(server):
    server.script(anthropic_turn("ok"))
    transcript = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "add twice"},
        {"role": "assistant", "content": "On it.", "tool_calls": [
            {"id": "toolu_1", "type": "function",
             "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
            {"id": "toolu_2", "type": "function",
             "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "name": "add", "content": "3"},
        {"role": "tool", "tool_call_id": "toolu_2", "name": "add", "content": "7"},
        {"role": "system", "content": "Answer in French."},
    ]  # fmt: skip
    await collect(claude(server, max_tokens=333), transcript, [tool_spec()])
    [request] = server.requests
    assert request.path == "/v1/messages"
    body = request.json
    assert body["system"] == "Be brief.\n\nAnswer in French."
    assert all(m["role"] != "system" for m in body["messages"])
    assert body["max_tokens"] == 333
    assert body["stream"] is True
    assert body["tools"] == [
        {
            "name": "add",
            "description": "The add tool.",
            "input_schema": tool_spec()["function"]["parameters"],
        }
    ]
    user, assistant, results = body["messages"]
    assert user == {"role": "user", "content": [{"type": "text", "text": "add twice"}]}
    assert assistant["content"] == [
        {"type": "text", "text": "On it."},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
        {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {"a": 3, "b": 4}},
    ]
    assert results == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "7"},
        ],
    }


async def test_agent_round_trip_sends_thinking_back_with_its_signature(server):
    server.script(
        anthropic_turn("", [("toolu_9", "add", '{"a": 40, "b": 2}')], thinking="Use add."),
        anthropic_turn("It is 42."),
    )
    agent = aimu.aio.Agent(claude(server), tools=[add])
    assert await agent.run("What is 40 + 2?") == "It is 42."
    _, assistant, results = server.requests[1].json["messages"]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "Use add.",
        "signature": "sig-wire",
    }
    assert assistant["content"][1]["id"] == "toolu_9"
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_9", "content": "42"}
    ]


async def test_malformed_tool_input_becomes_a_tool_message(server):
    server.script(
        anthropic_turn("", [("toolu_x", "add", '{"a": 1, "b"')]),
        anthropic_turn("I will answer without it."),
    )
    agent = aimu.aio.Agent(claude(server), tools=[add])
    assert await agent.run("add") == "I will answer without it."
    result = server.requests[1].json["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "toolu_x"
    assert "not valid JSON" in result["content"]


def test_missing_key_names_the_variable_before_any_request():
    with pytest.raises(MissingCredentialsError, match="ANTHROPIC_API_KEY"):
        aimu.client("anthropic:claude-sonnet-4-5")


async def test_key_from_the_environment_is_sent_to_anthropic_base_url(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.script(anthropic_turn("ok"))
    await collect(aimu.client("anthropic:claude-wire"), [{"role": "user", "content": "hi"}])
    assert SECRET in json.dumps(server.requests[0].headers)


async def test_401_names_the_variable_and_never_the_key(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.script(
        json_error(
            401,
            {"type": "error",
             "error": {"type": "authentication_error", "message": f"invalid x-api-key {SECRET}"}},
        )
    )  # fmt: skip
    client = aimu.client("anthropic:claude-wire")
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY") as caught:
        await collect(client, [{"role": "user", "content": "hi"}])
    for text in (str(caught.value), repr(caught.value), repr(client)):
        assert SECRET not in text


async def test_overloaded_then_success_is_retried_by_the_sdk(server):
    server.script(
        json_error(
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            {"retry-after-ms": "5"},
        ),
        anthropic_turn("made it"),
    )
    events = await collect(claude(server), [{"role": "user", "content": "hi"}])
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "made it"
    assert len(server.requests) == 2


async def test_prompt_too_long_is_a_context_overflow(server):
    server.script(
        json_error(
            400,
            {"type": "error",
             "error": {"type": "invalid_request_error",
                       "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
        )
    )  # fmt: skip
    with pytest.raises(ContextOverflowError, match="210000 tokens"):
        await collect(claude(server), [{"role": "user", "content": "long"}])


async def test_error_event_mid_stream_is_reported(server):
    events = [
        {"type": "message_start", "message": {
            "id": "m", "type": "message", "role": "assistant", "model": "x", "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]  # fmt: skip
    server.script(anthropic_sse(events))
    with pytest.raises(ModelError, match="Overloaded"):
        await collect(claude(server, max_retries=0), [{"role": "user", "content": "hi"}])


async def test_connection_refused_names_the_url(closed_port_url):
    client = aimu.client(
        "anthropic:claude-wire", base_url=closed_port_url, api_key=SECRET, max_retries=0
    )
    with pytest.raises(ModelConnectionError, match=closed_port_url) as raised:
        await collect(client, [{"role": "user", "content": "hi"}])
    assert str(raised.value).count(closed_port_url) == 1, raised.value  # said once


async def test_interrupt_mid_tool_use_leaves_a_valid_transcript(server):
    gate = threading.Event()
    server.script(
        anthropic_turn(
            "Adding.", [("toolu_1", "add", '{"a": 1, "b": 2}')], parts=1, gate=gate, gate_at=6
        ),
        anthropic_turn("Fresh answer."),
    )
    agent = aimu.aio.Agent(claude(server), tools=[add])
    text_seen = asyncio.Event()

    async def run() -> None:
        async for chunk in agent.stream("add"):
            if chunk.phase is Phase.TEXT:
                text_seen.set()

    task = asyncio.create_task(run())
    await text_seen.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await agent.run("again") == "Fresh answer."
    roles = [m["role"] for m in server.requests[1].json["messages"]]
    assert roles == ["user", "assistant", "user"]


def test_unknown_option_fails_when_the_client_is_built(server):
    with pytest.raises(TypeError, match="max_tokenz"):
        claude(server, max_tokenz=5)


def test_one_client_serves_several_sync_runs(server):
    server.default = anthropic_turn("Again.")
    agent = aimu.Agent(claude(server))
    assert [agent.run("one"), agent.run("two")] == ["Again.", "Again."]
