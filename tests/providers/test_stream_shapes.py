"""Stream events of the wrong shape end the turn with a ModelError, never a raw exception.

Where the meaning is clear (tool arguments sent as an object instead of JSON text) the event
is accepted. An agent run over such a server fails with the ModelError and keeps a transcript
the next run can continue from.
"""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from provider_wire import (
    Reply,
    WireServer,
    anthropic_turn,
    collect,
    json_error,
    ollama_ndjson,
    ollama_turn,
    openai_chunk,
    openai_sse,
    openai_turn,
)

import aimu
import aimu.aio
from aimu.models import ModelError, TextDelta, ToolCallRequest
from aimu.models.errors import ModelConnectionError
from aimu.models.providers._stream import MalformedStreamError

HI = [{"role": "user", "content": "hi"}]


def sse(*data: str) -> Reply:
    return Reply(pieces=[f"data: {d}\n\n".encode() for d in data], content_type="text/event-stream")


def openai(server: WireServer):
    return aimu.client(f"openai:wire-model@{server.url}/v1")


def anthropic(server: WireServer):
    return aimu.client("anthropic:wire-model", base_url=server.url, api_key="k")


def ollama(server: WireServer):
    return aimu.client(f"ollama:wire-model@{server.url}")


def chunk(delta) -> str:
    return json.dumps(openai_chunk(delta))


OPENAI_BAD = {
    "a JSON array": sse("[1, 2]"),
    "not JSON": sse("this is not json"),
    "content as a number": sse(chunk({"content": 5})),
    "delta as a string": sse(json.dumps({"choices": [{"delta": "hello"}]})),
    "choices as an object": sse(json.dumps({"choices": {"0": {}}})),
    "a choice as a number": sse(json.dumps({"choices": [7]})),
    "a null choice": sse(json.dumps({"choices": [None]})),
    "a null tool call": sse(chunk({"tool_calls": [None]})),
    "tool_calls as a string": sse(chunk({"tool_calls": "add"})),
    "a tool call as a number": sse(chunk({"tool_calls": [3]})),
    "a tool name as a list": sse(chunk({"tool_calls": [{"index": 0, "function": {"name": []}}]})),
    "usage as a string": sse(json.dumps({"choices": [], "usage": "lots"})),
    "a token count as text": sse(json.dumps({"choices": [], "usage": {"prompt_tokens": "9"}})),
}


async def test_openai_arguments_sent_as_an_object_are_accepted(server):
    call = {"index": 0, "id": "c1", "type": "function"}
    call["function"] = {"name": "add", "arguments": {"a": 1, "b": 2}}
    server.script(
        openai_sse([openai_chunk({"tool_calls": [call]}), openai_chunk({}, "tool_calls")])
    )
    events = await collect(openai(server), HI)
    calls = [e for e in events if isinstance(e, ToolCallRequest)]
    assert [(c.name, c.arguments, c.error) for c in calls] == [("add", {"a": 1, "b": 2}, None)]


async def test_openai_missing_fields_are_tolerated(server):
    server.script(
        sse(
            json.dumps({}),
            json.dumps({"choices": [{}]}),
            json.dumps({"choices": [{"delta": {"content": "ok"}}]}),
            json.dumps({"choices": [{"delta": {"tool_calls": [{"function": {}}]}}]}),
            "[DONE]",
        )
    )
    events = await collect(openai(server), HI)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["ok"]


def anthropic_events(*events: object) -> Reply:
    start = anthropic_turn("x").pieces[0]
    pieces = [start] + [f"data: {json.dumps(e)}\n\n".encode() for e in events]
    return Reply(pieces=pieces, content_type="text/event-stream")


TEXT_BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
ANTHROPIC_BAD = {
    "a JSON array": anthropic_events([1, 2]),
    "text as a number": anthropic_events(
        TEXT_BLOCK,
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
    ),
    "a delta for a block never started": anthropic_events(
        {"type": "content_block_delta", "index": 4, "delta": {"type": "text_delta", "text": "a"}}
    ),
    "a delta as a list": anthropic_events(
        TEXT_BLOCK, {"type": "content_block_delta", "index": 0, "delta": ["x"]}
    ),
    "an index as a list": anthropic_events(
        {"type": "content_block_start", "index": [0], "content_block": {"type": "text"}}
    ),
    "usage as a number": anthropic_events({"type": "message_delta", "delta": {}, "usage": 3}),
}


def ndjson(*lines: str) -> Reply:
    return Reply(
        pieces=[line.encode() + b"\n" for line in lines], content_type="application/x-ndjson"
    )


def ollama_line(message: object, **extra: object) -> str:
    return json.dumps({"model": "wire-model", "message": message, "done": False, **extra})


OLLAMA_BAD = {
    "a JSON array": ndjson("[1, 2]"),
    "not JSON": ndjson("not json at all"),
    "message as a string": ndjson(ollama_line("hello")),
    "content as a number": ndjson(ollama_line({"role": "assistant", "content": 5})),
    "tool_calls as an object": ndjson(ollama_line({"content": "", "tool_calls": {"a": 1}})),
    "arguments as a number": ndjson(
        ollama_line({"content": "", "tool_calls": [{"function": {"name": "f", "arguments": 3}}]})
    ),
    "a token count as text": ndjson(
        json.dumps({"message": {"content": ""}, "done": True, "eval_count": "7"})
    ),
}


async def test_ollama_blank_lines_and_text_arguments_are_accepted(server):
    turn = ollama_turn("Hi.")
    call = {"function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
    pieces = [
        b"\n",
        *turn.pieces[:-1],
        b"  \n",
        ollama_line({"tool_calls": [call]}).encode() + b"\n",
    ]
    server.script(Reply(pieces=[*pieces, turn.pieces[-1]], content_type=turn.content_type))
    events = await collect(ollama(server), HI)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hi."
    assert [(e.name, e.arguments) for e in events if isinstance(e, ToolCallRequest)] == [
        ("add", {"a": 1, "b": 2})
    ]


async def test_ollama_error_bodies_of_any_shape_are_model_errors(server):
    server.script(json_error(400, [1, 2]), ollama_ndjson([{"error": {"nested": True}}]))
    with pytest.raises(ModelError, match="rejected the request"):
        await collect(ollama(server), HI)
    with pytest.raises(ModelError, match="reported an error"):
        await collect(ollama(server), HI)


BAD = [
    pytest.param(make, reply, id=f"{make.__name__}: {what}")
    for make, cases in ((openai, OPENAI_BAD), (anthropic, ANTHROPIC_BAD), (ollama, OLLAMA_BAD))
    for what, reply in cases.items()
]


@pytest.mark.parametrize(("make", "reply"), BAD)
async def test_wrong_shapes_are_model_errors(make, reply, server):
    server.script(reply)
    with pytest.raises(ModelError, match="sent a stream event"):
        await collect(make(server), HI)


@aimu.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.mark.parametrize(
    ("make", "bad", "good"),
    [
        (openai, OPENAI_BAD["content as a number"], lambda: openai_turn("Fine now.")),
        (anthropic, ANTHROPIC_BAD["text as a number"], lambda: anthropic_turn("Fine now.")),
        (ollama, OLLAMA_BAD["a JSON array"], lambda: ollama_turn("Fine now.")),
    ],
    ids=["openai", "anthropic", "ollama"],
)
def test_an_agent_run_over_a_wrong_shaped_stream_fails_cleanly(make, bad, good, server):
    first = {
        "openai": openai_turn("", [("c1", "add", '{"a": 1, "b": 2}')]),
        "anthropic": anthropic_turn("", [("c1", "add", '{"a": 1, "b": 2}')]),
        "ollama": ollama_turn("", [("add", {"a": 1, "b": 2})]),
    }[make.__name__]
    server.script(first, bad, good())
    agent = aimu.Agent(make(server), tools=[add])
    with pytest.raises(ModelError, match="sent a stream event"):
        agent.run("add 1 and 2")
    roles = [m["role"] for m in agent.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert agent.messages[2]["content"] == "3"
    assert agent.run("again") == "Fine now."


@aimu.tool
def stop_here() -> str:
    """A tool whose code raises KeyboardInterrupt (a Ctrl-C inside it)."""
    raise KeyboardInterrupt


@aimu.tool
def cancel_here() -> str:
    """A tool whose code raises CancelledError."""
    raise asyncio.CancelledError


def stalled() -> Reply:
    """One delta, then keep-alive comments until the client hangs up."""
    first = openai_turn("Hello there, friend.").pieces[:2]
    keep = itertools.repeat(b": ping\n\n")
    return Reply(
        pieces=itertools.chain(first, keep), content_type="text/event-stream", interval=0.1
    )


STOPPED_CALL = "Stopped: the run was interrupted while this call was running"
INTERRUPTED_TURN = {"role": "assistant", "content": "(This answer was interrupted.)"}
FAILED_TURNS = {
    "a null choice": (sse(json.dumps({"choices": [None]})), MalformedStreamError),
    "a stalled stream": (stalled(), ModelConnectionError),
    "a connection dropped mid-answer": (
        Reply(pieces=openai_turn("Hello there, friend.").pieces, drop_at=2),
        ModelConnectionError,
    ),
    "an error event mid-stream": (
        sse(chunk({"content": "Hello "}), json.dumps({"error": {"message": "overloaded"}})),
        ModelError,
    ),
    "a tool raising KeyboardInterrupt": (
        openai_turn("", [("c1", "stop_here", "{}")]),
        KeyboardInterrupt,
    ),
    "a tool raising CancelledError": (
        openai_turn("", [("c1", "cancel_here", "{}")]),
        KeyboardInterrupt,
    ),
}


@pytest.mark.parametrize(("reply", "error"), FAILED_TURNS.values(), ids=FAILED_TURNS)
def test_every_failed_run_raises_and_leaves_a_closed_transcript(reply, error, server):
    """One rule: what was said stays, every call is answered, the last turn is the model's."""
    server.script(reply, openai_turn("Fine now."))
    client = aimu.client(f"openai:wire-model@{server.url}/v1", timeout=1)
    agent = aimu.Agent(client, tools=[stop_here, cancel_here])
    earlier = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "Hi."}]
    agent.messages.extend(earlier)
    with pytest.raises(error):
        agent.run("go")
    added = agent.messages[len(earlier) :]
    assert agent.messages[: len(earlier)] == earlier
    assert added[0] == {"role": "user", "content": "go"}
    if added[1].get("tool_calls"):
        assert added[2]["role"] == "tool" and added[2]["content"].startswith(STOPPED_CALL)
        assert added[3:] == [INTERRUPTED_TURN]
    elif added[1] != INTERRUPTED_TURN:
        assert added[1:] == [{"role": "assistant", "content": added[1]["content"]}]
        assert "Hello there, friend.".startswith(added[1]["content"])
    assert agent.run("again") == "Fine now."


async def test_an_async_run_whose_tool_raises_keyboardinterrupt_is_cancelled_cleanly(server):
    server.script(openai_turn("", [("c1", "stop_here", "{}")]), openai_turn("Fine now."))
    agent = aimu.aio.Agent(openai(server), tools=[stop_here])
    with pytest.raises(asyncio.CancelledError):
        await agent.run("go")
    assert agent.messages[-1] == INTERRUPTED_TURN
    assert agent.messages[-2]["content"].startswith(STOPPED_CALL)
    assert await agent.run("again") == "Fine now."
