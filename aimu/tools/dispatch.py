"""The one dispatch path every tool call takes.

look up -> coerce arguments -> approval policy (shown the coerced values and the tool) ->
call -> result. Every failure on the way becomes a :class:`ToolResult` flagged as an error,
which the model reads and corrects from; nothing here ends a run except an interrupt
(``KeyboardInterrupt``, cancellation).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aimu.models.base import ToolCallRequest
from aimu.models.chunks import Phase, StreamChunk
from aimu.tools.approval import (
    CHECK_FAILED,
    Decision,
    Policy,
    approve_all,
    asks_because,
    decide,
    decided,
    needs_asking,
    refusal_message,
)
from aimu.tools.arguments import coerce_tool_arguments
from aimu.tools.context import ToolContext
from aimu.tools.errors import ToolArgumentError
from aimu.tools.results import ToolResult, to_result
from aimu.tools.stopping import run_in_thread

logger = logging.getLogger("aimu.tools")

Emit = Callable[[Phase | StreamChunk, Any], None]


_NO_LOCK = contextlib.nullcontext()


def _drop(_phase: Phase | StreamChunk, _content: Any) -> None:
    pass


async def dispatch(
    call: ToolCallRequest,
    tools: Mapping[str, Callable],
    *,
    policy: Policy = approve_all,
    context: ToolContext | None = None,
    emit: Emit = _drop,
    approval_lock: asyncio.Lock | None = None,
    threaded: bool = False,
    flush: Callable[[], Awaitable[Any]] | None = None,
    started: Callable[[], None] | None = None,
) -> ToolResult:
    """Run one tool call and return its result; never raises for a tool's own failure.

    ``emit`` receives approval and progress events as they happen. ``approval_lock`` makes
    concurrent calls ask one at a time. ``threaded`` runs synchronous tools in a worker
    thread (used when calls run concurrently). ``flush`` is awaited after each progress
    event of a streaming tool, so the consumer can show it before the tool goes on.
    ``started`` is called just before the tool itself is called (after its approval).
    """
    name = call.name
    if call.error:
        return ToolResult.error(f"Tool '{name}' was not called: {call.error}.")
    fn = tools.get(name)
    if fn is None:
        available = ", ".join(sorted(tools)) or "none"
        return ToolResult.error(f"Unknown tool '{name}'. Available tools: {available}.")

    try:
        kwargs = coerce_tool_arguments(fn, call.arguments)
    except ToolArgumentError as exc:
        return ToolResult.error(str(exc))
    if policy is not approve_all:
        decision = await _approval(fn, call, kwargs, policy, emit, approval_lock or _NO_LOCK)
        if decision is not None and not decision.approved:
            return ToolResult.error(refusal_message(name, decision))
    params = getattr(fn, "__tool_params__", None)
    if params is not None and params.context_param:
        kwargs[params.context_param] = context or ToolContext(tool_call_id=call.id)

    if started is not None:
        started()
    try:
        runner = getattr(fn, "__tool_stream__", fn)  # a tool's own form for agents (MCP's)
        if getattr(runner, "__tool_is_streaming__", False):
            value = await _consume_stream(runner, kwargs, call, emit, threaded, flush or _yield)
        elif getattr(fn, "__tool_is_async__", False):
            value = await fn(**kwargs)
        elif threaded:
            value = await run_in_thread(fn, **kwargs)
        else:
            value = fn(**kwargs)
            if asyncio.iscoroutine(value):  # a wrapper hiding an async function
                value = await value
    except (Exception, SystemExit) as exc:
        return ToolResult.error(f"Tool '{name}' raised an error: {type(exc).__name__}: {exc}")
    try:
        return to_result(value)
    except Exception as exc:  # 10**5000, a list that contains itself, a broken __str__...
        return ToolResult.error(
            f"Tool '{name}' returned a value that cannot be turned into text: "
            f"{type(exc).__name__}: {exc}"
        )


async def _approval(
    fn: Callable,
    call: ToolCallRequest,
    arguments: dict[str, Any],
    policy: Policy,
    emit: Emit,
    lock: contextlib.AbstractAsyncContextManager,
) -> Decision | None:
    """Put one call to the policy; ``None`` when it runs without asking.

    The policy sees a copy of the coerced arguments, and its ``requires_approval`` sees the
    tool too. Either one raising refuses the call. A decision ``requires_approval`` made
    itself is recorded without asking.
    """
    failed = False
    try:
        asking = await needs_asking(policy, call.name, dict(arguments), fn)
    except Exception:
        logger.warning("requires_approval failed for tool %r; the call is refused", call.name,
                       exc_info=True)  # fmt: skip
        asking = failed = True
    if isinstance(asking, Decision):  # decided without asking: a standing "Always allow"
        emit(
            Phase.APPROVAL_DECIDED,
            {"id": call.id, "name": call.name, **decided(asking), "why": asks_because(fn)},
        )
        return asking
    if not asking:
        return None
    async with lock:
        why = asks_because(fn)
        emit(
            Phase.APPROVAL_REQUESTED,
            {"id": call.id, "name": call.name, "arguments": _jsonable(arguments), "why": why},
        )
        if failed:
            decision = Decision(False, CHECK_FAILED)
        else:
            decision = await decide(policy, call.name, dict(arguments), fn)
        emit(
            Phase.APPROVAL_DECIDED,
            {
                "id": call.id,
                "name": call.name,
                **decided(decision),
                "why": why,
            },
        )
    return decision


def with_distinct_id(call: ToolCallRequest, earlier: Sequence[ToolCallRequest]) -> ToolCallRequest:
    """``call``, renamed ``<id>_2`` (``_3``...) if an earlier call of its turn has its id.

    Each call of a turn then runs once and gets its own answer, and the transcript stays
    valid (providers refuse two tool results for one id).
    """
    taken = {other.id for other in earlier}
    if call.id not in taken:
        return call
    number = 2
    while f"{call.id}_{number}" in taken:
        number += 1
    return dataclasses.replace(call, id=f"{call.id}_{number}")


async def _yield() -> None:
    await asyncio.sleep(0)


async def _consume_stream(
    fn: Callable,
    kwargs: dict,
    call: ToolCallRequest,
    emit: Emit,
    threaded: bool,
    flush: Callable[[], Awaitable[Any]],
) -> Any:
    """Forward what a generator tool yields; return its return value or last result."""
    last: Any = None
    returned: Any = None
    if getattr(fn, "__tool_is_async__", False):
        async with contextlib.aclosing(fn(**kwargs)) as stream:  # closed now, even on cancel
            async for item in stream:
                last = _forward(item, last, call, emit)
                await flush()
        return last

    generator = fn(**kwargs)
    try:
        while True:
            done, item = await run_in_thread(_step, generator) if threaded else _step(generator)
            if done:
                returned = item
                break
            last = _forward(item, last, call, emit)
            await flush()
    finally:
        generator.close()
    return returned if returned is not None else last


def _step(generator: Any) -> tuple[bool, Any]:
    """Advance a generator: ``(False, item)``, or ``(True, return value)`` when it ends."""
    try:
        return False, next(generator)
    except StopIteration as stop:
        return True, stop.value


def _forward(item: Any, last: Any, call: ToolCallRequest, emit: Emit) -> Any:
    if isinstance(item, ToolResult):  # a streaming tool's answer, not progress
        return item
    if isinstance(item, StreamChunk):
        emit(item, None)
        if item.phase is Phase.DONE:
            return item.content.get("text", last)
        return last
    emit(Phase.TOOL_PROGRESS, {"id": call.id, "name": call.name, "progress": _jsonable(item)})
    return item


_MAX_NESTING = 32


def _jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data for an event; nesting past a limit (or a container that
    holds itself) is cut off as ``"…"``."""
    if value is None or isinstance(value, str | float | bool):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else f"(an integer of {value.bit_length()} bits)"
    if depth >= _MAX_NESTING:
        return "…"
    if isinstance(value, list | tuple):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    try:
        return str(value)
    except Exception:
        return f"({type(value).__name__})"
