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

from aimu._checks import positive_number, whole_number
from aimu._sync import iterate
from aimu.agents.compaction import Compaction
from aimu.agents.events import EventSink, sink_function
from aimu.agents.inbox import Inbox
from aimu.agents.loop import AgentCore, check_generate_kwargs, check_thinking
from aimu.models.base import ModelClient
from aimu.models.chunks import Phase, StreamChunk
from aimu.models.errors import ContextOverflowError
from aimu.models.registry import client as build_client
from aimu.models.registry import providers
from aimu.tools.approval import Policy, approve_all
from aimu.tools.context import ToolContext
from aimu.tools.decorator import tool
from aimu.tools.groups import ToolGroup, check_groups

logger = logging.getLogger("aimu.agents.subagent")

DEFAULT_SUBAGENT_SYSTEM_MESSAGE = (
    "You are a sub-agent working on one task delegated to you by another agent. Work only on "
    "that task and use your tools where they help. Finish with a complete, self-contained "
    "answer: the agent that delegated the task sees nothing but your final message."
)

SPEC_KEYS = frozenset(
    {
        "system_message",
        "description",
        "tools",
        "model",
        "model_options",
        "thinking",
        "generate_kwargs",
        "max_iterations",
        "compaction",
        "inbox",
        "tool_groups",
        "tool_approval",
    }
)
MIN_TIMEOUT, MAX_TIMEOUT = 1, 900
_END = object()


@dataclass(frozen=True)
class _Profile:
    """What one kind of sub-agent is made of, checked at factory time."""

    label: str
    system_message: str
    description: str
    tools: dict[str, Callable]
    model: str | ModelClient
    model_options: dict[str, Any]
    max_iterations: int
    tool_approval: Policy | None
    compaction: Compaction | None = None
    inbox: Inbox | None = None
    thinking: bool | str | None = None
    generate_kwargs: dict[str, Any] | None = None
    tool_groups: tuple[ToolGroup, ...] = ()


@dataclass(frozen=True)
class _Limits:
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
    positive_number(timeout, "timeout", unit="seconds")
    if not MIN_TIMEOUT <= timeout <= MAX_TIMEOUT:
        raise ValueError(
            f"timeout must be between {MIN_TIMEOUT} and {MAX_TIMEOUT} seconds, not {timeout!r}"
        )
    _check_policy(tool_approval, "tool_approval")
    _check_model(model, {}, "model")
    _check_compaction(compaction, "compaction")
    _check_inbox(inbox, "inbox")
    sink_function(events)
    limits = _Limits(float(timeout), concurrent_tool_calls, deps, events)
    allowlist = _tool_index(tools or (), "tools")

    if agent_types is None:
        if not isinstance(system_message, str):
            raise TypeError("system_message must be a string")
        profiles = {
            "subagent": _Profile(
                label="subagent",
                system_message=system_message,
                description="",
                tools=allowlist,
                model=model,
                model_options={},
                max_iterations=max_iterations,
                tool_approval=tool_approval,
                compaction=compaction,
                inbox=inbox,
            )
        }
    else:
        if not isinstance(agent_types, Mapping) or not agent_types:
            raise ValueError("agent_types must be a non-empty dict of name -> spec")
        factory = _Factory(model, max_iterations, tool_approval, compaction, inbox)
        profiles = {name: _profile(name, spec, factory) for name, spec in agent_types.items()}

    nested = None
    if max_depth > 1:
        nested = make_subagent_tool(
            model,
            system_message=system_message,
            tools=list(allowlist.values()),
            agent_types=agent_types,
            max_depth=max_depth - 1,
            max_iterations=max_iterations,
            concurrent_tool_calls=concurrent_tool_calls,
            deps=deps,
            tool_approval=tool_approval,
            tool_name=tool_name,
            timeout=timeout,
            events=events,
            compaction=compaction,
            inbox=inbox,
        )
    running: dict[str, AgentCore] = {}

    def start(profile: _Profile, task: str, requested: list[str] | None, ctx: ToolContext):
        return _run_subagent(profile, task, requested, ctx, limits, nested, running)

    def answer(profile: _Profile, task: str, requested: list[str] | None) -> str:
        """A direct call: run the sub-agent to the end and return what a model would read."""
        ctx = ToolContext(tool_call_id=f"direct-{uuid.uuid4().hex[:8]}")
        last: Any = None
        for chunk in iterate(lambda: start(profile, task, requested, ctx)):
            last = chunk
        return last.content["text"]

    if agent_types is None:
        profile = profiles["subagent"]

        def spawn_generic(
            task: str, tools: list[str] | None = None, ctx: ToolContext | None = None
        ) -> Any:
            if ctx is None:
                return answer(profile, task, tools)
            return start(profile, task, tools, ctx)

        spawn = spawn_generic
        spawn.__doc__ = _generic_doc(profile, limits)
    else:
        AgentType = Literal[tuple(profiles)]

        def spawn_typed(
            agent_type: AgentType,
            task: str,
            tools: list[str] | None = None,
            ctx: ToolContext | None = None,
        ) -> Any:
            chosen = profiles.get(agent_type)
            if chosen is None:
                return f"Unknown agent type {agent_type!r}. Choose one of: {', '.join(profiles)}."
            if ctx is None:
                return answer(chosen, task, tools)
            return start(chosen, task, tools, ctx)

        spawn = spawn_typed
        spawn.__doc__ = _typed_doc(profiles, limits)
    spawn.__name__ = spawn.__qualname__ = tool_name
    spawn = tool(name=tool_name, read_only=False)(spawn)
    # Through an agent (ctx given) it returns the sub-agent's chunk stream: dispatch streams it.
    spawn.__tool_is_async__ = spawn.__tool_is_streaming__ = True
    spawn.running = running
    return spawn


async def _run_subagent(
    profile: _Profile,
    task: str,
    requested: list[str] | None,
    ctx: ToolContext,
    limits: _Limits,
    nested: Callable | None,
    running: dict[str, AgentCore],
) -> AsyncIterator[StreamChunk]:
    """Run one sub-agent, forwarding its chunks; end with a DONE chunk carrying the result."""
    name = f"{ctx.agent}/{profile.label}@{ctx.tool_call_id}"
    granted, dropped = _grant(profile.tools, requested)
    if dropped:
        logger.warning(
            "sub-agent %s: dropped requested tools outside its allowlist: %s",
            name,
            ", ".join(dropped),
        )
    child_tools = list(granted.values()) + ([nested] if nested is not None else [])
    client = _fresh_client(profile)
    child = AgentCore(
        client,
        system_message=profile.system_message,
        tools=child_tools,
        tool_approval=_policy_for(profile.tool_approval, ctx.approval, name),
        max_iterations=profile.max_iterations,
        concurrent_tool_calls=limits.concurrent_tool_calls,
        deps=limits.deps if limits.deps is not None else ctx.deps,
        name=name,
        thinking=profile.thinking,
        generate_kwargs=profile.generate_kwargs,
        compaction=profile.compaction,
        inbox=profile.inbox,
        tool_groups=profile.tool_groups,
        events=limits.events,
    )
    child.parent_run_id = ctx.run_id or None
    child.threaded_tools = True  # its deadline and an interrupt must reach a blocking tool
    running[name] = child
    chunks: asyncio.Queue = asyncio.Queue()
    runner = asyncio.ensure_future(_pump(child, task, chunks))
    runner.add_done_callback(lambda _: chunks.put_nowait(_END))
    deadline = asyncio.get_running_loop().time() + limits.timeout
    done: dict[str, Any] = {}
    failure = ""
    iteration = 0
    try:
        while True:
            timer = asyncio.timeout_at(deadline)
            try:
                async with timer:
                    chunk = await chunks.get()
            except TimeoutError:
                if not timer.expired():
                    raise
                failure = (
                    f"The sub-agent timed out after {limits.timeout:g} s and was stopped before "
                    "it answered. Give it a smaller task, or do the work yourself."
                )
                break
            if chunk is _END:
                failure = _failure(runner)
                break
            iteration = chunk.iteration
            if chunk.phase is Phase.DONE and chunk.agent == name:
                done = chunk.content
                continue
            yield chunk
    finally:
        try:
            if not runner.done():
                runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
        finally:
            running.pop(name, None)
            await _close_client(client)
    yield StreamChunk(
        Phase.DONE,
        {
            "text": _result_text(profile, done, failure, dropped, granted),
            "usage": done.get("usage", {"input_tokens": 0, "output_tokens": 0}),
            "stop_reason": done.get("stop_reason", "interrupted"),
        },
        name,
        iteration,
    )


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


def _result_text(
    profile: _Profile,
    done: dict[str, Any],
    failure: str,
    dropped: list[str],
    granted: dict[str, Callable],
) -> str:
    """What the parent model reads: the answer, or why there is none, plus any notes."""
    parts = []
    if dropped:
        parts.append(
            f"[Requested tools not allowed for this sub-agent were dropped: {', '.join(dropped)}."
            f" It had: {', '.join(granted) or 'no tools'}.]"
        )
    if failure:
        parts.append(failure)
    else:
        parts.append(done.get("text") or "(The sub-agent finished without an answer.)")
        if done.get("stop_reason") == "max_iterations":
            parts.append(
                f"[The sub-agent reached its limit of {profile.max_iterations} tool rounds; "
                "this answer may be incomplete.]"
            )
    return "\n\n".join(parts)


def _grant(
    allowlist: dict[str, Callable], requested: list[str] | None
) -> tuple[dict[str, Callable], list[str]]:
    """The tools a sub-agent gets (allowlist ∩ request) and the requested names dropped."""
    if requested is None:
        return dict(allowlist), []
    granted = {name: allowlist[name] for name in dict.fromkeys(requested) if name in allowlist}
    dropped = [name for name in dict.fromkeys(requested) if name not in allowlist]
    return granted, dropped


def _fresh_client(profile: _Profile) -> ModelClient:
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


@dataclass(frozen=True)
class _Factory:
    """The factory-level tier a typed spec falls back on."""

    model: str | ModelClient
    max_iterations: int
    tool_approval: Policy | None
    compaction: Compaction | None
    inbox: Inbox | None


def _profile(name: Any, spec: Any, factory: _Factory) -> _Profile:
    if not isinstance(name, str) or not name:
        raise ValueError(f"agent_types names must be non-empty strings, not {name!r}")
    if not isinstance(spec, Mapping):
        raise TypeError(f"agent_types[{name!r}] must be a dict, not {type(spec).__name__}")
    unknown = sorted(set(spec) - SPEC_KEYS)
    label = f"agent_types[{name!r}]"
    if unknown:
        raise ValueError(
            f"{label} has unknown keys: {', '.join(map(str, unknown))}; "
            f"allowed keys are {', '.join(sorted(SPEC_KEYS))}"
        )
    system_message = spec.get("system_message")
    if not isinstance(system_message, str) or not system_message.strip():
        raise ValueError(f"{label} needs a 'system_message' string")
    description = spec.get("description", "")
    if not isinstance(description, str):
        raise TypeError(f"{label}['description'] must be a string")
    spec_model = spec.get("model", factory.model)
    options = spec.get("model_options") or {}
    if not isinstance(options, Mapping):
        raise TypeError(f"{label}['model_options'] must be a dict")
    _check_model(spec_model, options, f"{label}['model']")
    iterations = spec.get("max_iterations", factory.max_iterations)
    whole_number(iterations, f"{label}['max_iterations']")
    if "tool_approval" in spec:
        policy = spec["tool_approval"]
        _check_policy(policy, f"{label}['tool_approval']")
        policy = approve_all if policy is None else policy
    else:
        policy = factory.tool_approval
    compaction = spec.get("compaction", factory.compaction)  # membership: None turns it off
    _check_compaction(compaction, f"{label}['compaction']")
    inbox = spec.get("inbox", factory.inbox)
    _check_inbox(inbox, f"{label}['inbox']")
    try:
        thinking = check_thinking(spec.get("thinking"))
        generate_kwargs = spec.get("generate_kwargs")
        if generate_kwargs is not None:
            generate_kwargs = check_generate_kwargs(generate_kwargs)
        groups = tuple(check_groups(spec.get("tool_groups"), f"{label}['tool_groups']"))
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{label}: {exc}") from None
    tools = _tool_index(spec.get("tools") or (), f"{label}['tools']")
    return _Profile(
        name,
        system_message,
        description,
        tools,
        spec_model,
        dict(options),
        iterations,
        policy,
        compaction=compaction,
        inbox=inbox,
        thinking=thinking,
        generate_kwargs=generate_kwargs,
        tool_groups=groups,
    )


def _tool_index(tools: Iterable[Callable], label: str) -> dict[str, Callable]:
    if callable(tools) or isinstance(tools, str | bytes):
        raise TypeError(f"{label} must be a list of tools")
    index: dict[str, Callable] = {}
    for fn in tools:
        spec = getattr(fn, "__tool_spec__", None)
        if spec is None:
            raise TypeError(f"{label}: {fn!r} is not a tool; decorate it with @aimu.tool")
        index[spec["function"]["name"]] = fn
    return index


def _check_model(model: Any, options: Mapping[str, Any], label: str) -> None:
    if isinstance(model, ModelClient):
        if type(model).clone is ModelClient.clone:
            raise TypeError(
                f"{label}: {type(model).__name__} cannot be cloned, and every sub-agent needs "
                "its own client; pass a 'provider:model' string instead"
            )
        if options:
            raise ValueError(f"{label}: model_options need a 'provider:model' string")
    elif not isinstance(model, str) or not model.strip():
        raise TypeError(f"{label} must be a 'provider:model' string or a ModelClient")
    elif (provider := model.strip().partition(":")[0]) not in providers():
        raise ValueError(
            f"{label}: unknown model provider {provider!r}; use one of: {', '.join(providers())}"
        )


def _check_compaction(compaction: Any, label: str) -> None:
    if compaction is not None and not callable(compaction):
        raise TypeError(f"{label} must be a callable messages -> messages, or None")


def _check_inbox(inbox: Any, label: str) -> None:
    if inbox is not None and not callable(getattr(inbox, "reader", None)):
        raise TypeError(f"{label} must be an aimu.agents.Inbox, or None")


def _check_policy(policy: Any, label: str) -> None:
    if policy is not None and not callable(policy):
        raise TypeError(f"{label} must be a callable policy(tool_name, arguments) or None")


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


def _generic_doc(profile: _Profile, limits: _Limits) -> str:
    return (
        "Delegate a self-contained task to a fresh sub-agent and return its final answer. "
        f"{_tools_line(profile.tools)} It stops after {limits.timeout:g} seconds."
        + _ARGS.format(extra="")
    )


def _typed_doc(profiles: dict[str, _Profile], limits: _Limits) -> str:
    lines = [
        f"- {name}: {p.description or 'specialist'} ({', '.join(p.tools) or 'no tools'})"
        for name, p in profiles.items()
    ]
    return (
        "Delegate a self-contained task to a fresh specialist sub-agent and return its final "
        f"answer. It stops after {limits.timeout:g} seconds. Specialists (and their tools):\n"
        + "\n".join(lines)
        + _ARGS.format(extra="agent_type: Which specialist to run.\n    ")
    )
