"""A model stream that stops producing output ends with a ModelError after the stall timeout.

Keep-alives — SSE comments, empty chunks, Anthropic ``ping`` events, blank NDJSON lines — are
not output: a server sending them forever still ends the turn. Real loopback servers speak
each provider's wire format; ``timeout=1`` keeps the tests short.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time

import pytest
from provider_wire import (
    Reply,
    WireServer,
    anthropic_turn,
    collect,
    ollama_turn,
    openai_chunk,
    openai_turn,
)

import aimu
from aimu.models import ModelError, TextDelta
from aimu.models.errors import ModelConnectionError

HI = [{"role": "user", "content": "hi"}]
# Generous against a 1 s timeout on a loaded machine; the old behaviour waited 600 s or forever.
BOUND = 15.0


def client_for(provider: str, server: WireServer, **options):
    if provider == "openai":
        return aimu.client(f"openai:wire-model@{server.url}/v1", **options)
    if provider == "anthropic":
        return aimu.client("anthropic:wire-model", base_url=server.url, api_key="k", **options)
    return aimu.client(f"ollama:wire-model@{server.url}", **options)


def keep_alives(provider: str) -> Reply:
    """Headers, then keep-alives every 0.1 s until the client hangs up."""
    if provider == "openai":
        empty = [b"data: " + json.dumps(openai_chunk(d)).encode() + b"\n\n" for d in ({}, None)]
        forever = itertools.cycle([b": ping\n\n", *empty, b'data: {"choices": []}\n\n'])
        return Reply(pieces=forever, content_type="text/event-stream", interval=0.1)
    if provider == "anthropic":
        start = anthropic_turn("x").pieces[0]
        ping = b'event: ping\ndata: {"type": "ping"}\n\n'
        forever = itertools.chain([start], itertools.repeat(ping))
        return Reply(pieces=forever, content_type="text/event-stream", interval=0.1)
    return Reply(pieces=itertools.repeat(b"\n"), content_type="application/x-ndjson", interval=0.1)


def one_delta_then_silence(provider: str) -> Reply:
    """A turn that sends the first piece of text and then nothing (keep-alives aside)."""
    if provider == "openai":
        turn = openai_turn("Hello there, friend.")
        pieces = turn.pieces[:2]
    elif provider == "anthropic":
        turn = anthropic_turn("Hello there, friend.")
        pieces = turn.pieces[:4]  # message_start, ping, content_block_start, first delta
    else:
        turn = ollama_turn("Hello there, friend.")
        pieces = turn.pieces[:1]
    keep = keep_alives(provider).pieces
    return Reply(pieces=itertools.chain(pieces, keep), content_type=turn.content_type, interval=0.1)


PROVIDERS = ["openai", "anthropic", "ollama"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_keep_alives_forever_end_the_turn_after_the_timeout(provider, server):
    server.script(keep_alives(provider))
    client = client_for(provider, server, timeout=1)
    start = time.monotonic()
    with pytest.raises(ModelConnectionError, match="no output for 1 s") as caught:
        await collect(client, HI)
    assert time.monotonic() - start < BOUND
    assert "timeout=" in str(caught.value)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stream_that_stalls_after_a_delta_ends_with_a_model_error(provider, server):
    server.script(one_delta_then_silence(provider))
    client = client_for(provider, server, timeout=1)
    seen = []
    start = time.monotonic()
    with pytest.raises(ModelError, match="no output for 1 s"):
        async for event in client.stream(HI):
            seen.append(event)
    assert time.monotonic() - start < BOUND
    assert seen and isinstance(seen[0], TextDelta)


def paced(reply: Reply, slow: range, delay: float = 0.4) -> Reply:
    """``reply`` with each piece in ``slow`` (the text deltas) sent ``delay`` s late."""

    def pieces():
        for index, piece in enumerate(reply.pieces):
            if index in slow:
                time.sleep(delay)
            yield piece

    return Reply(pieces=pieces(), content_type=reply.content_type)


@pytest.mark.parametrize(
    ("provider", "turn", "deltas"),
    [
        ("openai", openai_turn, range(1, 7)),
        ("anthropic", anthropic_turn, range(3, 9)),
        ("ollama", ollama_turn, range(0, 6)),
    ],
)
async def test_output_keeps_the_deadline_moving(provider, turn, deltas, server):
    """Six deltas 0.4 s apart take longer than the 1 s timeout and still complete."""
    server.script(paced(turn("a b c d e f", parts=6), deltas))
    events = await collect(client_for(provider, server, timeout=1), HI)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "a b c d e f"


def test_a_sync_agent_run_on_a_stalled_stream_fails_cleanly_and_the_next_run_works(server):
    server.script(one_delta_then_silence("openai"), openai_turn("Recovered."))
    agent = aimu.Agent(client_for("openai", server, timeout=1))
    with pytest.raises(ModelError, match="no output"):
        agent.run("hi")
    assert agent.messages[-1]["role"] == "assistant"
    assert agent.run("again") == "Recovered."


@pytest.mark.parametrize("bad", [0, -1, "10", float("nan"), True])
def test_a_timeout_that_is_not_a_positive_number_is_refused(bad):
    with pytest.raises(ValueError, match="timeout must be a number of seconds"):
        aimu.client("openai:m@http://127.0.0.1:9/v1", timeout=bad)


def test_the_timeout_option_reaches_every_provider_class():
    from aimu.models.providers.anthropic import AnthropicClient
    from aimu.models.providers.ollama import OllamaClient
    from aimu.models.providers.openai import OpenAIClient

    clients = [
        OpenAIClient("m@http://127.0.0.1:9/v1", timeout=7),
        AnthropicClient("m", base_url="http://127.0.0.1:9", api_key="k", timeout=7),
        OllamaClient("m@http://127.0.0.1:9", timeout=7),
    ]
    assert [c.clone()._timeout for c in clients] == [7.0, 7.0, 7.0]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_consumer_holding_the_stream_is_not_a_stall(provider, server):
    """Time the caller spends between events (a slow display) is not the server's silence."""
    turn = {"openai": openai_turn, "anthropic": anthropic_turn, "ollama": ollama_turn}[provider]
    server.script(turn("one two three", parts=3))
    texts = []
    async for event in client_for(provider, server, timeout=0.5).stream(HI):
        if isinstance(event, TextDelta):
            texts.append(event.text)
            await asyncio.sleep(0.7)  # the consumer is busy longer than the timeout
    assert "".join(texts) == "one two three"
