"""MCP servers' tools as aimu tools: :class:`MCPClient` (blocking) and
:class:`AsyncMCPClient` (``aimu.aio.MCPClient``), built on FastMCP's client.

Both take exactly one of ``config=``, ``server=``, ``file=`` or ``url=``. Their
``as_tools()`` returns functions that drop into ``Agent(tools=...)`` beside ``@tool`` ones.
A tool failing on the server is a result the model reads; only a connection failure
raises :class:`MCPConnectionError`.
"""

from aimu.tools.mcp._client import AsyncMCPClient
from aimu.tools.mcp._sync import MCPClient
from aimu.tools.mcp.errors import MCPConnectionError

__all__ = ["AsyncMCPClient", "MCPClient", "MCPConnectionError"]
