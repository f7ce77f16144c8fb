"""An MCP server's tools as aimu tools: an OpenAI spec from the server's input schema,
and a plain or async function that calls the tool on the server.

The functions carry ``__tool_spec__``, ``__tool_is_async__`` and ``__tool_is_streaming__``,
so the agent dispatches them like ``@tool`` functions. They carry no ``__tool_params__``:
arguments pass through unchanged and the server validates them.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types

from aimu.tools.results import ToolResult

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")


def tool_spec(tool: mcp_types.Tool) -> dict[str, Any]:
    """The OpenAI function spec of ``tool``; names models refuse are made safe."""
    parameters = copy.deepcopy(tool.input_schema) if isinstance(tool.input_schema, dict) else {}
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return {
        "type": "function",
        "function": {
            "name": _NOT_IN_NAME.sub("_", tool.name)[:64] or "tool",
            "description": tool.description or tool.title or "",
            "parameters": parameters,
        },
    }


def sync_tool(tool: mcp_types.Tool, call: Callable[[str, dict], ToolResult]) -> Callable:
    """A blocking function that runs ``tool`` through ``call(name, arguments)``."""

    def run(**arguments: Any) -> str | ToolResult:
        return _simplest(call(tool.name, arguments))

    return _mark(run, tool, is_async=False)


def async_tool(
    tool: mcp_types.Tool, call: Callable[[str, dict], Awaitable[ToolResult]]
) -> Callable:
    """A coroutine function that runs ``tool`` through ``await call(name, arguments)``."""

    async def run(**arguments: Any) -> str | ToolResult:
        return _simplest(await call(tool.name, arguments))

    return _mark(run, tool, is_async=True)


def _simplest(result: ToolResult) -> str | ToolResult:
    """Plain text stays a ``str``; images and errors need the :class:`ToolResult`."""
    return result if result.images or result.is_error else result.text


def _mark(fn: Callable, tool: mcp_types.Tool, *, is_async: bool) -> Callable:
    spec = tool_spec(tool)
    fn.__name__ = fn.__qualname__ = spec["function"]["name"]
    fn.__doc__ = spec["function"]["description"]
    fn.__tool_spec__ = spec
    fn.__tool_is_async__ = is_async
    fn.__tool_is_streaming__ = False
    return fn
