"""The one dispatch path every tool call takes.

look up -> approval policy -> coerce arguments -> call -> result. Every failure on the way
becomes a :class:`ToolResult` flagged as an error, which the model reads and corrects from;
nothing here ends a run except an interrupt (``KeyboardInterrupt``, cancellation).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aimu.models.base import ToolCallRequest
from aimu.models.chunks import Phase, StreamChunk
from aimu.tools.approval import Policy, approve_all, decide, needs_asking, refusal_message
from aimu.tools.arguments import coerce_tool_arguments
from aimu.tools.context import ToolContext
from aimu.tools.errors import ToolArgumentError
from aimu.tools.results import ToolResult, to_result

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
) -> ToolResult:
    """Run one tool call and return its result; never raises for a tool's own failure.

    ``emit`` receives approval and progress events as they happen. ``approval_lock`` makes
    concurrent calls ask one at a time. ``threaded`` runs synchronous tools in a worker
    thread (used when calls run concurrently). ``flush`` is awaited after each progress
    event of a streaming tool, so the consumer can show it before the tool goes on.
    """
    name = call.name
    if call.error:
        return ToolResult.error(f"Tool '{name}' was not called: {call.error}.")
    fn = tools.get(name)
    if fn is None:
        available = ", ".join(sorted(tools)) or "none"
        return ToolResult.error(f"Unknown tool '{name}'. Available tools: {available}.")

    if needs_asking(policy, name, call.arguments):
        async with approval_lock or _NO_LOCK:
            emit(
                Phase.APPROVAL_REQUESTED, {"id": call.id, "name": name, "arguments": call.arguments}
            )
            decision = await decide(policy, name, call.arguments)
            emit(
                Phase.APPROVAL_DECIDED,
                {
                    "id": call.id,
                    "name": name,
                    "approved": decision.approved,
                    "reason": decision.reason,
                },
            )
        if not decision.approved:
            return ToolResult.error(refusal_message(name, decision))

    try:
        kwargs = coerce_tool_arguments(fn, call.arguments)
    except ToolArgumentError as exc:
        return ToolResult.error(str(exc))
    params = getattr(fn, "__tool_params__", None)
    if params is not None and params.context_param:
        kwargs[params.context_param] = context or ToolContext(tool_call_id=call.id)

    try:
        runner = getattr(fn, "__tool_stream__", fn)  # a tool's own form for agents (MCP's)
        if getattr(runner, "__tool_is_streaming__", False):
            value = await _consume_stream(runner, kwargs, call, emit, threaded, flush or _yield)
        elif getattr(fn, "__tool_is_async__", False):
            value = await fn(**kwargs)
        elif threaded:
            value = await asyncio.to_thread(fn, **kwargs)
        else:
            value = fn(**kwargs)
            if asyncio.iscoroutine(value):  # a wrapper hiding an async function
                value = await value
    except (Exception, SystemExit) as exc:
        return ToolResult.error(f"Tool '{name}' raised an error: {type(exc).__name__}: {exc}")
    return to_result(value)


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
            done, item = await asyncio.to_thread(_step, generator) if threaded else _step(generator)
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


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)
