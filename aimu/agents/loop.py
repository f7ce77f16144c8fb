"""The agent loop, written once as an async generator of :class:`StreamChunk`.

:class:`aimu.agents.Agent` (sync) and :class:`aimu.aio.Agent` (async) are thin drivers
around :class:`AgentCore`; they differ only in how they consume :meth:`AgentCore.events`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import aclosing, nullcontext
from typing import Any

from aimu.models.base import (
    ModelClient,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    TurnEnd,
    Usage,
)
from aimu.models.chunks import Phase, StreamChunk
from aimu.models.registry import client as build_client
from aimu.tools.approval import Policy, approve_all
from aimu.tools.context import ToolContext
from aimu.tools.dispatch import dispatch, with_distinct_id
from aimu.tools.results import ToolResult

INTERRUPTED = "Not executed: the run was interrupted before this call ran."
_FINISHED = object()


class AgentCore:
    """Configuration, conversation and the loop shared by both agent drivers.

    ``client`` is a :class:`ModelClient`, a ``"provider:model"`` string, or ``None`` for the
    default model (``AIMU_MODEL``, else the embedded ``local`` model when installed).

    ``max_iterations`` bounds the model turns that may call tools. When the turn at the cap
    still asks for tools, those calls are answered "not executed" and one more turn, with
    tools switched off, produces the answer.
    """

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
    ):
        if (
            isinstance(max_iterations, bool)
            or not isinstance(max_iterations, int)
            or max_iterations < 1
        ):
            raise ValueError(f"max_iterations must be an int >= 1, not {max_iterations!r}")
        if tool_approval is not None and not callable(tool_approval):
            raise TypeError("tool_approval must be a callable policy(tool_name, arguments)")
        self.client = client if isinstance(client, ModelClient) else build_client(client)
        self.system_message = system_message
        self.tools = _index_tools(tools)
        self.tool_approval: Policy = tool_approval or approve_all
        self.max_iterations = max_iterations
        self.concurrent_tool_calls = concurrent_tool_calls
        self.deps = deps
        self.name = name
        self.messages: list[dict[str, Any]] = []

    def reset(self) -> None:
        """Forget the conversation; the next run starts fresh."""
        self.messages.clear()

    async def events(self, task: str) -> AsyncIterator[StreamChunk]:
        """Run ``task`` and yield every event, ending with a ``DONE`` chunk."""
        if not isinstance(task, str):
            raise TypeError(f"task must be a str, not {type(task).__name__}")
        if not self.messages and self.system_message:
            self.messages.append({"role": "system", "content": self.system_message})
        self.messages.append({"role": "user", "content": task})
        run_id = uuid.uuid4().hex
        specs = [fn.__tool_spec__ for fn in self.tools.values()] or None
        usage = Usage()
        stop_reason = "complete"
        text = ""
        iteration = 0
        completed = False
        try:
            while True:
                iteration += 1
                tools_on = specs is not None and iteration <= self.max_iterations
                parts: list[str] = []
                calls: list[ToolCallRequest] = []
                try:
                    turn = self.client.stream(list(self.messages), specs if tools_on else None)
                    async with _closing(turn) as events:
                        async for event in events:
                            if isinstance(event, TextDelta):
                                parts.append(event.text)
                                yield self._chunk(Phase.TEXT, event.text, iteration)
                            elif isinstance(event, ThinkingDelta):
                                yield self._chunk(Phase.THINKING, event.text, iteration)
                            elif isinstance(event, ToolCallRequest):
                                if tools_on:
                                    calls.append(with_distinct_id(event, calls))
                            elif isinstance(event, TurnEnd):
                                usage += event.usage
                finally:
                    text = "".join(parts)
                    if parts or calls:
                        self.messages.append(_assistant_message(text, calls))
                if not calls:
                    break
                if iteration >= self.max_iterations:
                    stop_reason = "max_iterations"
                    note = (
                        f"Not executed: the limit of {self.max_iterations} tool rounds was "
                        "reached. Answer now with what you have."
                    )
                    for call in calls:
                        self.messages.append(_tool_message(call, ToolResult.error(note)))
                    continue
                async with aclosing(self._run_calls(calls, iteration, run_id)) as chunks:
                    async for chunk in chunks:
                        yield chunk
            completed = True
        finally:
            if not completed:
                self._close_transcript()
        yield self._chunk(
            Phase.DONE,
            {"text": text, "usage": usage.to_json(), "stop_reason": stop_reason},
            iteration,
        )

    async def _run_calls(
        self, calls: list[ToolCallRequest], iteration: int, run_id: str
    ) -> AsyncIterator[StreamChunk]:
        """Dispatch one turn's calls, yielding their events live; answer every call."""
        queue: asyncio.Queue = asyncio.Queue()
        results: dict[str, ToolResult] = {}
        lock = asyncio.Lock()
        concurrent = self.concurrent_tool_calls and len(calls) > 1

        def emit(phase: Phase | StreamChunk, content: Any) -> None:
            chunk = (
                phase if isinstance(phase, StreamChunk) else self._chunk(phase, content, iteration)
            )
            queue.put_nowait(chunk)

        async def run_one(call: ToolCallRequest) -> None:
            emit(Phase.TOOL_CALL, {"id": call.id, "name": call.name, "arguments": call.arguments})
            context = ToolContext(
                deps=self.deps,
                run_id=run_id,
                agent=self.name,
                tool_call_id=call.id,
                approval=self.tool_approval,
            )
            result = await dispatch(
                call,
                self.tools,
                policy=self.tool_approval,
                context=context,
                emit=emit,
                approval_lock=lock,
                threaded=concurrent,
                flush=queue.join,
            )
            results[call.id] = result
            emit(
                Phase.TOOL_RESULT,
                {
                    "id": call.id,
                    "name": call.name,
                    "result": result.text,
                    "is_error": result.is_error,
                    "images": [image.to_json() for image in result.images],
                },
            )

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
            for call in calls:
                result = results.get(call.id) or ToolResult.error(INTERRUPTED)
                self.messages.append(_tool_message(call, result))

    def _close_transcript(self) -> None:
        """After an interrupt or error: answer open calls and end on an assistant turn."""
        answered = {m.get("tool_call_id") for m in self.messages if m.get("role") == "tool"}
        last = self.messages[-1] if self.messages else None
        if last and last.get("role") == "assistant":
            for call in last.get("tool_calls") or ():
                if call["id"] not in answered:
                    self.messages.append(
                        {"role": "tool", "tool_call_id": call["id"],
                         "name": call["function"]["name"], "content": INTERRUPTED}
                    )  # fmt: skip
        if self.messages and self.messages[-1].get("role") != "assistant":
            self.messages.append({"role": "assistant", "content": "(This answer was interrupted.)"})

    def _chunk(self, phase: Phase, content: Any, iteration: int) -> StreamChunk:
        return StreamChunk(phase, content, self.name, iteration)


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


def _index_tools(tools: Iterable[Callable]) -> dict[str, Callable]:
    if callable(tools) or isinstance(tools, str | bytes):
        raise TypeError("tools must be a list of tools, e.g. tools=[my_tool]")
    index: dict[str, Callable] = {}
    for fn in tools:
        spec = getattr(fn, "__tool_spec__", None)
        if spec is None:
            label = getattr(fn, "__name__", repr(fn))
            raise TypeError(f"{label} is not a tool; decorate it with @aimu.tool")
        name = spec["function"]["name"]
        if name in index and index[name] is not fn:
            raise ValueError(f"two different tools are named {name!r}; tool names must be unique")
        index[name] = fn
    return index
