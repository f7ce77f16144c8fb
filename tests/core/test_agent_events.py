"""Typed events for runs, model calls, tool calls and approvals; JSON-lines and OpenTelemetry
sinks."""

import asyncio
import json
import threading
import time

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import aimu.aio
from aimu import Agent, Denied, tool
from aimu.agents import Inbox, JsonLinesSink, OpenTelemetrySink, keep_last
from aimu.agents import events as events_module
from aimu.agents.subagent import make_subagent_tool
from aimu.models.errors import ModelError
from aimu.models.providers.scripted import ScriptedClient, call, reply


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


def two_round_agent(events, **kwargs):
    model = ScriptedClient(
        [reply(tool_calls=[call("add", a=1, b=2)]), call("explode"), "It is 3."], model="m1"
    )
    return Agent(model, tools=[add, explode], events=events, **kwargs)


def test_a_run_reports_typed_events_in_order():
    seen = []
    two_round_agent(seen.append).run("1+2?")
    assert [e.type for e in seen] == [
        "run_started",
        "model_call_started", "model_call_finished",
        "tool_call_started", "tool_call_finished",
        "model_call_started", "model_call_finished",
        "tool_call_started", "tool_call_finished",
        "model_call_started", "model_call_finished",
        "run_finished",
    ]  # fmt: skip
    started, finished = seen[0], seen[-1]
    assert started.task == "1+2?" and started.model == "scripted:m1"
    assert finished.stop_reason == "complete"
    assert (finished.model_calls, finished.tool_calls) == (3, 2)
    assert finished.input_tokens > 0 and finished.duration_s > 0
    model_asked = seen[1]
    assert (model_asked.model, model_asked.provider) == ("m1", "scripted")
    assert model_asked.message_count == 1 and model_asked.tool_names == ("add", "explode")
    assert seen[5].message_count == 3
    model_done = seen[2]
    assert (model_done.model, model_done.provider, model_done.error) == ("m1", "scripted", None)
    assert model_done.output_tokens > 0
    assert model_done.latency_s >= 0 and model_done.tool_calls == 1
    assert model_done.input_tokens == 1 and model_done.stop_reason == "tool_calls"
    ok, failed = seen[4], seen[8]
    assert ok.name == "add" and ok.error is None and ok.duration_s >= 0
    assert failed.name == "explode" and "boom" in failed.error
    assert len({e.run_id for e in seen}) == 1
    assert (seen[3].call_id, seen[3].name, seen[3].arguments) == (
        ok.call_id,
        "add",
        {"a": 1, "b": 2},
    )
    assert all(0 < e.timestamp <= time.time() for e in seen)


def test_events_name_the_round_cap_as_the_stop_reason():
    seen = []
    model = ScriptedClient([call("add", a=1, b=1), call("add", a=1, b=1), "stopped"])
    Agent(model, tools=[add], max_iterations=1, events=seen.append).run("go")
    assert seen[-1].stop_reason == "max_iterations"


def test_approval_events_carry_the_decision():
    seen = []
    agent = two_round_agent(
        seen.append, tool_approval=lambda n, a: Denied("no") if n == "explode" else True
    )
    agent.run("go")
    approvals = [e for e in seen if e.type.startswith("approval")]
    assert [(e.type, e.name) for e in approvals] == [
        ("approval_requested", "add"), ("approval_decided", "add"),
        ("approval_requested", "explode"), ("approval_decided", "explode"),
    ]  # fmt: skip
    assert approvals[1].approved is True
    assert approvals[3].approved is False and approvals[3].reason == "no"


def test_an_object_with_emit_is_a_sink_and_a_failing_sink_does_not_stop_the_run(caplog):
    class Collector:
        def __init__(self):
            self.types = []

        def emit(self, event):
            self.types.append(event.type)

    def broken(event):
        raise ValueError("sink down")

    collector = Collector()
    assert two_round_agent(collector).run("go") == "It is 3."
    assert collector.types[0] == "run_started"
    assert two_round_agent(broken).run("go") == "It is 3."
    assert "event sink" in caplog.text


def test_a_failed_model_call_is_reported_with_its_error():
    seen = []
    agent = Agent(ScriptedClient([ModelError("server said no")]), events=seen.append)
    with pytest.raises(ModelError):
        agent.run("hi")
    assert seen[-2].type == "model_call_finished" and "server said no" in seen[-2].error
    assert seen[-1].type == "run_finished" and seen[-1].stop_reason == "error"


def test_compaction_and_inbox_deliveries_are_events_too():
    seen = []
    inbox = Inbox()

    @tool
    def ask_user() -> str:
        """The user answers while this runs."""
        inbox.put("use metres")
        return "asked"

    model = ScriptedClient([call("ask_user"), call("add", a=2, b=2), "done"])
    agent = Agent(model, tools=[add, ask_user], compaction=keep_last(1), inbox=inbox,
                  events=seen.append)  # fmt: skip
    agent.run("go")
    compacted = [e for e in seen if e.type == "context_compacted"]
    assert compacted and compacted[0].messages_after < compacted[0].messages_before
    delivered = [e for e in seen if e.type == "message_delivered"]
    assert [(e.text, e.iteration) for e in delivered] == [("use metres", 2)]


def test_a_run_given_a_sink_reports_to_it_alone():
    own, run_only = [], []
    agent = Agent(ScriptedClient(["hello"]), events=own.append)
    agent.run("hi", events=run_only.append)
    assert own == [] and run_only[0].type == "run_started"


def test_json_lines_sink_writes_one_object_per_event(tmp_path):
    path = tmp_path / "events.jsonl"
    with JsonLinesSink(path) as sink:
        two_round_agent(sink).run("go")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["type"] == "run_started" and lines[0]["task"] == "go"
    assert lines[-1]["type"] == "run_finished" and lines[-1]["stop_reason"] == "complete"
    assert all({"agent", "run_id", "iteration", "timestamp"} <= set(line) for line in lines)


def test_json_lines_sink_is_safe_across_threads(tmp_path):
    path = tmp_path / "events.jsonl"
    sink = JsonLinesSink(path)
    threads = [threading.Thread(target=lambda: two_round_agent(sink).run("go")) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sink.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 4 * 12


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def test_opentelemetry_spans_follow_the_genai_conventions(spans):
    provider, exporter = spans
    two_round_agent(OpenTelemetrySink(tracer_provider=provider)).run("1+2?")
    finished = {s.name: s for s in exporter.get_finished_spans()}
    assert set(finished) == {"invoke_agent agent", "chat m1", "execute_tool add",
                             "execute_tool explode"}  # fmt: skip
    run = finished["invoke_agent agent"]
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "agent"
    chat = finished["chat m1"]
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "scripted"
    assert chat.attributes["gen_ai.request.model"] == "m1"
    assert chat.attributes["gen_ai.usage.input_tokens"] >= 0
    assert chat.attributes["gen_ai.response.finish_reasons"] in (("tool_calls",), ("stop",))
    assert chat.kind is SpanKind.CLIENT
    tool_span = finished["execute_tool add"]
    assert tool_span.kind is SpanKind.INTERNAL
    assert tool_span.attributes["gen_ai.tool.name"] == "add"
    assert tool_span.attributes["gen_ai.tool.call.id"]
    for span in (chat, tool_span):
        assert span.parent.span_id == run.context.span_id
        assert span.context.trace_id == run.context.trace_id
    failed = finished["execute_tool explode"]
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "ToolError"
    chats = [s for s in exporter.get_finished_spans() if s.name == "chat m1"]
    assert len(chats) == 3


def test_a_sub_agent_run_nests_under_its_parents_run_span(spans):
    provider, exporter = spans
    sink = OpenTelemetrySink(tracer_provider=provider)
    spawn = make_subagent_tool(ScriptedClient(["child answer"], model="child"), events=sink)
    parent = Agent(ScriptedClient([call("spawn_subagent", task="t"), "done"], model="parent"),
                   tools=[spawn], events=sink)  # fmt: skip
    parent.run("go")
    by_name = {s.name: s for s in exporter.get_finished_spans()}
    child_run = next(s for name, s in by_name.items() if name.startswith("invoke_agent agent/"))
    assert child_run.parent.span_id == by_name["invoke_agent agent"].context.span_id
    assert by_name["chat child"].parent.span_id == child_run.context.span_id


def test_events_must_be_a_sink():
    with pytest.raises(TypeError, match="events must be a callable sink"):
        Agent(ScriptedClient(["x"]), events="log.txt")


def test_an_async_sink_gets_every_event_in_order_before_the_run_returns():
    received = []

    async def sink(event):
        await asyncio.sleep(0.01 if event.type == "run_started" else 0)
        received.append(event.type)

    class Collector:
        def __init__(self):
            self.types = []

        async def emit(self, event):
            await asyncio.sleep(0)
            self.types.append(event.type)

    assert two_round_agent(sink).run("add") == "It is 3."
    collector = Collector()
    asyncio.run(aimu.aio.Agent(two_round_agent(None).client.clone(), tools=[add, explode],
                               events=collector).run("add"))  # fmt: skip
    in_order = []
    two_round_agent(lambda event: in_order.append(event.type)).run("add")
    assert received == collector.types == in_order


def test_a_failing_or_hanging_async_sink_never_stops_the_run(caplog, monkeypatch):
    monkeypatch.setattr(events_module, "DRAIN_SECONDS", 0.2)

    async def broken(event):
        raise ValueError("sink down")

    async def hanging(event):
        await asyncio.sleep(3600)

    assert two_round_agent(broken).run("add") == "It is 3."
    assert "event sink" in caplog.text and "sink down" in caplog.text
    started = time.perf_counter()
    assert two_round_agent(hanging).run("add") == "It is 3."
    assert time.perf_counter() - started < 5
    assert "still busy" in caplog.text


@tool
def sign_in(user: str, password: str) -> str:
    """Sign in."""
    return f"signed in {user}"


def test_sinks_get_events_with_the_secrets_in_their_task_and_arguments_hidden(tmp_path):
    path = tmp_path / "events.jsonl"
    model = ScriptedClient([call("sign_in", user="ada", password="pw-arg-secret-9876"), "in"])
    with JsonLinesSink(path) as sink:
        Agent(model, tools=[sign_in], events=sink).run(
            "Sign in, then GET https://h.example/v1?api_key=sk-task-abc123def456&client=nb"
        )
    written = path.read_text()
    assert "pw-arg-secret-9876" not in written and "sk-task-abc123def456" not in written
    lines = [json.loads(line) for line in written.splitlines()]
    assert lines[0]["task"].endswith("?api_key=[hidden]&client=nb")
    (started,) = [line for line in lines if line["type"] == "tool_call_started"]
    assert started["arguments"] == {"user": "ada", "password": "[hidden]"}
    assert model.requests[0]["messages"][-1]["content"].endswith("sk-task-abc123def456&client=nb")
