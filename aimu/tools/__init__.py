"""Tools: the ``@tool`` decorator, argument coercion, approval policies and MCP.

``adapter_for(annotation)`` is the coercion behind both tool arguments and structured
answers: an :class:`Adapter` with the annotation's JSON Schema and a ``coerce`` that raises
:class:`Mismatch` for a value it cannot take (:class:`UnsupportedType` for an annotation no
model can supply).

``MCPClient`` and ``MCPConnectionError`` are imported on first use, so ``import aimu.tools``
stays light when MCP is not needed.
"""

from typing import Any

from aimu.tools._types import Adapter, Mismatch, UnsupportedType, adapter_for
from aimu.tools.approval import Denied, approve_all, deny_all
from aimu.tools.approval import Policy as ToolApproval
from aimu.tools.arguments import coerce_tool_arguments
from aimu.tools.context import ToolContext
from aimu.tools.decorator import tool
from aimu.tools.errors import ToolArgumentError, ToolSignatureError
from aimu.tools.groups import ToolGroup
from aimu.tools.results import Image, ToolResult

_LAZY = {"MCPClient": "aimu.tools.mcp", "MCPConnectionError": "aimu.tools.mcp"}


def __getattr__(name: str) -> Any:
    if name == "builtin":
        import importlib

        return importlib.import_module("aimu.tools.builtin")
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'aimu.tools' has no attribute {name!r}")


__all__ = [
    "Adapter",
    "Denied",
    "Image",
    "MCPClient",
    "MCPConnectionError",
    "Mismatch",
    "ToolApproval",
    "ToolArgumentError",
    "ToolContext",
    "ToolGroup",
    "ToolResult",
    "ToolSignatureError",
    "UnsupportedType",
    "adapter_for",
    "approve_all",
    "builtin",
    "coerce_tool_arguments",
    "deny_all",
    "tool",
]
