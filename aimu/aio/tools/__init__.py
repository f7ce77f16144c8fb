"""Tools for async agents: the same ``@tool``, groups and MCP client as :mod:`aimu.tools`,
with ``MCPClient`` the async one. ``aimu.aio.tools.builtin`` holds the built-ins."""

from typing import Any

from aimu.tools import Denied, ToolContext, ToolResult, approve_all, deny_all, tool
from aimu.tools.groups import ToolGroup


def __getattr__(name: str) -> Any:
    if name == "MCPClient":
        from aimu.tools.mcp import AsyncMCPClient

        return AsyncMCPClient
    if name == "builtin":
        import importlib

        return importlib.import_module("aimu.aio.tools.builtin")
    raise AttributeError(f"module 'aimu.aio.tools' has no attribute {name!r}")


__all__ = [
    "Denied",
    "MCPClient",
    "ToolContext",
    "ToolGroup",
    "ToolResult",
    "approve_all",
    "builtin",
    "deny_all",
    "tool",
]
