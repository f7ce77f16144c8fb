"""MCP servers' tools as aimu tools: :class:`MCPClient` (blocking) and
:class:`AsyncMCPClient` (``aimu.aio.MCPClient``), built on FastMCP's client.

Both take exactly one of ``config=``, ``server=``, ``file=`` or ``url=``. Their
``as_tools()`` returns functions that drop into ``Agent(tools=...)`` beside ``@tool`` ones;
each returns an :class:`MCPResult`, a ``str`` carrying the result's images and error flag.
A tool failing on the server is a result the model reads; only a connection failure
raises :class:`MCPConnectionError`.
"""

from aimu.tools.mcp._client import AsyncMCPClient
from aimu.tools.mcp._results import MCPResult
from aimu.tools.mcp._sync import MCPClient
from aimu.tools.mcp.errors import MCPConnectionError, MCPFailure

__all__ = ["AsyncMCPClient", "MCPClient", "MCPConnectionError", "MCPFailure", "MCPResult"]
