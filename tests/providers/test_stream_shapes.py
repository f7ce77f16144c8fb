"""Stream events of the wrong shape end the turn with a ModelError, never a raw exception.

Where the meaning is clear (tool arguments sent as an object instead of JSON text) the event
is accepted. An agent run over such a server fails with the ModelError and keeps a transcript
the next run can continue from.
"""

from __future__ import annotations

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
from aimu.models import ModelError, TextDelta, ToolCallRequest

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
