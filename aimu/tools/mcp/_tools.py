"""An MCP server's tools as aimu tools: an OpenAI spec from the server's input schema, and a
plain or async function that calls the tool on the server and returns an :class:`MCPResult`
(a ``str``).

The functions carry ``__tool_spec__``, ``__tool_is_async__``, ``__tool_is_streaming__`` and
``__tool_read_only__``, so the agent dispatches and gates them like ``@tool`` functions. The
server's annotations (``readOnlyHint``, ``destructiveHint``) are claims by the server: they set
``__tool_read_only__`` only for a server the user marked trusted; any other server's tools are
``False`` (they ask), with ``__tool_asks_because__`` saying so. ``__tool_identity__`` names the
connection the tool comes from and the server's name for it (:mod:`aimu.tools.identity`), so
"Always allow" for one server's ``write_note`` does not cover another's. They carry no
``__tool_params__``: arguments pass through unchanged and the server validates them.
``__tool_stream__`` is the form the agent runs: an async generator yielding the server's
progress notifications, then the result, and cancelling the request when the run is
interrupted.
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types

from aimu._sync import POLL
from aimu.tools.mcp._results import MCPResult

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64

Progress = Callable[[dict[str, Any]], None]
"""Receives ``{"progress": n, "total": n | None, "message": str | None}`` as the server reports."""
Start = Callable[[str, dict, Progress], Awaitable[MCPResult]]
"""Starts a call of the named tool on the caller's loop, reporting progress as it comes."""


def check_prefix(prefix: str) -> str:
    if not isinstance(prefix, str) or _NOT_IN_NAME.search(prefix) or len(prefix) > _MAX_NAME // 2:
        raise ValueError(
            f"prefix must be letters, digits, '_' or '-' (at most {_MAX_NAME // 2}), "
            f"e.g. 'tc_'; got {prefix!r}"
        )
    return prefix


def tool_spec(tool: mcp_types.Tool, prefix: str = "") -> dict[str, Any]:
    """The OpenAI function spec of ``tool``, named ``prefix`` + its name made safe for models."""
    parameters = copy.deepcopy(tool.input_schema) if isinstance(tool.input_schema, dict) else {}
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return {
        "type": "function",
        "function": {
            "name": (prefix + _NOT_IN_NAME.sub("_", tool.name))[:_MAX_NAME] or "tool",
            "description": tool.description or tool.title or "",
            "parameters": parameters,
        },
    }


def is_read_only(tool: mcp_types.Tool) -> bool:
    """Contract C1: only reads when the server says ``readOnlyHint`` and not ``destructiveHint``."""
    hints = tool.annotations
    return bool(hints and hints.read_only_hint is True and hints.destructive_hint is not True)


@dataclass(frozen=True)
class Origin:
    """Where a connection's tools come from: ``connection`` is the client's own (compared by
    identity), ``label`` names the server(s) for people, and ``trusts(tool_name)`` says
    whether the user trusts the server of that tool to describe it
    (:class:`aimu.tools.mcp._trust.Trust`)."""

    connection: Any
    label: str
    trusts: Callable[[str], bool]


def sync_tool(
    tool: mcp_types.Tool,
    call: Callable[[str, dict], MCPResult],
    start: Start,
    origin: Origin,
    prefix: str = "",
) -> Callable:
    """A blocking function that runs ``tool`` through ``call(name, arguments)``."""

    def run(**arguments: Any) -> MCPResult:
        return call(tool.name, arguments)

    return _mark(run, tool, start, origin, prefix, is_async=False)


def async_tool(
    tool: mcp_types.Tool,
    call: Callable[[str, dict], Awaitable[MCPResult]],
    start: Start,
    origin: Origin,
    prefix: str = "",
) -> Callable:
    """A coroutine function that runs ``tool`` through ``await call(name, arguments)``."""

    async def run(**arguments: Any) -> MCPResult:
        return await call(tool.name, arguments)

    return _mark(run, tool, start, origin, prefix, is_async=True)


def classify(tool: mcp_types.Tool, origin: Origin) -> tuple[bool, str]:
    """``(read_only, why it asks)`` for ``tool``: the annotations decide only when the user
    trusts its server; ``why`` is ``""`` for a call that runs unasked."""
    if not origin.trusts(tool.name):
        claim = "; it says it only reads, a claim by the server" if is_read_only(tool) else ""
        return False, (
            f"MCP tools ask unless their server is trusted ({origin.label}: not trusted, so "
            f"its annotations do not decide{claim}). Trust a server you know with "
            "MCPClient(..., trust_annotations=True) or %%agent --trust-mcp NAME"
        )
    if is_read_only(tool):
        return True, ""
    return False, f"the trusted {origin.label} does not mark this tool read-only"


def _streaming(name: str, start: Start) -> Callable[..., AsyncIterator[Any]]:
    """The agent's form of a tool: progress events as they come, then the result."""

    async def stream(**arguments: Any) -> AsyncIterator[Any]:
        loop = asyncio.get_running_loop()
        events: deque[dict[str, Any]] = deque()
        wakeup = _Wakeup(loop)

        def arrived(event: dict[str, Any]) -> None:
            events.append(event)
            wakeup.set()

        def report(event: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(arrived, event)

        call = asyncio.ensure_future(start(name, arguments, report))
        call.add_done_callback(wakeup.set)
        try:
            while True:
                while events:
                    yield events.popleft()
                if call.done():
                    break
                await wakeup.sleep()
            yield call.result()
        finally:
            call.cancel()

    stream.__tool_is_async__ = True
    stream.__tool_is_streaming__ = True
    return stream


class _Wakeup:
    """Something to sleep on until progress arrives, the call ends, or ``POLL`` passes (an
    interrupt reaching an idle event loop, ipykernel's, acts only once the loop wakes)."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._future: asyncio.Future[None] | None = None

    def set(self, *_: Any) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(None)

    async def sleep(self) -> None:
        self._future = self._loop.create_future()
        timer = self._loop.call_later(POLL, self.set)
        try:
            await self._future
        finally:
            timer.cancel()


def _mark(
    fn: Callable, tool: mcp_types.Tool, start: Start, origin: Origin, prefix: str, *, is_async: bool
) -> Callable:
    spec = tool_spec(tool, prefix)
    fn.__name__ = fn.__qualname__ = spec["function"]["name"]
    fn.__doc__ = spec["function"]["description"]
    fn.__tool_spec__ = spec
    fn.__tool_is_async__ = is_async
    fn.__tool_is_streaming__ = False
    fn.__tool_read_only__, fn.__tool_asks_because__ = classify(tool, origin)
    fn.__tool_identity__ = ("mcp", origin.connection, tool.name)
    fn.__tool_stream__ = _streaming(tool.name, start)
    return fn
