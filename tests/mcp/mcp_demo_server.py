"""The FastMCP server every MCP test talks to, in memory, over stdio or over HTTP."""

from __future__ import annotations

import asyncio
import os
import struct
import sys
import zlib
from typing import Any

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_http_headers
from fastmcp.tools import ToolResult
from fastmcp.utilities.types import Image


def red_png(size: int = 2) -> bytes:
    """A valid ``size`` x ``size`` red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * size for _ in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def build_server(name: str = "demo", **options: Any) -> FastMCP:
    server = FastMCP(name, **options)

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers and return the sum."""
        return a + b

    @server.tool
    def describe_city(city: str) -> dict:
        """Facts about a city name."""
        return {"city": city, "letters": len(city)}

    @server.tool
    def caption_and_data(word: str) -> ToolResult:
        """Text for people plus structured data for programs."""
        return ToolResult(content=f"The word is {word}.", structured_content={"word": word})

    @server.tool
    def fail(reason: str) -> str:
        """Always fails with the given reason."""
        raise ToolError(f"cannot comply: {reason}")

    @server.tool
    def red_square() -> Image:
        """A small red PNG square."""
        return Image(data=red_png(), format="png")

    @server.tool
    async def wait(seconds: float) -> str:
        """Sleep for some seconds, then say done."""
        await asyncio.sleep(seconds)
        return "done"

    @server.tool
    async def wait_noting_cancel(seconds: float, note: str) -> str:
        """Write 'started' to the file ``note`` and sleep; write 'cancelled' if cancelled."""
        with open(note, "w") as file:
            file.write("started")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            with open(note, "w") as file:
                file.write("cancelled")
            raise
        return "done"

    @server.tool
    def server_pid() -> int:
        """The server process id."""
        return os.getpid()

    @server.tool
    def crash(reason: str) -> str:
        """Write ``reason`` to stderr and end the server process at once, mid-call."""
        print(f"fatal: {reason}", file=sys.stderr, flush=True)
        os._exit(4)

    @server.tool
    def stop_server() -> str:
        """End the server process at once, mid-call."""
        os._exit(3)

    @server.tool(annotations={"readOnlyHint": True})
    def env_value(name: str) -> str:
        """The value of one of the server's environment variables ('' if unset)."""
        return os.environ.get(name, "")

    @server.tool
    async def count_to(n: int, ctx: Context) -> str:
        """Count to n, reporting each step as progress."""
        for step in range(1, n + 1):
            await ctx.report_progress(step, n, f"step {step}")
        return f"counted to {n}"

    @server.tool
    def echo(text: str) -> str:
        """The text, echoed back."""
        return f"Echo: {text}"

    @server.tool
    def echo_header(name: str) -> str:
        """The value of an HTTP request header the server received ('' without HTTP)."""
        return get_http_headers(include_all=True).get(name.lower(), "")

    return server
