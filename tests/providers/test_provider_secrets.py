"""Keys and URL passwords never appear: not in names, errors, exception chains or logs.

Each provider talks to a loopback server that echoes the credentials back in its error body;
every logger is captured at DEBUG (the SDKs and httpx log requests there).
"""

from __future__ import annotations

import base64
import json
import logging
import traceback

import pytest
from provider_wire import (
    WireServer,
    anthropic_turn,
    collect,
    json_error,
    ollama_turn,
    openai_turn,
)

import aimu
from aimu.models import ModelError

KEY = "sk-test-K3y7Secret9Value2Long"
PASSWORD = "pw-Hunter2-Secret-77"
HI = [{"role": "user", "content": "hi"}]
TURNS = {"openai": openai_turn, "anthropic": anthropic_turn, "ollama": ollama_turn}


def with_login(url: str) -> str:
    return url.replace("http://", f"http://ada:{PASSWORD}@")


def build(provider: str, url: str, monkeypatch: pytest.MonkeyPatch):
    if provider == "openai":
        return aimu.client(f"openai:wire-model@{url}/v1", api_key=KEY)
    if provider == "anthropic":
        return aimu.client("anthropic:wire-model", base_url=url, api_key=KEY)
    monkeypatch.setenv("OLLAMA_API_KEY", KEY)
    return aimu.client(f"ollama:wire-model@{url}")


def assert_hidden(text: str) -> None:
    assert KEY not in text
    assert PASSWORD not in text


def chain(error: BaseException) -> list[BaseException]:
    seen = [error]
    while (nxt := seen[-1].__cause__ or seen[-1].__context__) is not None:
        seen.append(nxt)
    return seen


PROVIDERS = ["openai", "anthropic", "ollama"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_url_password_is_sent_as_basic_auth_and_never_shown(provider, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    with WireServer(default=TURNS[provider]("Hello.")) as wire:
        client = build(provider, with_login(wire.url), monkeypatch)
        events = await collect(client, HI)
        assert events
        sent = wire.requests[0].headers["authorization"]
    assert sent == "Basic " + base64.b64encode(f"ada:{PASSWORD}".encode()).decode()
    assert_hidden(client.name + repr(client))
    if provider != "anthropic":
        assert "@http://[hidden]@127.0.0.1" in client.name
    assert_hidden("\n".join(r.getMessage() for r in caplog.records))


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_error_echoing_the_credentials_shows_neither(provider, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    echo = {"error": {"message": f"bad key {KEY} for ada:{PASSWORD}"}}
    with WireServer(default=json_error(401, echo)) as wire:
        client = build(provider, with_login(wire.url), monkeypatch)
        with pytest.raises(ModelError) as caught:
            await collect(client, HI)
    error = caught.value
    assert "401" in str(error)
    assert_hidden("".join(traceback.format_exception(error)))
    assert [type(e) for e in chain(error)] == [type(error)]
    assert_hidden("\n".join(r.getMessage() for r in caplog.records))


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_unreachable_server_with_a_password_in_its_url_is_named_without_it(
    provider, closed_port_url, monkeypatch, caplog
):
    caplog.set_level(logging.DEBUG)
    client = build(provider, with_login(closed_port_url), monkeypatch)
    if provider != "ollama":
        client = type(client)(client.model, **{**client._init, "max_retries": 0})
    with pytest.raises(ModelError) as caught:
        await collect(client, HI)
    assert closed_port_url.rpartition(":")[2] in str(caught.value)
    assert_hidden("".join(traceback.format_exception(caught.value)))
    assert_hidden("\n".join(r.getMessage() for r in caplog.records))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_failed_agent_run_keeps_the_secrets_out_of_what_the_caller_gets(provider, monkeypatch):
    echo = {"error": {"message": f"bad key {KEY}"}}
    with WireServer(default=json_error(403, echo)) as wire:
        agent = aimu.Agent(build(provider, with_login(wire.url), monkeypatch))
        with pytest.raises(ModelError) as caught:
            agent.run("hi")
    assert_hidden("".join(traceback.format_exception(caught.value)))
    assert_hidden(repr(agent.messages))


TOKEN = "tok9f8e7d6c5b4a3210Secret"


def test_a_token_written_as_the_urls_user_part_reaches_no_name_event_or_span(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from aimu.agents import JsonLinesSink, OpenTelemetrySink

    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    lines = tmp_path / "events.jsonl"
    with WireServer(default=openai_turn("Hello.")) as wire:
        url = wire.url.replace("http://", f"http://{TOKEN}@")
        client = aimu.client(f"openai:wire-model@{url}/v1")
        with JsonLinesSink(lines) as sink:
            aimu.Agent(client, events=sink).run("hi")
        aimu.Agent(client, events=OpenTelemetrySink(tracer_provider=tracer)).run("hi")
        sent = wire.requests[0].headers["authorization"]
    assert sent == "Basic " + base64.b64encode(f"{TOKEN}:".encode()).decode()
    assert TOKEN not in client.name and "[hidden]@127.0.0.1" in client.name
    written = lines.read_text()
    started = json.loads(written.splitlines()[0])
    assert started["type"] == "run_started" and "[hidden]@127.0.0.1" in started["model"]
    assert TOKEN not in written
    attributes = [dict(span.attributes) for span in exporter.get_finished_spans()]
    (run,) = [a for a in attributes if a.get("gen_ai.operation.name") == "invoke_agent"]
    assert "[hidden]@127.0.0.1" in run["gen_ai.request.model"]
    assert TOKEN not in repr(attributes)
    tracer.shutdown()


def test_an_error_naming_a_server_with_a_token_in_its_url_keeps_it_out(closed_port_url):
    url = closed_port_url.replace("http://", f"http://{TOKEN}@") + "/v1?api_key=q-9f8e7d6c5b4a"
    client = aimu.client(f"openai:wire-model@{url}", max_retries=0)
    with pytest.raises(ModelError) as caught:
        aimu.Agent(client).run("hi")
    text = "".join(traceback.format_exception(caught.value)) + client.name
    assert TOKEN not in text and "q-9f8e7d6c5b4a" not in text
    assert "api_key=[hidden]" in client.name
