"""``AsyncMCPClient``: the MCP client's logic, written once, async.

The blocking :class:`~aimu.tools.MCPClient` drives this same class on an event loop of its
own; everything about connecting, reconnecting, classifying failures and reading results
lives here.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any

import anyio
import mcp_types
from fastmcp import Client
from mcp import MCPError

from aimu.tools.mcp._results import to_tool_result
from aimu.tools.mcp._source import resolve
from aimu.tools.mcp._tools import async_tool
from aimu.tools.mcp.errors import MCPConnectionError
from aimu.tools.results import ToolResult

CONNECT_TIMEOUT = 60.0
"""Seconds to wait for a server to start and answer the MCP handshake."""
CLOSE_TIMEOUT = 5.0
"""Seconds to wait for a connection to close before abandoning it."""


class AsyncMCPClient:
    """An MCP server's tools, for async code (``aimu.aio.MCPClient``).

    Pass exactly one of ``config`` (an ``mcpServers`` dict), ``server`` (a FastMCP instance,
    run in memory), ``file`` (a ``.py``/``.js`` server script run over stdio) or ``url`` (a
    remote streamable-HTTP server; a URL ending in ``/sse`` uses SSE). ``auth`` (a bearer
    token, ``"oauth"``, or an ``httpx2.Auth`` object such as ``fastmcp.client.auth.OAuth``)
    and ``headers`` apply only with ``url``. ``timeout`` bounds each tool call, in seconds.

    Connects on first use (or ``async with``); after a lost connection the next call
    reconnects. :meth:`close` when done. Use one client per event loop.

        async with aimu.aio.MCPClient(server=my_server) as mcp:
            agent = aimu.aio.Agent(client, tools=await mcp.as_tools())
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        server: Any = None,
        file: str | os.PathLike[str] | None = None,
        url: str | None = None,
        auth: Any = None,
        headers: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ):
        self._source = resolve(config, server, file, url, auth, headers)
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ValueError(f"timeout must be a number of seconds > 0, not {timeout!r}")
        self._timeout = timeout
        self._client: Client | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"<aimu.aio.MCPClient {self._source.label} ({self._state()})>"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    async def connect(self) -> None:
        """Connect now rather than on first use; raises :class:`MCPConnectionError`."""
        await self._session()

    async def ping(self) -> list[mcp_types.Tool]:
        """Check the server answers by listing its tools; returns them.

        Raises :class:`MCPConnectionError` if the client is closed or the server unreachable.
        """
        client = await self._session()
        try:
            return await client.list_tools()
        except Exception as exc:
            raise await self._lost("listing its tools", exc) from exc

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Run tool ``name`` on the server and return what it answered.

        A failure on the server (the tool raised, rejected its arguments, does not exist, or
        timed out) is a :class:`ToolResult` with ``is_error=True`` carrying the server's text.
        Only a connection failure raises :class:`MCPConnectionError`.
        """
        if not isinstance(name, str):
            raise TypeError(f"tool name must be a str, not {type(name).__name__}")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be a dict, not {type(arguments).__name__}")
        client = await self._session()
        try:
            result = await client.call_tool_mcp(name, dict(arguments or {}), timeout=self._timeout)
        except Exception as exc:
            if _connection_alive(client, exc):
                return ToolResult.error(self._source.redact(self._tool_failure(name, exc)))
            raise await self._lost(f"calling tool {name!r}", exc) from exc
        answer = to_tool_result(name, result)
        return ToolResult(self._source.redact(answer.text), answer.images, answer.is_error)

    async def as_tools(self) -> list[Callable]:
        """The server's tools as async functions for ``aimu.aio.Agent(tools=...)``.

        A snapshot (one ``tools/list``); call again to pick up changes on the server. Each
        function holds this client, which must stay open while they are used.
        """
        return [async_tool(tool, self.call_tool) for tool in await self.ping()]

    async def close(self) -> None:
        """Close the connection (stopping a stdio server). Idempotent; never hangs."""
        self._closed = True
        await self._drop()

    async def __aenter__(self) -> AsyncMCPClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    def _closed_error(self) -> MCPConnectionError:
        return MCPConnectionError(
            f"This MCP client ({self._source.label}) is closed; create a new one to connect."
        )

    async def _session(self) -> Client:
        if self._closed:
            raise self._closed_error()
        async with self._loop_lock():
            if self._closed:
                raise self._closed_error()
            if self._client is not None and self._client.is_connected():
                return self._client
            await self._drop()
            client = Client(self._source.transport())
            try:
                with anyio.fail_after(CONNECT_TIMEOUT):
                    await client.__aenter__()
            except Exception as exc:
                await _close_quietly(client)
                raise self._connection_error(
                    f"Could not connect to the MCP {self._source.label}", exc, self._source.hint
                ) from exc
            if self._closed:  # closed while connecting
                await _close_quietly(client)
                raise self._closed_error()
            self._client = client
            return client

    def _loop_lock(self) -> asyncio.Lock:
        """The connect lock of the running loop; a closed loop's connection is forgotten."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            if self._loop is not None and not self._loop.is_closed():
                raise RuntimeError(
                    "this aimu.aio.MCPClient is connected on another event loop; use one "
                    "client per loop, or aimu.tools.MCPClient, which works from any thread"
                )
            self._client, self._loop, self._lock = None, loop, asyncio.Lock()
        return self._lock

    async def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await _close_quietly(client)

    def _state(self) -> str:
        if self._closed:
            return "closed"
        return "connected" if self._client is not None and self._client.is_connected() else "idle"

    async def _lost(self, doing: str, exc: BaseException) -> MCPConnectionError:
        """Drop the broken connection (the next call makes a new one); say what happened."""
        await self._drop()
        return self._connection_error(
            f"Lost the connection to the MCP {self._source.label} while {doing}",
            exc,
            "The next call reconnects; ping() checks whether the server is back.",
        )

    def _connection_error(self, what: str, exc: BaseException, hint: str) -> MCPConnectionError:
        return MCPConnectionError(self._source.redact(f"{what}: {_describe(exc)}. {hint}"))

    def _tool_failure(self, name: str, exc: Exception) -> str:
        if isinstance(exc, MCPError) and exc.error.code == mcp_types.REQUEST_TIMEOUT:
            limit = f"within {self._timeout:g} s" if self._timeout else "in time"
            return f"Tool '{name}' did not answer {limit}."
        if isinstance(exc, MCPError):
            return f"Tool '{name}' failed on the MCP server: {exc.error.message}"
        return f"Tool '{name}': the MCP server's answer could not be read: {_describe(exc)}"


def _connection_alive(client: Client, exc: Exception) -> bool:
    """After ``exc``, is the connection still up (so the failure is the tool's own)?"""
    if isinstance(exc, MCPError) and exc.error.code == mcp_types.CONNECTION_CLOSED:
        return False
    return client.is_connected()


async def _close_quietly(client: Client) -> None:
    """Close ``client``, bounded in time, ignoring the errors of a connection already dead."""
    with anyio.move_on_after(CLOSE_TIMEOUT, shield=True), suppress(Exception):
        await client.close()


def _describe(exc: BaseException) -> str:
    """One line naming what went wrong, from the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
