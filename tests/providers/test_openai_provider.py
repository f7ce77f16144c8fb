"""The ``openai`` provider against a loopback server speaking Chat Completions SSE."""

from __future__ import annotations

import asyncio
import json
import logging
import threading

import pytest
from provider_wire import (
    WireServer,
    collect,
    json_error,
    openai_chunk,
    openai_sse,
    openai_turn,
    tool_spec,
)

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
from aimu.models.errors import ModelConnectionError, RateLimitError
from aimu.models.providers.openai import OpenAIClient

SECRET = "sk-test-Zq7PlM2v9XfA1bC3dE5gH7jK"


@aimu.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: First number.
        b: Second number.
    """
    return a + b


def local(server: WireServer, **options) -> OpenAIClient:
    return aimu.client(f"openai:wire-model@{server.url}/v1", **options)


async def test_text_and_parallel_tool_call_deltas_reassemble(server):
    interleaved = [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "Adding "}),
        openai_chunk({"content": "both."}),
        openai_chunk(
            {"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                             "function": {"name": "add", "arguments": ""}}]}
        ),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 1'}}]}),
        openai_chunk(
            {"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                             "function": {"name": "add", "arguments": '{"a"'}}]}
        ),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": ', "b": 2}'}}]}),
        openai_chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': 3, "b": 4}'}}]}),
        openai_chunk({}, "tool_calls"),
        openai_chunk(None, usage={"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}),
    ]  # fmt: skip
    server.script(openai_sse(interleaved))
    events = await collect(local(server), [{"role": "user", "content": "hi"}], [tool_spec()])
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Adding both."
    calls = [e for e in events if isinstance(e, ToolCallRequest)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_a", "add", {"a": 1, "b": 2}),
        ("call_b", "add", {"a": 3, "b": 4}),
    ]
    assert events[-1] == TurnEnd(Usage(30, 9), "tool_calls")


async def test_request_is_what_chat_completions_documents(server):
    server.script(openai_turn("ok"))
    transcript = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "add 1 and 2"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_9", "type": "function",
             "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]},
        {"role": "tool", "tool_call_id": "call_9", "name": "add", "content": "3"},
    ]  # fmt: skip
    await collect(local(server, temperature=0.25), transcript, [tool_spec()])
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    body = request.json
    assert body["model"] == "wire-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.25
    assert body["tools"] == [tool_spec()]
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assistant = body["messages"][2]
    assert assistant["content"] == ""  # never None: some chat templates crash on it
    assert assistant["tool_calls"][0]["id"] == "call_9"
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_9", "content": "3"}


async def test_reasoning_fields_and_inline_think_blocks_stream_as_thinking(server):
    server.script(
        openai_turn("Four.", reasoning="2+2 is 4"),
        openai_sse(
            [openai_chunk({"content": p}) for p in ["<thi", "nk>weigh", "ing</th", "ink>\n\nDone"]]
            + [openai_chunk({}, "stop")]
        ),
    )
    client = local(server)
    first = await collect(client, [{"role": "user", "content": "2+2?"}])
    second = await collect(client, [{"role": "user", "content": "again"}])
    for events, thought, answer in ((first, "2+2 is 4", "Four."), (second, "weighing", "Done")):
        assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == thought
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == answer


async def test_agent_runs_tool_round_trip_with_matching_ids_and_summed_usage(server):
    server.script(
        openai_turn("", [("call_7", "add", '{"a": 40, "b": 2}')], usage=(20, 5)),
        openai_turn("It is 42.", usage=(35, 4)),
    )
    agent = aimu.aio.Agent(local(server), tools=[add])
    chunks = [chunk async for chunk in agent.stream("What is 40 + 2?")]
    done = chunks[-1]
    assert done.content["text"] == "It is 42."
    assert done.content["usage"] == {"input_tokens": 55, "output_tokens": 9}
    second = server.requests[1].json["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "call_7"
    assert second[-1] == {"role": "tool", "tool_call_id": "call_7", "content": "42"}


async def test_malformed_tool_arguments_become_a_tool_message_not_a_crash(server):
    server.script(
        openai_turn("", [("call_bad", "add", '{"a": 1, "b": ')]),
        openai_turn("Sorry, let me answer directly."),
    )
    agent = aimu.aio.Agent(local(server), tools=[add])
    answer = await agent.run("add")
    assert answer == "Sorry, let me answer directly."
    tool_message = server.requests[1].json["messages"][-1]
    assert tool_message["tool_call_id"] == "call_bad"
    assert "not valid JSON" in tool_message["content"]


def test_missing_key_for_openai_itself_names_the_variable_before_any_request():
    with pytest.raises(MissingCredentialsError, match="OPENAI_API_KEY"):
        aimu.client("openai:gpt-4o-mini")


async def test_server_at_custom_url_runs_without_a_key(server):
    server.script(openai_turn("fine"))
    events = await collect(local(server), [{"role": "user", "content": "hi"}])
    assert events[-1].stop_reason == "stop"


async def test_openai_key_is_not_sent_to_a_base_url_given_in_code(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server.script(openai_turn("fine"))
    await collect(local(server), [{"role": "user", "content": "hi"}])
    assert SECRET not in json.dumps(server.requests[0].headers)


async def test_openai_base_url_variable_pairs_with_openai_api_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    server.script(openai_turn("fine"))
    await collect(aimu.client("openai:wire-model"), [{"role": "user", "content": "hi"}])
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_401_names_the_variable_and_never_the_key(server, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    echo = {
        "error": {"message": f"Incorrect API key provided: {SECRET}", "code": "invalid_api_key"}
    }
    server.script(json_error(401, echo))
    client = aimu.client("openai:wire-model")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(AuthenticationError) as caught:
        await collect(client, [{"role": "user", "content": "hi"}])
    error = caught.value
    assert "OPENAI_API_KEY" in str(error)
    assert "401" in str(error)
    assert error.__cause__ is None and error.__context__ is None
    for text in (str(error), repr(error), repr(client), caplog.text):
        assert SECRET not in text


async def test_429_is_retried_by_the_sdk_then_succeeds(server):
    server.script(
        json_error(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "5"}),
        openai_turn("made it"),
    )
    events = await collect(local(server), [{"role": "user", "content": "hi"}])
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "made it"
    assert len(server.requests) == 2


async def test_429_that_never_clears_is_a_rate_limit_error(server):
    busy = json_error(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "5"})
    server.script(busy, busy)
    with pytest.raises(RateLimitError, match="429"):
        await collect(local(server, max_retries=1), [{"role": "user", "content": "hi"}])
    assert len(server.requests) == 2


async def test_500_after_exhausted_retries_is_a_clear_error(server):
    broken = json_error(500, {"error": {"message": "upstream exploded"}}, {"retry-after-ms": "5"})
    server.script(broken, broken, broken)
    with pytest.raises(ModelError, match=r"HTTP 500.*retries ran out: upstream exploded"):
        await collect(local(server, max_retries=2), [{"role": "user", "content": "hi"}])
    assert len(server.requests) == 3


async def test_context_overflow_raises_its_own_error(server):
    server.script(
        json_error(
            400,
            {"error": {"message": "This model's maximum context length is 8192 tokens.",
                       "code": "context_length_exceeded"}},
        )
    )  # fmt: skip
    with pytest.raises(ContextOverflowError, match="context window"):
        await collect(local(server), [{"role": "user", "content": "x" * 100}])


async def test_connection_refused_names_the_url(closed_port_url):
    client = aimu.client(f"openai:m@{closed_port_url}/v1", max_retries=0)
    with pytest.raises(ModelConnectionError, match=closed_port_url) as raised:
        await collect(client, [{"role": "user", "content": "hi"}])
    assert str(raised.value).count(closed_port_url) == 1, raised.value  # said once


async def test_error_event_inside_the_stream_is_reported(server):
    server.script(
        openai_sse(
            [openai_chunk({"content": "Part"}), {"error": {"message": "model crashed"}}],
            done=False,
        )
    )
    with pytest.raises(ModelError, match="model crashed"):
        await collect(local(server), [{"role": "user", "content": "hi"}])


async def test_interrupt_mid_stream_leaves_a_valid_transcript(server):
    gate = threading.Event()
    half_sent_call = openai_turn(
        "Let me add.", [("call_1", "add", '{"a": 1, "b": 2}')], parts=2, gate=gate, gate_at=5
    )
    server.script(half_sent_call, openai_turn("Fresh answer."))
    agent = aimu.aio.Agent(local(server), tools=[add])
    text_seen = asyncio.Event()

    async def run() -> None:
        async for chunk in agent.stream("add 1 and 2"):
            if chunk.phase is Phase.TEXT:
                text_seen.set()

    task = asyncio.create_task(run())
    await text_seen.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent.messages[-1]["role"] == "assistant"
    assert not any(m.get("tool_calls") for m in agent.messages)
    assert await agent.run("try again") == "Fresh answer."
    resent = server.requests[1].json["messages"]
    assert [m["role"] for m in resent] == ["user", "assistant", "user"]
    assert resent[1]["content"].startswith("Let me")


def test_unknown_option_fails_when_the_client_is_built(server):
    with pytest.raises(TypeError, match="temprature"):
        local(server, temprature=0.2)


def test_clone_is_independent_and_keeps_the_options(server):
    client = local(server, temperature=0.5)
    twin = client.clone()
    assert twin is not client
    assert twin.name == client.name == f"openai:wire-model@{server.url}/v1"
    assert aimu.client(client.name).base_url == client.base_url
    assert twin._params == {"temperature": 0.5}


def test_model_id_is_required():
    with pytest.raises(ValueError, match="name a model"):
        aimu.client("openai:@http://127.0.0.1:1/v1")


def test_chunks_reach_the_sync_agent_too(server):
    server.script(openai_turn("Hello from sync."))
    agent = aimu.Agent(local(server))
    chunks = list(agent.run("hi", stream=True))
    assert "".join(c.content for c in chunks if c.phase is Phase.TEXT) == "Hello from sync."


def test_one_client_serves_several_sync_runs(server):
    """Each sync run has its own event loop; the client must not reuse a dead loop's pool."""
    server.default = openai_turn("Again.")
    agent = aimu.Agent(local(server))
    assert [agent.run("one"), agent.run("two"), agent.run("three")] == ["Again."] * 3


async def test_keepalive_comments_between_events_are_ignored(server):
    turn = openai_turn("Still here.")
    turn.pieces = [piece for p in turn.pieces for piece in (b": PROCESSING\n\n", p)]
    server.script(turn)
    events = await collect(local(server), [{"role": "user", "content": "hi"}])
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Still here."


async def test_connection_dropped_mid_answer_is_a_connection_error(server):
    server.script(openai_turn("This answer never ends", parts=4, drop_at=3))
    with pytest.raises(ModelConnectionError, match="broke mid-answer"):
        await collect(local(server), [{"role": "user", "content": "hi"}])
