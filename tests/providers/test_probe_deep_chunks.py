"""A stream event nested too deeply to decode is a ModelError, for every provider."""

import pytest
from provider_wire import Reply, WireServer

import aimu
from aimu import Agent
from aimu.models import ModelError

DEEP = b"[" * 20_000 + b"]" * 20_000


def deep_reply(provider: str) -> Reply:
    if provider == "openai":
        piece = b'data: {"choices": [{"index": 0, "delta": {"content": ' + DEEP + b"}}]}\n\n"
        return Reply(pieces=[piece, b"data: [DONE]\n\n"], content_type="text/event-stream")
    if provider == "anthropic":
        piece = b'event: message_start\ndata: {"type": "message_start", "message": ' + DEEP
        return Reply(pieces=[piece + b"}\n\n"], content_type="text/event-stream")
    piece = b'{"model": "m", "message": {"role": "assistant", "content": ' + DEEP + b"}}\n"
    return Reply(pieces=[piece], content_type="application/x-ndjson")


def client_for(provider: str, server: WireServer):
    if provider == "openai":
        return aimu.client("openai:m", base_url=server.url + "/v1", api_key="k")
    if provider == "anthropic":
        return aimu.client("anthropic:m", base_url=server.url, api_key="k")
    return aimu.client("ollama:m", host=server.url)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
def test_a_deeply_nested_stream_event_is_a_model_error(provider):
    with WireServer() as server:
        server.script(deep_reply(provider))
        agent = Agent(client_for(provider, server))
        with pytest.raises(ModelError, match="not JSON"):
            agent.run("hi")
    assert not any(m.get("tool_calls") for m in agent.messages)
