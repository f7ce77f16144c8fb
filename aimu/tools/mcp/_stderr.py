"""What stdio servers write to stderr: read off a pipe, logged, and its last lines kept.

A server's stderr is not printed into the user's terminal or cell: each line goes to the
``aimu.tools.mcp`` logger at INFO (seen once logging is turned on), and the last lines are
kept so that a server which exits at start-up is reported with its own reason.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from typing import TextIO

from fastmcp.client.transports import ClientTransport, StdioTransport

from aimu.secrets import Redactor

logger = logging.getLogger("aimu.tools.mcp")

_KEEP_LINES = 20
_LINE_LIMIT = 500
_DRAIN = 2.0  # seconds to wait for an exited server's last lines


class ServerStderr:
    """One stdio server's stderr: ``file`` is given to the server as its stderr."""

    def __init__(self, name: str, redactor: Redactor):
        self.name = name
        self._redactor = redactor
        self._lines: deque[str] = deque(maxlen=_KEEP_LINES)
        read_end, write_end = os.pipe()
        self.file: TextIO = os.fdopen(write_end, "w")
        self._reader = threading.Thread(
            target=self._read, args=(read_end,), name="mcp-server-stderr", daemon=True
        )
        self._reader.start()

    def _read(self, read_end: int) -> None:
        with open(read_end, "rb") as pipe:
            for raw in pipe:
                line = self._redactor.redact(raw.decode(errors="replace").rstrip())
                if line.strip():
                    self._lines.append(line[:_LINE_LIMIT])
                    logger.info("MCP server %s: %s", self.name, line)

    def last_line(self) -> str:
        """The last line the server wrote, once its stderr is closed (waits briefly)."""
        self.close()
        self._reader.join(_DRAIN)
        return self._lines[-1].strip() if self._lines else ""

    def tail(self) -> str:
        return "\n".join(self._lines)

    def close(self) -> None:
        """Close our end; the reader ends when the server's end closes too."""
        self.file.close()


class Stderrs:
    """The stderr of each stdio server one connection starts, by server name."""

    def __init__(self, redactor: Redactor):
        self._redactor = redactor
        self._by_name: dict[str, ServerStderr] = {}

    def route(self, name: str, transport: ClientTransport) -> ClientTransport:
        """Send ``transport``'s server stderr here, if it is a stdio server without a log."""
        if isinstance(transport, StdioTransport) and transport.log_file is None:
            if name in self._by_name:
                self._by_name[name].close()
            self._by_name[name] = ServerStderr(name, self._redactor)
            transport.log_file = self._by_name[name].file
        return transport

    def reasons(self) -> dict[str, str]:
        """Each server's last stderr line, for servers that wrote any."""
        lines = {name: stderr.last_line() for name, stderr in self._by_name.items()}
        return {name: line for name, line in lines.items() if line}

    def tail(self) -> str:
        return "\n".join(
            f"[{name}] {line}"
            for name, stderr in self._by_name.items()
            for line in stderr.tail().splitlines()
        )

    def close(self) -> None:
        for stderr in self._by_name.values():
            stderr.close()
