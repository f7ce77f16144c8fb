"""The run's own tools, offered to an outside (ACP) agent as an MCP server on loopback.

The server speaks MCP's streamable HTTP on ``127.0.0.1`` at a port of its own, in a thread
of its own (its HTTP stack never touches the caller's event loop or signal handlers), and
answers only requests carrying its bearer token, which goes to the agent in the session's
``mcpServers`` entry. A call is handed to the caller's loop (``call``, run there), where the
agent loop dispatches it through the run's approval gate like any call of its own model.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aimu.models.base import ToolCallRequest

#: The MCP server's name, as the agent shows it beside the tools' names.
SERVER_NAME = "aimu-notebook"
_START_SECONDS = 20.0

Call = Callable[[ToolCallRequest], Awaitable[tuple[str, bool]]]


class ToolServer:
    """Serves the tool specs last given to :meth:`offer`; each call goes to ``call``."""

    def __init__(self, call: Call):
        self._call = call
        self._specs: dict[str, dict[str, Any]] = {}
        self._token = secrets.token_urlsafe(32)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def offer(self, specs: list[dict[str, Any]]) -> None:
        """What ``tools/list`` answers from now on (OpenAI-format specs)."""
        self._specs = {s["function"]["name"]: s["function"] for s in specs}

    async def descriptor(self, specs: list[dict[str, Any]]) -> Any:
        """The session's ``mcpServers`` entry for this server, started if need be."""
        from acp.schema import HttpHeader, HttpMcpServer

        self.offer(specs)
        if self._thread is None:
            self._loop = asyncio.get_running_loop()
            await asyncio.to_thread(self._start)
        return HttpMcpServer(
            type="http",
            name=SERVER_NAME,
            url=self.url,
            headers=[HttpHeader(name="Authorization", value=f"Bearer {self._token}")],
        )

    def close(self) -> None:
        """Stop serving (the thread ends once the server has shut down)."""
        if self._server is not None:
            self._server.should_exit = True
        self._server = None

    async def aclose(self) -> None:
        thread = self._thread
        self.close()
        if thread is not None:
            await asyncio.to_thread(thread.join, 5.0)

    # -- the server thread -----------------------------------------------------------------

    def _start(self) -> None:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        config = uvicorn.Config(self._app(), log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        started = threading.Event()
        server = self._server

        def serve() -> None:
            async def run() -> None:
                task = asyncio.ensure_future(server.serve(sockets=[sock]))
                while not server.started and not task.done():
                    await asyncio.sleep(0.02)
                started.set()
                await task

            try:
                asyncio.run(run())
            finally:
                started.set()
                sock.close()

        self._thread = threading.Thread(target=serve, name="aimu-acp-tools", daemon=True)
        self._thread.start()
        if not started.wait(_START_SECONDS) or not server.started:
            raise OSError("the MCP server for the agent's tools did not start")

    def _app(self) -> Any:
        """The MCP app behind a bearer-token check."""
        inner = self._mcp_app()
        expected = f"Bearer {self._token}".encode()

        async def app(scope: dict, receive: Callable, send: Callable) -> None:
            if scope["type"] == "http":
                given = dict(scope.get("headers") or ()).get(b"authorization", b"")
                if not hmac.compare_digest(given, expected):
                    await _refuse(send)
                    return
            await inner(scope, receive, send)

        return app

    def _mcp_app(self) -> Any:
        """A streamable-HTTP MCP app listing :attr:`_specs` (mcp 1.x or 2.x)."""
        from mcp import types
        from mcp.server.lowlevel import Server

        def listed() -> list[types.Tool]:
            return [
                types.Tool(
                    name=name,
                    description=spec.get("description", ""),
                    inputSchema=spec.get("parameters") or {"type": "object", "properties": {}},
                )
                for name, spec in self._specs.items()
            ]

        async def called(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
            text, failed = await self._dispatch(name, arguments or {})
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], isError=failed
            )

        if not hasattr(Server, "list_tools"):  # mcp 2: handlers are given to the constructor

            async def on_list(_ctx: Any, _params: Any) -> types.ListToolsResult:
                return types.ListToolsResult(tools=listed())

            async def on_call(_ctx: Any, params: Any) -> types.CallToolResult:
                return await called(params.name, params.arguments)

            server = Server(SERVER_NAME, on_list_tools=on_list, on_call_tool=on_call)
            return server.streamable_http_app(stateless_http=True)

        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        server = Server(SERVER_NAME)
        server.list_tools()(lambda: _ready(listed()))
        server.call_tool(validate_input=False)(called)
        manager = StreamableHTTPSessionManager(app=server, stateless=True)

        async def app(scope: dict, receive: Callable, send: Callable) -> None:
            if scope["type"] == "lifespan":
                await _lifespan(manager, receive, send)
            else:
                await manager.handle_request(scope, receive, send)

        return app

    async def _dispatch(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Run the call on the caller's loop, where the agent loop dispatches it."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return "Not executed: the notebook is no longer running this agent.", True
        request = ToolCallRequest(
            id=f"mcp_{uuid.uuid4().hex[:12]}",
            name=name,
            arguments=dict(arguments),
            raw_arguments=json.dumps(arguments, default=str),
        )
        future = asyncio.run_coroutine_threadsafe(self._call(request), loop)
        return await asyncio.wrap_future(future)


async def _ready(value: Any) -> Any:
    return value


async def _lifespan(manager: Any, receive: Callable, send: Callable) -> None:
    """Run the session manager for the server's life (ASGI lifespan protocol)."""
    await receive()  # lifespan.startup
    async with manager.run():
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
    await send({"type": "lifespan.shutdown.complete"})


async def _refuse(send: Callable) -> None:
    body = b"missing or wrong bearer token"
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body))],
        }
    )
    await send({"type": "http.response.body", "body": body})
