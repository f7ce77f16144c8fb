"""``AsyncMCPClient``: the MCP client's logic, written once, async.

The blocking :class:`~aimu.tools.MCPClient` drives this same class on an event loop of its
own; everything about connecting, reconnecting, classifying failures and reading results
lives here.
"""

from __future__ import annotations

import asyncio
import os
import traceback
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any

import anyio
import mcp_types
from fastmcp import Client
from mcp import MCPError

from aimu._checks import positive_number
from aimu.tools.mcp._config import ConfigTransport, ServersFailed
from aimu.tools.mcp._logs import quiet_fastmcp
from aimu.tools.mcp._results import MCPResult, to_tool_result
from aimu.tools.mcp._source import resolve
from aimu.tools.mcp._stderr import Stderrs
from aimu.tools.mcp._tool_list import ToolList
from aimu.tools.mcp._tools import Origin, Progress, async_tool, check_prefix
from aimu.tools.mcp._trust import Trust, check_trust
from aimu.tools.mcp.errors import MCPConnectionError, MCPFailure

CONNECT_TIMEOUT = 60.0
"""Seconds to wait for a server to start and answer the MCP handshake."""
CLOSE_TIMEOUT = 5.0
"""Seconds to wait for a connection to close before abandoning it."""

quiet_fastmcp()


class AsyncMCPClient:
    """An MCP server's tools, for async code (``aimu.aio.MCPClient``).

    Pass exactly one of ``config`` (an ``mcpServers`` dict), ``server`` (a FastMCP instance,
    run in memory), ``file`` (a ``.py``/``.js`` server script run over stdio) or ``url`` (a
    remote streamable-HTTP server; a URL ending in ``/sse`` uses SSE). ``auth`` (a bearer
    token, ``"oauth"``, or an ``httpx2.Auth`` object such as ``fastmcp.client.auth.OAuth``)
    and ``headers`` apply only with ``url``. ``timeout`` bounds each tool call, in seconds.

    A server's tool annotations (``readOnlyHint``) are its own claims, so its tools ask for
    approval in a notebook unless the server is trusted: ``trust_annotations=True`` trusts
    every server of this client; in a ``config``, ``"trust_annotations": true`` in a server's
    entry trusts that one.

    Connects on first use (or ``async with``); after a lost connection the next call
    reconnects. Every server of a ``config`` must start, or connecting fails naming the ones
    that did not. :meth:`close` when done. Use one client per event loop.

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
        trust_annotations: bool = False,
    ):
        self._source = resolve(config, server, file, url, auth, headers)
        source = self._source
        trust = Trust(
            check_trust(trust_annotations, "trust_annotations"), source.trusted, source.servers
        )
        self._origin = Origin(source, source.label, trust)
        if timeout is not None:
            positive_number(timeout, "timeout", unit="seconds", finite=False)
        self._timeout = timeout
        self._client: Client | None = None
        self._stderrs: Stderrs | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._closed = False
        self._tools_version = 0

    def __repr__(self) -> str:
        return f"<aimu.aio.MCPClient {self._source.label} ({self._state()})>"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    async def connect(self) -> None:
        """Connect now rather than on first use; raises :class:`MCPConnectionError`."""
        await self._session()

    async def list_tools(self) -> list[mcp_types.Tool]:
        """The server's tools as it describes them, unwrapped: ``mcp_types.Tool`` objects
        with ``name``, ``description``, ``input_schema`` and ``annotations``.

        Raises :class:`MCPConnectionError` if the client is closed or the server unreachable.
        """
        client = await self._session()
        try:
            return await client.list_tools()
        except Exception as exc:
            error = await self._lost("listing its tools", exc)
        raise error

    async def ping(self) -> list[mcp_types.Tool]:
        """Check the server answers by listing its tools; returns them (as :meth:`list_tools`)."""
        return await self.list_tools()

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: Progress | None = None,
    ) -> MCPResult:
        """Run tool ``name`` on the server; return its answer, an :class:`MCPResult` (a ``str``).

        A tool failing on the server (raising, refusing its arguments, unknown, over
        ``timeout``) answers too, flagged ``is_error``; only a connection failure raises
        :class:`MCPConnectionError`. ``progress`` is called with each progress notification
        (``{"progress", "total", "message"}``). Cancelling the call cancels the request on
        the server; the client stays usable.
        """
        if not isinstance(name, str):
            raise TypeError(f"tool name must be a str, not {type(name).__name__}")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be a dict, not {type(arguments).__name__}")
        client = await self._session()
        handler = _progress_handler(progress) if progress is not None else None
        try:
            result = await client.call_tool_mcp(
                name, dict(arguments or {}), progress_handler=handler, timeout=self._timeout
            )
        except Exception as exc:
            if _connection_alive(client, exc):
                return MCPResult.error(self._source.redact(self._tool_failure(name, exc)))
            error = await self._lost(f"calling tool {name!r}", exc)
        else:
            return to_tool_result(name, result, self._source.redact)
        raise error  # outside the except block: the original stays out of __context__

    async def as_tools(
        self, prefix: str = "", *, trust_annotations: bool | None = None
    ) -> list[Callable]:
        """The server's tools as async functions for ``aimu.aio.Agent(tools=...)``.

        Each returns an :class:`MCPResult` (a ``str``). ``prefix`` is put before each tool's
        name in its spec (``prefix="tc_"``: ``tc_convert_time``), to keep two servers' or a
        server's and a built-in's names apart; the call still reaches the server's own name.
        In an agent run, the server's progress notifications show as tool progress, and when
        the server announces a changed tool list the agent's next turn offers the new one.
        Each function holds this client, which must stay open while they are used.
        ``trust_annotations`` trusts (``True``) or distrusts (``False``) the servers for these
        functions only; ``None`` keeps the client's setting.
        """
        check_prefix(prefix)
        origin = self._origin_for(trust_annotations)

        async def load() -> list[Callable]:
            return [
                async_tool(tool, self.call_tool, self._start, origin, prefix)
                for tool in await self.list_tools()
            ]

        return ToolList(lambda: self._tools_version, load).attach(await load())

    def _origin_for(self, trust_annotations: bool | None = None) -> Origin:
        """Where this client's tools come from, trusted as the client says or as
        ``trust_annotations`` overrides."""
        if trust_annotations is None:
            return self._origin
        trust = self._origin.trusts.overridden(check_trust(trust_annotations, "trust_annotations"))
        return Origin(self._origin.connection, self._origin.label, trust)

    async def close(self) -> None:
        """Close the connection (stopping a stdio server). Idempotent; never hangs."""
        self._closed = True
        await self._drop()

    async def __aenter__(self) -> AsyncMCPClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def _on_message(self, message: Any) -> None:
        """The server's notifications (progress comes to each call's own handler)."""
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._tools_changed()

    def _tools_changed(self) -> None:
        self._tools_version += 1

    def _start(self, name: str, arguments: dict, progress: Progress) -> Any:
        return self.call_tool(name, arguments, progress=progress)

    def _closed_error(self) -> MCPConnectionError:
        return MCPConnectionError(
            f"This MCP client ({self._source.label}) is closed; create a new one to connect."
        )

    async def _session(self) -> Client:
        client = self._client
        if (
            client is not None
            and self._loop is asyncio.get_running_loop()
            and client.is_connected()
            and not self._closed
        ):
            return client  # the per-call path: no lock
        if self._closed:
            raise self._closed_error()
        async with self._loop_lock():
            if self._closed:
                raise self._closed_error()
            if self._client is not None and self._client.is_connected():
                return self._client
            await self._drop()
            transport, stderrs = self._source.transport()
            if isinstance(transport, ConfigTransport):
                transport.tools_changed = self._tools_changed
            client = Client(transport, message_handler=self._on_message)
            try:
                with anyio.fail_after(CONNECT_TIMEOUT):
                    await client.__aenter__()
            except Exception as exc:
                await _close_quietly(client)
                reasons = await asyncio.to_thread(stderrs.reasons)
                error = self._start_failure(exc, reasons, stderrs.tail())
            else:
                if not self._closed:
                    self._client, self._stderrs = client, stderrs
                    return client
                await _close_quietly(client)  # closed while connecting
                stderrs.close()
                error = self._closed_error()
        raise error

    def _start_failure(
        self, exc: Exception, reasons: dict[str, str], stderr: str
    ) -> MCPConnectionError:
        """Why connecting failed, in one message: each failed server and its own reason (the
        last line it wrote to stderr, when it wrote any)."""
        failed = _find(exc, ServersFailed)
        if failed is not None:
            what = "; ".join(
                f"server {name!r} did not start: "
                + (f"it said {reasons[name]!r}" if name in reasons else _describe(cause))
                for name, cause in failed.failures.items()
            )
        elif reasons:
            what = f"the server exited at start-up, saying {next(iter(reasons.values()))!r}"
        else:
            what = _describe(exc)
        error = self._connection_error(
            f"Could not connect to the MCP {self._source.label}: {what}", exc, self._source.hint
        )
        error.server_stderr = stderr
        return error

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
        stderrs, self._stderrs = self._stderrs, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await _close_quietly(client)
        if stderrs is not None:
            stderrs.close()

    def _state(self) -> str:
        if self._closed:
            return "closed"
        return "connected" if self._client is not None and self._client.is_connected() else "idle"

    async def _lost(self, doing: str, exc: BaseException) -> MCPConnectionError:
        """Drop the broken connection (the next call makes a new one); say what happened,
        with the last line a stdio server wrote to stderr before it went."""
        stderrs = self._stderrs
        await self._drop()
        said = await asyncio.to_thread(stderrs.reasons) if stderrs is not None else {}
        last = f" (its last stderr line: {next(iter(said.values()))!r})" if len(said) == 1 else ""
        error = self._connection_error(
            f"Lost the connection to the MCP {self._source.label} while {doing}: "
            f"{_describe(exc)}{last}",
            exc,
            "The next call reconnects; ping() checks whether the server is back.",
        )
        error.server_stderr = stderrs.tail() if stderrs is not None else ""
        return error

    def _connection_error(self, what: str, exc: BaseException, hint: str) -> MCPConnectionError:
        """``what`` and ``hint``, redacted, caused by a redacted copy of ``exc``, not ``exc``."""
        redact = self._source.redact
        error = MCPConnectionError(redact(f"{what}. {hint}"))
        details = redact("".join(traceback.format_exception(exc)))
        error.__cause__ = MCPFailure(redact(_describe(exc)), details)
        return error

    def _tool_failure(self, name: str, exc: Exception) -> str:
        if isinstance(exc, MCPError) and exc.error.code == mcp_types.REQUEST_TIMEOUT:
            limit = f"within {self._timeout:g} s" if self._timeout else "in time"
            return f"Tool '{name}' did not answer {limit}."
        if isinstance(exc, MCPError):
            return f"Tool '{name}' failed on the MCP server: {exc.error.message}"
        return f"Tool '{name}': the MCP server's answer could not be read: {_describe(exc)}"


def _progress_handler(progress: Progress) -> Callable[..., Any]:
    async def handler(done: float, total: float | None, message: str | None) -> None:
        progress({"progress": done, "total": total, "message": message})

    return handler


def _connection_alive(client: Client, exc: Exception) -> bool:
    """After ``exc``, is the connection still up (so the failure is the tool's own)?"""
    if isinstance(exc, MCPError) and exc.error.code == mcp_types.CONNECTION_CLOSED:
        return False
    return client.is_connected()


async def _close_quietly(client: Client) -> None:
    """Close ``client``, bounded in time, ignoring the errors of a connection already dead."""
    with anyio.move_on_after(CLOSE_TIMEOUT, shield=True), suppress(Exception):
        await client.close()


def _leaves(exc: BaseException) -> list[BaseException]:
    """``exc``, the leaves of exception groups in it, and what they were caused by."""
    seen: list[BaseException] = []
    pending = [exc]
    while pending:
        current = pending.pop(0)
        if any(current is s for s in seen) or len(seen) > 50:
            continue
        seen.append(current)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return seen


def _find(exc: BaseException, kind: type[ServersFailed]) -> ServersFailed | None:
    return next((e for e in _leaves(exc) if isinstance(e, kind)), None)


def _describe(exc: BaseException) -> str:
    """One line naming what went wrong, from the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
