"""``make_subagent_tool``: let a model hand a self-contained task to a fresh, bounded sub-agent.

Every call builds a new agent on a new model client, runs it under a time limit with at most
the tools its author allowed, streams its chunks into the parent's run (nested under the
spawn call by the child's name, ``"{parent}/{label}@{tool_call_id}"``) and always tears it
down. The parent model reads only the final result.

Approval: a sub-agent asks its spec's ``tool_approval``, else the factory's, else the calling
agent's own policy, so delegating a task never escapes the parent's gate. A policy that
has a ``for_agent(agent_name) -> policy`` method is asked for a policy bound to the sub-agent
first, so the gate can say which sub-agent is asking; plain policies are used as they are.

Precedence of a typed spec's keys (as the reference library spells it): ``model`` and
``max_iterations`` fall back to the factory's; ``compaction``, ``inbox`` and ``tool_approval``
are read by membership, so an absent key takes the factory's value and ``"key": None`` turns
the factory's off for that one specialist; ``thinking``, ``generate_kwargs`` and
``tool_groups`` have no factory tier, so an absent key means none. A nested spawn tool is
built from the factory's tier again, never from the specialist that built its parent.
"""

import asyncio
import inspect
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Literal

from aimu._checks import whole_number
from aimu._sync import iterate
from aimu.agents._subagent_spec import MAX_TIMEOUT as MAX_TIMEOUT
from aimu.agents._subagent_spec import MIN_TIMEOUT as MIN_TIMEOUT
from aimu.agents._subagent_spec import SPEC_KEYS as SPEC_KEYS
from aimu.agents._subagent_spec import Factory, Profile, check_timeout, profiles
from aimu.agents.compaction import Compaction
from aimu.agents.events import EventSink, sink_function
from aimu.agents.inbox import Inbox
from aimu.agents.loop import AgentCore
from aimu.models.base import ModelClient
from aimu.models.chunks import Phase, StreamChunk
from aimu.models.errors import ContextOverflowError
from aimu.models.registry import client as build_client
from aimu.tools.approval import Policy, approve_all
from aimu.tools.context import ToolContext
from aimu.tools.decorator import tool

logger = logging.getLogger("aimu.agents.subagent")

DEFAULT_SUBAGENT_SYSTEM_MESSAGE = (
    "You are a sub-agent working on one task delegated to you by another agent. Work only on "
    "that task and use your tools where they help. Finish with a complete, self-contained "
    "answer: the agent that delegated the task sees nothing but your final message."
)
_END = object()


@dataclass(frozen=True)
class _Limits:
    """How every sub-agent of one factory runs, whatever its kind and at every depth."""

    timeout: float
    concurrent_tool_calls: bool
    deps: Any
    events: EventSink | None = None


def make_subagent_tool(
    model: str | ModelClient,
    *,
    system_message: str = DEFAULT_SUBAGENT_SYSTEM_MESSAGE,
    tools: Iterable[Callable] | None = None,
    agent_types: Mapping[str, Mapping[str, Any]] | None = None,
    max_depth: int = 1,
    max_iterations: int = 10,
    concurrent_tool_calls: bool = True,
    deps: Any = None,
    tool_approval: Policy | None = None,
    tool_name: str = "spawn_subagent",
    timeout: float = 120,
    events: EventSink | None = None,
    compaction: Compaction | None = None,
    inbox: Inbox | None = None,
) -> Callable:
    """Build a tool that delegates a task to a fresh, isolated sub-agent.

    Generic shape (``agent_types=None``): ``spawn_subagent(task, tools=None)`` runs a sub-agent
    with ``system_message`` and at most ``tools``. Typed shape: ``spawn_subagent(agent_type,
    task, tools=None)`` over named specialists; each spec has ``system_message`` and optionally
    ``description`` (shown to the model), ``tools`` (its allowlist; omitted means none),
    ``model`` and ``model_options`` (passed to :func:`aimu.client`), ``thinking``,
    ``generate_kwargs`` (sent with every request of the sub-agent, over its client's
    ``default_generate_kwargs``), ``max_iterations``, ``compaction``, ``inbox``, ``tool_groups``
    and ``tool_approval`` (omitted inherits the factory's, and without either the calling
    agent's; ``None`` runs it ungated), with the precedence the module docstring gives. Any
    other key raises ``ValueError``.

    ``events`` is the sink every spawned sub-agent reports to (its runs name the calling run
    as their parent); ``compaction`` and ``inbox`` apply to every spawned sub-agent (each
    opens its own reader of the inbox). A sub-agent whose context window fills up does not
    raise: the result says that the sub-agent's window, not the caller's, filled.

    ``tools`` (or a spec's) is the most a sub-agent may get; the model may ask for a subset by
    name, and names outside the allowlist are dropped, logged and named in the result.
    ``max_depth`` counts the caller as level 1, so by default a sub-agent cannot spawn.
    ``timeout`` (seconds, 1-900) stops a sub-agent that runs too long. ``model`` is a
    ``"provider:model"`` string or a client to :meth:`~aimu.models.ModelClient.clone`; either
    way each call gets its own client. ``deps`` defaults to the calling agent's deps.

    The returned tool is named ``tool_name``. Called by an agent it streams the sub-agent's
    chunks into the run; called directly (``spawn("task")``) it runs the sub-agent and
    returns its answer as a string. Its ``running`` attribute maps the names of its
    sub-agents running now to their agents; every sub-agent leaves it when it ends.
    """
    if not isinstance(tool_name, str) or not tool_name:
        raise ValueError("tool_name must be a non-empty string")
    whole_number(max_depth, "max_depth")
    whole_number(max_iterations, "max_iterations")
    limits = _Limits(check_timeout(timeout), concurrent_tool_calls, deps, events)
    factory = Factory(model, max_iterations, tool_approval, compaction, inbox)
    sink_function(events)
    offered = profiles(factory, system_message, tools, agent_types)
    return _spawn_tool(offered, agent_types is not None, limits, tool_name, max_depth)


def _spawn_tool(
    offered: dict[str, Profile], typed: bool, limits: _Limits, tool_name: str, depth: int
) -> Callable:
    """The tool of one level; with ``depth`` > 1 its sub-agents get the next level's."""
    nested = _spawn_tool(offered, typed, limits, tool_name, depth - 1) if depth > 1 else None
    spawner = _Spawner(limits, nested)
    if typed:
        spawn = _typed_entry(spawner, offered)
    else:
        spawn = _generic_entry(spawner, offered["subagent"])
    spawn.__name__ = spawn.__qualname__ = tool_name
    spawn = tool(name=tool_name, read_only=False)(spawn)
    # Through an agent (ctx given) it returns the sub-agent's chunk stream: dispatch streams it.
    spawn.__tool_is_async__ = spawn.__tool_is_streaming__ = True
    spawn.running = spawner.running
    return spawn


def _generic_entry(spawner: "_Spawner", profile: Profile) -> Callable:
    def spawn(task: str, tools: list[str] | None = None, ctx: ToolContext | None = None) -> Any:
        return spawner(profile, task, tools, ctx)

    spawn.__doc__ = _generic_doc(profile, spawner.limits)
    return spawn


def _typed_entry(spawner: "_Spawner", offered: dict[str, Profile]) -> Callable:
    AgentType = Literal[tuple(offered)]

    def spawn(
        agent_type: AgentType,
        task: str,
        tools: list[str] | None = None,
        ctx: ToolContext | None = None,
    ) -> Any:
        chosen = offered.get(agent_type)
        if chosen is None:
            return f"Unknown agent type {agent_type!r}. Choose one of: {', '.join(offered)}."
        return spawner(chosen, task, tools, ctx)

    spawn.__doc__ = _typed_doc(offered, spawner.limits)
    return spawn


class _Spawner:
    """Runs one spawn tool's sub-agents; ``running`` maps the names of those running now."""

    def __init__(self, limits: _Limits, nested: Callable | None):
        self.limits = limits
        self.nested = nested
        self.running: dict[str, AgentCore] = {}

    def __call__(
        self, profile: Profile, task: str, requested: list[str] | None, ctx: ToolContext | None
    ) -> Any:
        """Through an agent (``ctx`` given) the sub-agent's chunks; called directly its answer."""
        if ctx is None:
            return self._answer(profile, task, requested)
        return self._stream(profile, task, requested, ctx)

    def _answer(self, profile: Profile, task: str, requested: list[str] | None) -> str:
        """A direct call: run the sub-agent to the end and return what a model would read."""
        ctx = ToolContext(tool_call_id=f"direct-{uuid.uuid4().hex[:8]}")
        last: Any = None
        for chunk in iterate(lambda: self._stream(profile, task, requested, ctx)):
            last = chunk
        return last.content["text"]

    async def _stream(
        self, profile: Profile, task: str, requested: list[str] | None, ctx: ToolContext
    ) -> AsyncIterator[StreamChunk]:
        """Run one sub-agent, forwarding its chunks; end with a DONE chunk carrying the result."""
        run = _Run(profile, requested, ctx, self.limits, self.nested)
        self.running[run.name] = run.child
        try:
            async with aclosing(run.forward(task)) as chunks:
                async for chunk in chunks:
                    yield chunk
        finally:
            self.running.pop(run.name, None)
            await _close_client(run.client)
        yield run.result()


class _Run:
    """One spawned sub-agent: built on a fresh client, run to its deadline, reported on."""

    def __init__(
        self,
        profile: Profile,
        requested: list[str] | None,
        ctx: ToolContext,
        limits: _Limits,
        nested: Callable | None,
    ):
        self.name = f"{ctx.agent}/{profile.label}@{ctx.tool_call_id}"
        self.profile = profile
        self.timeout = limits.timeout
        self.granted, self.dropped = _grant(profile.tools, requested)
        if self.dropped:
            logger.warning(
                "sub-agent %s: dropped requested tools outside its allowlist: %s",
                self.name,
                ", ".join(self.dropped),
            )
        self.client = _fresh_client(profile)
        self.child = AgentCore(
            self.client,
            system_message=profile.system_message,
            tools=list(self.granted.values()) + ([nested] if nested is not None else []),
            tool_approval=_policy_for(profile.tool_approval, ctx.approval, self.name),
            max_iterations=profile.max_iterations,
            concurrent_tool_calls=limits.concurrent_tool_calls,
            deps=limits.deps if limits.deps is not None else ctx.deps,
            name=self.name,
            thinking=profile.thinking,
            generate_kwargs=profile.generate_kwargs,
            compaction=profile.compaction,
            inbox=profile.inbox,
            tool_groups=profile.tool_groups,
            events=limits.events,
        )
        self.child.parent_run_id = ctx.run_id or None
        self.child.threaded_tools = True  # its deadline and an interrupt must reach a blocking tool
        self.done: dict[str, Any] = {}
        self.failure = ""
        self.iteration = 0

    async def forward(self, task: str) -> AsyncIterator[StreamChunk]:
        """Run the sub-agent until it ends or its time is up; yield its chunks but its DONE."""
        chunks: asyncio.Queue = asyncio.Queue()
        runner = asyncio.ensure_future(_pump(self.child, task, chunks))
        runner.add_done_callback(lambda _: chunks.put_nowait(_END))
        deadline = asyncio.get_running_loop().time() + self.timeout
        try:
            while True:
                timer = asyncio.timeout_at(deadline)
                try:
                    async with timer:
                        chunk = await chunks.get()
                except TimeoutError:
                    if not timer.expired():
                        raise
                    self.failure = (
                        f"The sub-agent timed out after {self.timeout:g} s and was stopped "
                        "before it answered. Give it a smaller task, or do the work yourself."
                    )
                    return
                if chunk is _END:
                    self.failure = _failure(runner)
                    return
                self.iteration = chunk.iteration
                if chunk.phase is Phase.DONE and chunk.agent == self.name:
                    self.done = chunk.content
                    continue
                yield chunk
        finally:
            if not runner.done():
                runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)

    def result(self) -> StreamChunk:
        """The DONE chunk the parent model reads, with the sub-agent's usage."""
        content = {
            "text": self._text(),
            "usage": self.done.get("usage", {"input_tokens": 0, "output_tokens": 0}),
            "stop_reason": self.done.get("stop_reason", "interrupted"),
        }
        return StreamChunk(Phase.DONE, content, self.name, self.iteration)

    def _text(self) -> str:
        """The answer, or why there is none, plus any notes."""
        parts = []
        if self.dropped:
            parts.append(
                "[Requested tools not allowed for this sub-agent were dropped: "
                f"{', '.join(self.dropped)}. It had: {', '.join(self.granted) or 'no tools'}.]"
            )
        if self.failure:
            parts.append(self.failure)
        else:
            parts.append(self.done.get("text") or "(The sub-agent finished without an answer.)")
            if self.done.get("stop_reason") == "max_iterations":
                parts.append(
                    f"[The sub-agent reached its limit of {self.profile.max_iterations} tool "
                    "rounds; this answer may be incomplete.]"
                )
        return "\n\n".join(parts)


async def _pump(child: AgentCore, task: str, chunks: asyncio.Queue) -> None:
    """Run the sub-agent in a task of its own, so cancelling it unwinds its whole loop."""
    async with aclosing(child._chunks(task)) as events:
        async for chunk in events:
            chunks.put_nowait(chunk)


def _failure(runner: asyncio.Future) -> str:
    """Why the sub-agent ended without an answer, or ``""`` if it finished."""
    if runner.cancelled():
        return "The sub-agent was cancelled before it answered."
    exc = runner.exception()
    if exc is None:
        return ""
    if isinstance(exc, ContextOverflowError):
        return _overflow_result(exc)
    return f"The sub-agent failed: {type(exc).__name__}: {exc}"


def _overflow_result(exc: ContextOverflowError) -> str:
    """What the parent reads when the sub-agent's own window filled: not the parent's."""
    window = getattr(exc, "window", None)
    size = f" of {window} tokens" if window else ""
    return (
        f"The sub-agent stopped: its own context window{size} filled up (the sub-agent's "
        "conversation, not yours; yours is fine). Give it a smaller task or ask it for less "
        "output."
    )


def _grant(
    allowlist: dict[str, Callable], requested: list[str] | None
) -> tuple[dict[str, Callable], list[str]]:
    """The tools a sub-agent gets (allowlist ∩ request) and the requested names dropped."""
    if requested is None:
        return dict(allowlist), []
    granted = {name: allowlist[name] for name in dict.fromkeys(requested) if name in allowlist}
    dropped = [name for name in dict.fromkeys(requested) if name not in allowlist]
    return granted, dropped


def _fresh_client(profile: Profile) -> ModelClient:
    if isinstance(profile.model, ModelClient):
        return profile.model.clone()
    return build_client(profile.model, **profile.model_options)


async def _close_client(client: ModelClient) -> None:
    """Release what a client holds (connection pools), if it has anything to release."""
    for method in ("aclose", "close"):
        close = getattr(client, method, None)
        if callable(close):
            try:
                result = close()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                logger.warning("closing a sub-agent's model client failed", exc_info=True)
            return


def _policy_for(policy: Policy | None, inherited: Policy | None, agent_name: str) -> Policy:
    """The sub-agent's gate: its spec's or factory's policy, else the calling agent's."""
    chosen = policy if policy is not None else inherited
    if chosen is None:
        return approve_all
    bind = getattr(chosen, "for_agent", None)
    return bind(agent_name) if callable(bind) else chosen


def _tools_line(tools: dict[str, Callable]) -> str:
    if not tools:
        return "It has no tools."
    return (
        f"It can use these tools: {', '.join(tools)}. Pass `tools` to give it only some of "
        "them; omit it to give it all."
    )


_ARGS = """

Args:
    {extra}task: Everything the sub-agent needs to do the work: it starts with no memory of
        this conversation.
    tools: Names of the tools to give it (a subset of those it may have); omit for all."""


def _generic_doc(profile: Profile, limits: _Limits) -> str:
    return (
        "Delegate a self-contained task to a fresh sub-agent and return its final answer. "
        f"{_tools_line(profile.tools)} It stops after {limits.timeout:g} seconds."
        + _ARGS.format(extra="")
    )


def _typed_doc(offered: dict[str, Profile], limits: _Limits) -> str:
    lines = [
        f"- {name}: {p.description or 'specialist'} ({', '.join(p.tools) or 'no tools'})"
        for name, p in offered.items()
    ]
    return (
        "Delegate a self-contained task to a fresh specialist sub-agent and return its final "
        f"answer. It stops after {limits.timeout:g} seconds. Specialists (and their tools):\n"
        + "\n".join(lines)
        + _ARGS.format(extra="agent_type: Which specialist to run.\n    ")
    )
