"""The agent loop, written once as an async generator of :class:`StreamChunk`.

:class:`aimu.agents.Agent` (sync) and :class:`aimu.aio.Agent` (async) are thin drivers
around :class:`AgentCore`; they differ only in how they consume its stream of chunks.

Before every model turn the loop delivers inbox messages, applies the compaction policy
and offers the tools loaded so far; each turn is sent with the run's
:class:`~aimu.models.base.GenerationOptions`. Every chunk the run makes passes its
:class:`~aimu.agents.events.RunReport` as it is made, which derives the run's events.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import aclosing, nullcontext
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from aimu._checks import whole_number
from aimu.agents import events as ev
from aimu.agents.compaction import Compaction, check_conversation
from aimu.agents.inbox import Inbox
from aimu.agents.outside import INTERRUPTED, OutsideTurn
from aimu.agents.structured import RETRIES, OutputSchema, StructuredOutputError
from aimu.models.base import (
    GenerationOptions,
    HostedToolCall,
    ModelClient,
    OutsideToolCall,
    PermissionRequest,
    PlanUpdate,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    TurnEnd,
    Usage,
)
from aimu.models.cache import cached
from aimu.models.chunks import Phase, StreamChunk
from aimu.models.registry import client as build_client
from aimu.tools.approval import Policy, approve_all
from aimu.tools.context import ToolContext
from aimu.tools.dispatch import dispatch, with_distinct_id
from aimu.tools.groups import GroupLoader, ToolGroup, check_groups
from aimu.tools.results import ToolResult

logger = logging.getLogger("aimu.agents")

STOPPED = (
    "Stopped: the run was interrupted while this call was running; it may have done part "
    "of its work."
)
_FINISHED = object()


class RunOverrides(TypedDict, total=False):
    """The keywords a run takes to override the agent's settings for that run only."""

    tool_approval: Policy | None
    deps: Any
    thinking: bool | str | None
    generate_kwargs: Mapping[str, Any] | None
    schema: Any
    events: ev.EventSink | None
    compaction: Compaction | None
    inbox: Inbox | None


@dataclass(frozen=True)
class _Run:
    """One run's settings: the agent's, with that run's overrides applied."""

    policy: Policy
    deps: Any
    options: GenerationOptions | None
    compaction: Compaction | None
    read_inbox: Callable[[], list[str]] | None
    report: ev.RunReport | None
    schema: OutputSchema | None
    ids: tuple[str, str, str | None]  # agent, run_id, parent_run_id

    def chunk(self, phase: Phase, content: Any, iteration: int) -> StreamChunk:
        """A chunk of this run's agent, reported to the run's sink as it is made."""
        made = StreamChunk(phase, content, self.ids[0], iteration)
        if self.report is not None:
            self.report.chunk(made)
        return made


@dataclass
class _Turn:
    """What one model turn said: its text, the tool calls it asked for, what it cost."""

    parts: list[str] = field(default_factory=list)
    calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""
    replayed: str | None = None  # when a response cache answered: the answer's date

    @property
    def text(self) -> str:
        return "".join(self.parts)


class AgentCore:
    """Configuration, conversation and the loop shared by both agent drivers.

    ``client`` is a :class:`ModelClient`, a ``"provider:model"`` string, or ``None`` for the
    default model (``AIMU_MODEL``, else the embedded ``local`` model when installed).

    ``max_iterations`` bounds the model turns that may call tools. When the turn at the cap
    still asks for tools, those calls are answered "not executed" and one more turn, with
    tools switched off, produces the answer.

    ``thinking`` (``None`` provider default, ``False``, ``True``, ``"low"``/``"medium"``/
    ``"high"``) and ``generate_kwargs`` (temperature, max_tokens, ...; the client lays them over
    its own ``default_generate_kwargs``) go to the model on every request. ``compaction``
    rewrites the conversation before every model turn (see :mod:`aimu.agents.compaction`);
    ``inbox`` (an :class:`~aimu.agents.Inbox`) delivers messages put during a run;
    ``tool_groups`` are loaded on demand through a ``load_tools`` tool; ``events`` is an
    :data:`~aimu.agents.events.EventSink`. ``cache`` (a file path, ``True`` or a
    :class:`~aimu.models.cache.ResponseCache`) answers requests the model was asked before
    from a store (:mod:`aimu.models.cache`); tools still run, and the ``DONE`` chunk's
    ``"replayed"`` lists the turns that came from it.

    ``threaded_tools``, when true, runs every synchronous tool on a worker thread, so this
    event loop (a sub-agent's deadline, an interrupt, other agents on it) is never blocked.
    """

    threaded_tools: bool = False

    def __init__(
        self,
        client: ModelClient | str | None = None,
        system_message: str | None = None,
        tools: Iterable[Callable] = (),
        tool_approval: Policy | None = None,
        max_iterations: int = 10,
        concurrent_tool_calls: bool = False,
        deps: Any = None,
        name: str = "agent",
        *,
        thinking: bool | str | None = None,
        generate_kwargs: Mapping[str, Any] | None = None,
        compaction: Compaction | None = None,
        inbox: Inbox | None = None,
        tool_groups: Iterable[ToolGroup] | None = None,
        events: ev.EventSink | None = None,
        cache: Any = None,
    ):
        whole_number(max_iterations, "max_iterations")
        check_policy(tool_approval)
        self.client = client if isinstance(client, ModelClient) else build_client(client)
        if cache is not None:
            self.client = cached(self.client, cache)
        self.system_message = system_message
        self.tools = index_tools(tools)
        self.tool_approval: Policy = tool_approval or approve_all
        self.max_iterations = max_iterations
        self.concurrent_tool_calls = concurrent_tool_calls
        self.deps = deps
        self.name = name
        self.thinking = check_thinking(thinking)
        self.generate_kwargs = check_generate_kwargs(generate_kwargs)
        self.compaction = check_compaction(compaction)
        self.inbox = check_inbox(inbox)
        self.events = events
        ev.sink_function(events)  # refuse a sink that cannot be called, now
        groups = check_groups(tool_groups)
        self.tool_groups = GroupLoader(groups, lambda: self.tools) if groups else None
        if self.tool_groups is not None and "load_tools" in self.tools:
            raise ValueError("a tool named 'load_tools' conflicts with the agent's tool groups")
        self.parent_run_id: str | None = None
        self.messages: list[dict[str, Any]] = []

    def _final(self, chunk: StreamChunk, done: dict[str, Any]) -> dict[str, Any]:
        """The content of ``chunk`` if it is this agent's DONE chunk, else ``done``."""
        if chunk.phase is Phase.DONE and chunk.agent == self.name:
            return chunk.content
        return done

    def _answer(self, done: dict[str, Any], schema: Any = None) -> Any:
        """The run's result from its DONE content: the text, or the ``schema`` instance."""
        if schema is None:
            return done.get("text", "")
        return OutputSchema.of(schema).build(done["output"])

    def reset(self) -> None:
        """Forget the conversation (and the tool groups it loaded); the next run starts fresh."""
        self.messages.clear()
        if self.tool_groups is not None:
            self.tool_groups = self.tool_groups.fresh()

    async def _chunks(
        self, task: str, **overrides: Unpack[RunOverrides]
    ) -> AsyncIterator[StreamChunk]:
        """Run ``task`` and yield every chunk, ending with a ``DONE`` chunk.

        Each keyword (:class:`RunOverrides`) overrides the agent's setting for this run only
        (``None``: the agent's). With ``schema`` the DONE chunk's content has ``"output"``,
        the validated answer as JSON data.
        """
        if not isinstance(task, str):
            raise TypeError(f"task must be a str, not {type(task).__name__}")
        run = self._prepare(**overrides)
        if not self.messages and self.system_message:
            self.messages.append({"role": "system", "content": self.system_message})
        self.messages.append({"role": "user", "content": task})
        if run.report:
            run.report.run_started(task)
        usage = Usage()
        stop_reason = "complete"
        turn = _Turn()
        output: Any = None
        iteration = rounds = retries = 0
        failure: BaseException | None = None
        waiting: list[str] = []
        replayed: list[dict[str, Any]] = []
        try:
            while True:
                iteration += 1
                if run.read_inbox is not None:
                    waiting += run.read_inbox()
                for message in waiting:
                    self.messages.append({"role": "user", "content": message})
                    yield run.chunk(Phase.USER_MESSAGE, {"text": message}, iteration)
                waiting = []
                if run.compaction is not None:
                    self._compact(run, iteration)
                await self._reload_changed_tools()
                tools = self._offered_tools()
                tools_on = bool(tools) and rounds < self.max_iterations and not retries
                turn = _Turn()
                model_turn = self._model_turn(run, iteration, tools, tools_on, turn)
                async with aclosing(model_turn) as chunks:
                    async for chunk in chunks:
                        yield chunk
                usage += turn.usage
                if turn.replayed is not None:
                    replayed.append({"iteration": iteration, "answered": turn.replayed})
                if not turn.calls:
                    if run.read_inbox is not None and (waiting := run.read_inbox()):
                        continue  # the user spoke while the model answered: it answers that too
                    if run.schema is None:
                        break
                    output, problem = run.schema.parse(turn.text)
                    if problem is None:
                        break
                    self._ask_again(run.schema, turn, problem, retries)
                    retries += 1
                    continue
                rounds += 1
                if rounds >= self.max_iterations:
                    stop_reason = "max_iterations"
                    for chunk in self._refused_over_the_cap(run, turn.calls, iteration):
                        yield chunk
                    continue
                async with aclosing(self._run_calls(turn.calls, iteration, run, tools)) as chunks:
                    async for chunk in chunks:
                        yield chunk
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if failure is not None:
                self._close_transcript()
            if run.report:
                run.report.run_finished(stop_reason, failure)
                if failure is None or isinstance(failure, Exception):  # not when cancelled
                    await run.report.drain()
        done = {"text": turn.text, "usage": usage.to_json(), "stop_reason": stop_reason}
        if replayed:
            done["replayed"] = replayed
        if run.schema is not None:
            done["output"] = output
        yield run.chunk(Phase.DONE, done, iteration)

    async def _model_turn(
        self,
        run: _Run,
        iteration: int,
        tools: Mapping[str, Callable],
        tools_on: bool,
        turn: _Turn,
    ) -> AsyncIterator[StreamChunk]:
        """Stream one model turn, yielding its chunks and keeping what it said in ``turn``;
        that joins the transcript however the turn ends. ``tools_on``: the tools are offered."""
        specs = [fn.__tool_spec__ for fn in tools.values()] if tools_on else None
        if run.report:
            offered = tuple(tools) if tools_on else ()
            run.report.model_call_started(iteration, len(self.messages), offered)
        outside = OutsideTurn(
            lambda phase, content: run.chunk(phase, content, iteration),
            lambda calls, answered: self._run_calls(calls, iteration, run, tools, answered),
            run.policy,
        )
        error: BaseException | None = None
        try:
            async with _closing(self._stream(list(self.messages), specs, run.options)) as stream:
                async for event in stream:
                    if isinstance(event, _OUTSIDE):
                        async with aclosing(outside.chunks(event)) as chunks:
                            async for chunk in chunks:
                                yield chunk
                    elif isinstance(event, TextDelta):
                        turn.parts.append(event.text)
                        yield run.chunk(Phase.TEXT, event.text, iteration)
                    elif isinstance(event, ThinkingDelta):
                        yield run.chunk(Phase.THINKING, event.text, iteration)
                    elif isinstance(event, ToolCallRequest):
                        if tools_on:
                            turn.calls.append(with_distinct_id(event, turn.calls))
                    elif isinstance(event, TurnEnd):
                        turn.usage += event.usage
                        turn.stop_reason = event.stop_reason
                        turn.replayed = event.replayed
        except BaseException as exc:
            error = exc
            raise
        finally:
            if turn.parts or turn.calls:
                self.messages.append(_assistant_message(turn.text, turn.calls))
            if run.report:
                replayed = turn.replayed is not None
                run.report.model_call_finished(
                    iteration, turn.usage, turn.stop_reason, len(turn.calls), error, replayed
                )

    def _ask_again(self, schema: OutputSchema, turn: _Turn, problem: str, retries: int) -> None:
        """Ask the model to correct an answer that does not match ``schema``; once the
        retries are spent, raise :class:`StructuredOutputError` instead."""
        if retries >= RETRIES:
            raise StructuredOutputError(
                f"the model's answer did not match the {schema.name} schema "
                f"after {RETRIES + 1} tries: {problem}. Last answer: {turn.text[:300]!r}"
            )
        if not turn.parts:
            self.messages.append({"role": "assistant", "content": ""})
        self.messages.append({"role": "user", "content": schema.retry_prompt(problem)})

    def _refused_over_the_cap(
        self, run: _Run, calls: list[ToolCallRequest], iteration: int
    ) -> Iterator[StreamChunk]:
        """Answer the calls of the turn at the round cap "not executed", and show them so."""
        note = (
            f"Not executed: the limit of {self.max_iterations} tool rounds was reached. "
            "Answer now with what you have."
        )
        for call in calls:
            self.messages.append(_tool_message(call, ToolResult.error(note)))
            shown = {"id": call.id, "name": call.name}
            yield run.chunk(Phase.TOOL_CALL, {**shown, "arguments": call.arguments}, iteration)
            result = {**shown, "result": note, "is_error": True, "images": [], "images_unsent": []}
            yield run.chunk(Phase.TOOL_RESULT, result, iteration)

    def _prepare(
        self,
        tool_approval: Policy | None = None,
        deps: Any = None,
        thinking: bool | str | None = None,
        generate_kwargs: Mapping[str, Any] | None = None,
        schema: Any = None,
        events: ev.EventSink | None = None,
        compaction: Compaction | None = None,
        inbox: Inbox | None = None,
    ) -> _Run:
        """Check a run's overrides and resolve what the run uses; raise before it starts."""
        check_policy(tool_approval)
        output = OutputSchema.of(schema) if schema is not None else None
        chosen = check_thinking(thinking) if thinking is not None else self.thinking
        merged = {**self.generate_kwargs, **check_generate_kwargs(generate_kwargs)}
        response_format = output.response_format() if output is not None else None
        options = None
        if chosen is not None or merged or response_format is not None:
            options = GenerationOptions(chosen, merged, response_format)
        source = check_inbox(inbox) if inbox is not None else self.inbox
        ids = (self.name, uuid.uuid4().hex, self.parent_run_id)
        deliver = ev.sink_function(events if events is not None else self.events)
        return _Run(
            policy=tool_approval or self.tool_approval,
            deps=deps if deps is not None else self.deps,
            options=options,
            compaction=check_compaction(compaction) or self.compaction,
            read_inbox=source.reader(self.name) if source is not None else None,
            report=ev.RunReport(deliver, ids, self.client) if deliver is not None else None,
            schema=output,
            ids=ids,
        )

    def _stream(
        self, messages: list[dict[str, Any]], specs: list | None, options: GenerationOptions | None
    ) -> Any:
        # Without options the two-argument call also serves clients written before them.
        if options is None:
            return self.client.stream(messages, specs)
        return self.client.stream(messages, specs, options)

    async def _reload_changed_tools(self) -> None:
        """Take the current tools of every tool list whose server announced a change (an MCP
        server's ``tools/list_changed``; see ``__tool_source__``), in place of the old ones.

        A reloaded tool whose name another of the agent's tools holds is left out; a list
        that cannot be reloaded keeps its old tools. Both are logged.
        """
        sources = {
            id(source): source
            for fn in self.tools.values()
            if (source := getattr(fn, "__tool_source__", None)) is not None and source.changed
        }
        for source in sources.values():
            try:
                fresh = await source.reload()
            except Exception as exc:
                logger.warning("could not reload a changed tool list: %s", exc)
                continue
            kept = {
                name: fn
                for name, fn in self.tools.items()
                if getattr(fn, "__tool_source__", None) is not source
            }
            for fn in fresh:
                name = fn.__tool_spec__["function"]["name"]
                if name in kept:
                    logger.warning("a server's new tool %r is left out: the name is taken", name)
                else:
                    kept[name] = fn
            self.tools = kept

    def _offered_tools(self) -> dict[str, Callable]:
        """The agent's tools, plus ``load_tools`` and whatever its groups have loaded."""
        if self.tool_groups is None:
            return self.tools
        loader = self.tool_groups
        return {**self.tools, "load_tools": loader.tool, **loader.loaded}

    def _compact(self, run: _Run, iteration: int) -> None:
        """Apply the run's compaction policy to the conversation, refusing a broken result."""
        before = len(self.messages)
        compacted = run.compaction(list(self.messages))
        if compacted == self.messages:
            return  # unchanged: the conversation the loop keeps valid
        check_conversation(compacted)
        self.messages[:] = compacted
        if run.report:
            run.report.compacted(iteration, before, len(compacted))

    async def _run_calls(
        self,
        calls: list[ToolCallRequest],
        iteration: int,
        run: _Run,
        tools: Mapping[str, Callable],
        answered: dict[str, ToolResult] | None = None,
    ) -> AsyncIterator[StreamChunk]:
        """Dispatch one turn's calls, yielding their chunks live; answer every call.

        With ``answered`` (calls an outside agent made of the run's tools) the results go
        there, not into the transcript.
        """
        queue: asyncio.Queue = asyncio.Queue()
        results: dict[str, ToolResult] = answered if answered is not None else {}
        running: set[str] = set()
        lock = asyncio.Lock()
        concurrent = self.concurrent_tool_calls and len(calls) > 1
        reported = _ResultOrder(calls, self.client)

        def emit(phase: Phase | StreamChunk, content: Any) -> None:
            made = phase if isinstance(phase, StreamChunk) else run.chunk(phase, content, iteration)
            queue.put_nowait(made)

        async def run_one(call: ToolCallRequest) -> None:
            code = getattr(tools.get(call.name), "__tool_code__", None)
            code = dict(code) if isinstance(code, dict) else {}
            emit(
                Phase.TOOL_CALL,
                {"id": call.id, "name": call.name, "arguments": call.arguments, "code": code},
            )
            context = ToolContext(deps=run.deps, run_id=run.ids[1], agent=self.name,
                                  tool_call_id=call.id, approval=run.policy)  # fmt: skip
            try:
                result = await dispatch(
                    call,
                    tools,
                    policy=run.policy,
                    context=context,
                    emit=emit,
                    approval_lock=lock,
                    threaded=concurrent or self.threaded_tools,
                    flush=queue.join,
                    started=lambda: running.add(call.id),
                )
            except (KeyboardInterrupt, SystemExit) as exc:
                # Raised inside a task it would escape the event loop and skip every finally.
                message = f"the tool {call.name!r} raised {type(exc).__name__}"
                raise asyncio.CancelledError(message) from exc
            results[call.id] = result
            for content in reported.finished(call, result):
                emit(Phase.TOOL_RESULT, content)

        async def run_all() -> None:
            try:
                if concurrent:
                    await asyncio.gather(*(run_one(call) for call in calls))
                else:
                    for call in calls:
                        await run_one(call)
                        await asyncio.sleep(0)  # deliver a pending interrupt between calls
            finally:
                queue.put_nowait(_FINISHED)

        worker = asyncio.ensure_future(run_all())
        try:
            while (item := await queue.get()) is not _FINISHED:
                yield item
                queue.task_done()  # the consumer has taken it: a waiting tool may go on
            await worker
        finally:
            if not worker.done():
                worker.cancel()
                await asyncio.gather(worker, return_exceptions=True)
            for call in calls if answered is None else ():
                result = results.get(call.id) or ToolResult.error(
                    STOPPED if call.id in running else INTERRUPTED
                )
                self.messages.append(_tool_message(call, result))

    def _close_transcript(self) -> None:
        """The one rule for every failed run (an error, a stall, an interrupt, a tool that
        raised KeyboardInterrupt): the task and what was said stay; every open tool call is
        answered; the transcript ends on an assistant turn, so the next run can continue."""
        answered = {m.get("tool_call_id") for m in self.messages if m.get("role") == "tool"}
        last = self.messages[-1] if self.messages else None
        if last and last.get("role") == "assistant":
            for call in last.get("tool_calls") or ():
                if call["id"] not in answered:
                    self.messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": call["id"],
                            "name": call["function"]["name"],
                            "content": INTERRUPTED,
                        }
                    )
        if self.messages and self.messages[-1].get("role") != "assistant":
            self.messages.append({"role": "assistant", "content": "(This answer was interrupted.)"})


_OUTSIDE = (OutsideToolCall, PlanUpdate, PermissionRequest, HostedToolCall)


def check_thinking(value: Any) -> bool | str | None:
    """``thinking`` as given, or the ``ValueError`` :class:`GenerationOptions` raises for a
    value other than None, a bool, or low/medium/high."""
    return GenerationOptions(thinking=value).thinking


def check_generate_kwargs(value: Any) -> dict[str, Any]:
    """``generate_kwargs`` as a new dict; ``TypeError`` for anything but a str-keyed mapping."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise TypeError("generate_kwargs must be a dict of option name -> value")
    return dict(value)


def check_policy(policy: Any, name: str = "tool_approval") -> None:
    """``TypeError`` naming ``name`` unless ``policy`` is None or callable."""
    if policy is not None and not callable(policy):
        raise TypeError(f"{name} must be a callable policy(tool_name, arguments), or None")


def check_compaction(compaction: Any, name: str = "compaction") -> Compaction | None:
    """``compaction`` as given; ``TypeError`` naming ``name`` unless None or callable."""
    if compaction is not None and not callable(compaction):
        raise TypeError(
            f"{name} must be a callable messages -> messages (e.g. keep_last(20)), or None"
        )
    return compaction


def check_inbox(inbox: Any, name: str = "inbox") -> Inbox | None:
    """``inbox`` as given; ``TypeError`` naming ``name`` unless None or an Inbox."""
    if inbox is not None and not callable(getattr(inbox, "reader", None)):
        raise TypeError(f"{name} must be an aimu.agents.Inbox (an object with reader()), or None")
    return inbox


def index_tools(tools: Iterable[Callable], name: str = "tools") -> dict[str, Callable]:
    """The tools by the name in their spec; ``TypeError`` naming ``name`` for anything but a
    list of tools, ``ValueError`` for two different tools of one name."""
    if callable(tools) or isinstance(tools, str | bytes):
        raise TypeError(f"{name} must be a list of tools, e.g. tools=[my_tool]")
    index: dict[str, Callable] = {}
    for fn in tools:
        spec = getattr(fn, "__tool_spec__", None)
        if spec is None:
            label = getattr(fn, "__name__", repr(fn))
            raise TypeError(f"{name}: {label} is not a tool; decorate it with @aimu.tool")
        tool_name = spec["function"]["name"]
        if tool_name in index and index[tool_name] is not fn:
            raise ValueError(
                f"{name}: two different tools are named {tool_name!r}; tool names must be unique"
            )
        index[tool_name] = fn
    return index


class _ResultOrder:
    """The ``TOOL_RESULT`` contents of one batch of calls, each given once it can say which
    of its images the model will get (``images_unsent``).

    The model's client counts a batch's images in the order of its calls, as the transcript
    has them, not in the order they finish: a result with images the model may take waits
    for the results of the calls before it. Any other result is given when it finishes.
    """

    def __init__(self, calls: list[ToolCallRequest], client: ModelClient):
        self._client = client
        self._order = [call.id for call in calls]
        self._waiting: dict[str, tuple[ToolCallRequest, ToolResult] | None] = {}
        self._next = 0  # the first call, in order, whose images are not counted yet
        self._sent = 0  # the images of the calls before it that the model gets

    def finished(self, call: ToolCallRequest, result: ToolResult) -> list[dict[str, Any]]:
        """The contents ready now that ``call`` has ``result``: its own, unless it must wait,
        and those of the results that waited for it."""
        ready = []
        if result.images and self._client.sees_images:
            self._waiting[call.id] = (call, result)
        else:
            self._waiting[call.id] = None  # the model gets none of its images: nothing to count
            ready.append(self._content(call, result))
        while self._next < len(self._order) and self._order[self._next] in self._waiting:
            waited = self._waiting.pop(self._order[self._next])
            self._next += 1
            if waited is not None:
                ready.append(self._content(*waited))
        return ready

    def _content(self, call: ToolCallRequest, result: ToolResult) -> dict[str, Any]:
        images = [image.to_json() for image in result.images]
        unsent = self._client.unsent_images(images, self._sent)
        self._sent += unsent.count("")
        return {
            "id": call.id,
            "name": call.name,
            "result": result.text,
            "is_error": result.is_error,
            "images": images,
            "images_unsent": unsent,
        }


def _closing(stream: Any) -> Any:
    """Close a provider's stream as soon as the turn ends, however it ends."""
    return aclosing(stream) if hasattr(stream, "aclose") else nullcontext(stream)


def _assistant_message(text: str, calls: list[ToolCallRequest]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.raw_arguments or "{}"},
            }
            for call in calls
        ]
    return message


def _tool_message(call: ToolCallRequest, result: ToolResult) -> dict[str, Any]:
    message = {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": result.text}
    if result.images:
        message["images"] = [image.to_json() for image in result.images]
    return message
