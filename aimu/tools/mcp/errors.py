"""The errors an MCP client raises when it cannot reach its server."""

from __future__ import annotations


class MCPConnectionError(RuntimeError):
    """An :class:`~aimu.tools.MCPClient` could not connect to its server, lost the
    connection, or was used after :meth:`~aimu.tools.MCPClient.close`.

    What went wrong underneath is chained as ``__cause__``, a :class:`MCPFailure` holding its
    text with the client's secrets removed (the original exception is not kept: SDK errors
    hold request headers and URLs). A stdio server's last stderr lines are in
    ``server_stderr``. A tool that fails on the server, or rejects its arguments, is not a
    connection error: it comes back as a tool result the model can read. Messages never
    contain tokens, header values or URL query strings.
    """

    def __init__(self, message: str, server_stderr: str = ""):
        super().__init__(message)
        self.server_stderr = server_stderr


class MCPFailure(Exception):
    """The exception behind an :class:`MCPConnectionError`, as redacted text: ``str()`` names
    its type and message, ``details`` is its full traceback."""

    def __init__(self, summary: str, details: str):
        super().__init__(summary)
        self.details = details
