"""The error an MCP client raises when it cannot reach its server."""

from __future__ import annotations


class MCPConnectionError(RuntimeError):
    """An :class:`~aimu.tools.MCPClient` could not connect to its server, lost the
    connection, or was used after :meth:`~aimu.tools.MCPClient.close`.

    The original exception is chained as ``__cause__``. A tool that fails on the server, or
    rejects its arguments, is not a connection error: it comes back as a tool result the
    model can read. Messages never contain tokens, header values or URL query strings.
    """
