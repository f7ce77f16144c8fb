"""Typed events an agent run reports to an :data:`EventSink`, and two ready sinks.

Chunks (:class:`~aimu.models.StreamChunk`) are what a run *shows*; events are what it
*measures*: when a run, a model call or a tool call started and finished, how long it took,
what it cost, how it ended. A sink is any callable taking one event, or any object with an
``emit(event)`` method; either may be ``async def``. Every event has a ``type`` string and
its fields as attributes::

    agent = Agent(client, tools=[...], events=lambda e: print(e.type, e.to_json()))

:class:`JsonLinesSink` appends one JSON object per event to a file;
:class:`OpenTelemetrySink` turns runs, model calls and tool calls into spans that follow the
OpenTelemetry GenAI semantic conventions (``pip install 'aimu-jupyter[otel]'``).
A sink that raises is logged and the run goes on: telemetry never stops an agent. Sinks
get each event with its secrets hidden (:func:`aimu.secrets.redact` on every text field:
the task, tool arguments, errors), since what they write outlives the run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
import operator
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from aimu.models.base import Usage
from aimu.models.chunks import Phase, StreamChunk
from aimu.secrets import redact_data

logger = logging.getLogger("aimu.agents.events")
#: How long the end of a run waits for an ``async def`` sink to take the last events.
DRAIN_SECONDS = 5.0
_FIELDS: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple]]] = {}
_ENCODE = json.JSONEncoder(ensure_ascii=False, check_circular=False, default=str).encode


@dataclass(slots=True)
class Event:
    """What every event carries: which agent and run, which model turn, and when (epoch s)."""

    type: ClassVar[str] = "event"
    agent: str
    run_id: str
    parent_run_id: str | None = None
    iteration: int = 0
    timestamp: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        """The event as a dict, ``type`` first (what :class:`JsonLinesSink` writes)."""
        names, values = _fields_of(self)
        return {"type": self.type, **dict(zip(names, values(self), strict=True))}


@dataclass(slots=True)
class RunStarted(Event):
    """A run began: the task and the model it runs on."""

    type: ClassVar[str] = "run_started"
    task: str = ""
    model: str = ""


@dataclass(slots=True)
class RunFinished(Event):
    """A run ended. ``stop_reason``: complete, max_iterations, interrupted or error."""

    type: ClassVar[str] = "run_finished"
    stop_reason: str = "complete"
    duration_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    error: str | None = None


@dataclass(slots=True)
class ModelCallStarted(Event):
    """A request is about to go to the model."""

    type: ClassVar[str] = "model_call_started"
    model: str = ""
    provider: str = ""
    message_count: int = 0
    tool_names: tuple[str, ...] = ()


@dataclass(slots=True)
class ModelCallFinished(Event):
    """The model's turn ended (or failed: ``error`` names why)."""

    type: ClassVar[str] = "model_call_finished"
    model: str = ""
    provider: str = ""
    latency_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str = ""
    tool_calls: int = 0
    error: str | None = None
    replayed: bool = False


@dataclass(slots=True)
class ToolCallStarted(Event):
    """A tool call is about to be dispatched (approval, if any, comes next)."""

    type: ClassVar[str] = "tool_call_started"
    call_id: str = ""
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ToolCallFinished(Event):
    """A tool call has its result; ``error`` is the result text when the call failed."""

    type: ClassVar[str] = "tool_call_finished"
    call_id: str = ""
    name: str = ""
    duration_s: float = 0.0
    error: str | None = None


@dataclass(slots=True)
class ApprovalRequested(Event):
    """The approval policy is being asked about a call."""

    type: ClassVar[str] = "approval_requested"
    call_id: str = ""
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ApprovalDecided(Event):
    """The policy answered."""

    type: ClassVar[str] = "approval_decided"
    call_id: str = ""
    name: str = ""
    approved: bool = False
    reason: str = ""


@dataclass(slots=True)
class ContextCompacted(Event):
    """The compaction policy shortened the conversation before a model turn."""

    type: ClassVar[str] = "context_compacted"
    messages_before: int = 0
    messages_after: int = 0


@dataclass(slots=True)
class MessageDelivered(Event):
    """A message put in the agent's inbox was delivered to the model as a user message."""

    type: ClassVar[str] = "message_delivered"
    text: str = ""


class RunReport:
    """Every event of one run, derived in one place: from the chunks the run makes and the
    few facts no chunk carries (the run's start and end, each model call, a compaction).

    The loop hands over each chunk as it makes it (:meth:`chunk`), so an event is sent when
    its chunk is made, not when a consumer reads it. The totals :class:`RunFinished` reports
    (model and tool calls, tokens) are counted from what was reported. The four events of
    every model and tool call are built with positional arguments, in their fields' order,
    which halves what building them costs.
    """

    def __init__(self, deliver: Delivery, ids: tuple[str, str, str | None], client: Any):
        self._deliver = deliver
        self._ids = ids  # agent, run_id, parent_run_id: what every event starts with
        self._client = client
        self._started = time.perf_counter()
        self._turn_started = 0.0
        self._calls: dict[tuple[int, str], float] = {}  # when each tool call started
        self._model_calls = self._input_tokens = self._output_tokens = 0

    def run_started(self, task: str) -> None:
        self._started = time.perf_counter()
        self._deliver(RunStarted(*self._ids, 0, task=task, model=self._client.name))

    def model_call_started(self, iteration: int, messages: int, tools: tuple[str, ...]) -> None:
        self._model_calls += 1
        client = self._client
        self._deliver(
            ModelCallStarted(
                *self._ids, iteration, time.time(), client.model, client.provider, messages, tools
            )
        )
        self._turn_started = time.perf_counter()

    def model_call_finished(
        self,
        iteration: int,
        usage: Usage,
        stop_reason: str,
        tool_calls: int,
        error: BaseException | None,
        replayed: bool,
    ) -> None:
        self._input_tokens += usage.input_tokens
        self._output_tokens += usage.output_tokens
        self._deliver(
            ModelCallFinished(
                *self._ids,
                iteration,
                time.time(),
                self._client.model,
                self._client.provider,
                time.perf_counter() - self._turn_started,
                usage.input_tokens,
                usage.output_tokens,
                stop_reason,
                tool_calls,
                _describe(error),
                replayed,
            )
        )

    def compacted(self, iteration: int, before: int, after: int) -> None:
        self._deliver(
            ContextCompacted(*self._ids, iteration, messages_before=before, messages_after=after)
        )

    def chunk(self, chunk: StreamChunk) -> None:
        """Report what ``chunk``, one this run made, says (most chunks report nothing)."""
        phase, content, iteration = chunk.phase, chunk.content, chunk.iteration
        if phase is Phase.TOOL_CALL:
            key = (iteration, content["id"])
            if key not in self._calls:  # an outside agent's call is shown again as it changes
                self._deliver(
                    ToolCallStarted(*self._ids, iteration, time.time(), content["id"],
                                    content["name"], content["arguments"])
                )  # fmt: skip
                self._calls[key] = time.perf_counter()
        elif phase is Phase.TOOL_RESULT:
            began = self._calls.get((iteration, content["id"]))
            self._deliver(
                ToolCallFinished(
                    *self._ids,
                    iteration,
                    time.time(),
                    content["id"],
                    content["name"],
                    0.0 if began is None else time.perf_counter() - began,
                    content["result"] if content["is_error"] else None,
                )
            )
        elif phase is Phase.APPROVAL_REQUESTED:
            self._deliver(
                ApprovalRequested(*self._ids, iteration, call_id=content["id"],
                                  name=content["name"], arguments=content["arguments"])
            )  # fmt: skip
        elif phase is Phase.APPROVAL_DECIDED:
            self._deliver(
                ApprovalDecided(*self._ids, iteration, call_id=content["id"], name=content["name"],
                                approved=content["approved"], reason=content["reason"] or "")
            )  # fmt: skip
        elif phase is Phase.USER_MESSAGE:
            self._deliver(MessageDelivered(*self._ids, iteration, text=content["text"]))

    def run_finished(self, stop_reason: str, failure: BaseException | None) -> None:
        """Report the run's end; ``failure`` (what ended it early) decides the stop reason."""
        if failure is not None:
            stop_reason = "error" if isinstance(failure, Exception) else "interrupted"
        self._deliver(
            RunFinished(
                *self._ids,
                0,
                stop_reason=stop_reason,
                duration_s=time.perf_counter() - self._started,
                input_tokens=self._input_tokens,
                output_tokens=self._output_tokens,
                model_calls=self._model_calls,
                tool_calls=len(self._calls),
                error=_describe(failure),
            )
        )

    async def drain(self) -> None:
        await self._deliver.drain()


def _describe(error: BaseException | None) -> str | None:
    """``error`` as an event's ``error`` field: ``"Type: message"``."""
    if error is None:
        return None
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class _Emits(Protocol):
    def emit(self, event: Event) -> None: ...


EventSink = Callable[[Event], Any] | _Emits


def sink_function(sink: EventSink | None) -> Delivery | None:
    """What delivers events to ``sink``, never raising; ``None`` stays ``None``."""
    if sink is None:
        return None
    deliver = getattr(sink, "emit", sink)
    if not callable(deliver):
        raise TypeError("events must be a callable sink(event) or an object with emit(event)")
    return Delivery(sink, deliver)


class Delivery:
    """Calls a sink with each event, logging (never raising) what it raises.

    An ``async def`` sink's coroutines run on the running loop one after another, in the
    order of the events, and :meth:`drain` (awaited when a run ends) waits for them, for at
    most :data:`DRAIN_SECONDS`: a sink that hangs is logged, not waited for.
    """

    def __init__(self, sink: EventSink, deliver: Callable[[Event], Any]):
        self._sink = sink
        self._deliver = deliver
        self._last: asyncio.Future | None = None

    def __call__(self, event: Event) -> None:
        event = _redacted(event)
        try:
            result = self._deliver(event)
        except Exception:
            self._failed(event)
            return
        if inspect.isawaitable(result):
            self._last = asyncio.ensure_future(self._after(self._last, result, event))

    async def drain(self) -> None:
        last, self._last = self._last, None
        if last is not None:
            done, _ = await asyncio.wait([last], timeout=DRAIN_SECONDS)
            if not done:
                logger.warning("event sink %r still busy after %s s", self._sink, DRAIN_SECONDS)

    async def _after(self, previous: asyncio.Future | None, result: Any, event: Event) -> None:
        try:
            if previous is not None:
                await asyncio.wait([previous])
        except asyncio.CancelledError:
            if inspect.iscoroutine(result):
                result.close()  # never started: not a "never awaited" warning
            raise
        try:
            await result
        except Exception:
            self._failed(event)

    def _failed(self, event: Event) -> None:
        logger.warning("event sink %r failed on %s", self._sink, event.type, exc_info=True)


class JsonLinesSink:
    """Appends each event as one JSON line to ``path`` (thread-safe).

    The file is flushed at the end of every run and on :meth:`close`, so a run's lines are
    on disk when it returns without a write call per event."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file = self.path.open("a", encoding="utf-8")

    def emit(self, event: Event) -> None:
        line = _ENCODE(event.to_json())
        with self._lock:
            self._file.write(line + "\n")
            if event.type == "run_finished":
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()

    def __enter__(self) -> JsonLinesSink:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class OpenTelemetrySink:
    """Spans for runs, model calls and tool calls, per the OpenTelemetry GenAI conventions.

    A run is an ``invoke_agent {agent}`` span; each model call a ``chat {model}`` child with
    ``gen_ai.request.model``, ``gen_ai.usage.*_tokens`` and ``gen_ai.response.finish_reasons``;
    each tool call an ``execute_tool {name}`` child with ``gen_ai.tool.name`` and
    ``gen_ai.tool.call.id``. A sub-agent's run nests under its parent's run when both report
    to the same sink. Failures set the span status to ERROR with ``error.type``.
    ``tracer_provider`` defaults to the global one.
    """

    def __init__(self, tracer_provider: Any = None):
        try:
            from opentelemetry import trace
        except ImportError as exc:
            raise ImportError(
                "OpenTelemetrySink needs opentelemetry: pip install 'aimu-jupyter[otel]'"
            ) from exc
        self._trace = trace
        self._tracer = trace.get_tracer("aimu", tracer_provider=tracer_provider)
        self._runs: dict[str, Any] = {}
        self._open: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        handler = getattr(self, "_on_" + event.type, None)
        if handler is not None:
            with self._lock:
                handler(event)

    def _child(self, run_id: str, name: str, attributes: dict[str, Any], kind: Any) -> Any:
        parent = self._runs.get(run_id)
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(name, context=context, kind=kind, attributes=attributes)

    def _on_run_started(self, event: RunStarted) -> None:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": event.agent,
            "gen_ai.conversation.id": event.run_id,
        }
        if event.model:
            attributes["gen_ai.request.model"] = event.model.partition(":")[2] or event.model
        parent = self._runs.get(event.parent_run_id or "")
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        self._runs[event.run_id] = self._tracer.start_span(
            f"invoke_agent {event.agent}", context=context, attributes=attributes
        )

    def _on_run_finished(self, event: RunFinished) -> None:
        span = self._runs.pop(event.run_id, None)
        if span is None:
            return
        span.set_attribute("gen_ai.usage.input_tokens", event.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", event.output_tokens)
        span.set_attribute("aimu.stop_reason", event.stop_reason)
        self._end(span, event.error, "AgentError")

    def _on_model_call_started(self, event: ModelCallStarted) -> None:
        self._open[(event.run_id, f"model{event.iteration}")] = self._child(
            event.run_id,
            f"chat {event.model}",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": event.provider,
                "gen_ai.request.model": event.model,
            },
            self._trace.SpanKind.CLIENT,
        )

    def _on_model_call_finished(self, event: ModelCallFinished) -> None:
        span = self._open.pop((event.run_id, f"model{event.iteration}"), None)
        if span is None:
            return
        span.set_attribute("gen_ai.response.model", event.model)
        span.set_attribute("gen_ai.usage.input_tokens", event.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", event.output_tokens)
        if event.stop_reason:
            span.set_attribute("gen_ai.response.finish_reasons", (event.stop_reason,))
        self._end(span, event.error, "ModelError")

    def _on_tool_call_started(self, event: ToolCallStarted) -> None:
        self._open[(event.run_id, event.call_id)] = self._child(
            event.run_id,
            f"execute_tool {event.name}",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": event.name,
                "gen_ai.tool.call.id": event.call_id,
                "gen_ai.tool.type": "function",
            },
            self._trace.SpanKind.INTERNAL,
        )

    def _on_tool_call_finished(self, event: ToolCallFinished) -> None:
        span = self._open.pop((event.run_id, event.call_id), None)
        if span is not None:
            self._end(span, event.error, "ToolError")

    def _end(self, span: Any, error: str | None, error_type: str) -> None:
        if error:
            from opentelemetry.trace import Status, StatusCode

            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, error[:500]))
        span.end()


def _redacted(event: Event) -> Event:
    """``event``, or a copy of it with the secrets in its text fields hidden."""
    names, values = _fields_of(event)
    changed = {}
    for name, value in zip(names, values(event), strict=True):
        if isinstance(value, str | dict | list | tuple):
            clean = redact_data(value)
            if clean != value:
                changed[name] = clean
    return dataclasses.replace(event, **changed) if changed else event


def _fields_of(event: Event) -> tuple[tuple[str, ...], Callable[[Any], tuple]]:
    """An event class's field names and a getter of their values, computed once."""
    kind = type(event)
    cached = _FIELDS.get(kind)
    if cached is None:
        names = tuple(f.name for f in dataclasses.fields(kind))
        cached = _FIELDS[kind] = (names, operator.attrgetter(*names))
    return cached
