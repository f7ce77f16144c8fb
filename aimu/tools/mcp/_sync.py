"""``MCPClient``: the blocking driver of :class:`AsyncMCPClient`.

It runs the async client on an event loop of its own, in a daemon thread (a
:class:`~aimu._sync.LoopThread`), so it works the same from a script, a thread, or a Jupyter
cell whose kernel already runs a loop. Only the I/O edge differs from the async client.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

import mcp_types

from aimu._sync import LoopThread
from aimu.tools.mcp._client import CLOSE_TIMEOUT, AsyncMCPClient
from aimu.tools.mcp._results import MCPResult
from aimu.tools.mcp._tool_list import ToolList
from aimu.tools.mcp._tools import Progress, check_prefix, sync_tool
from aimu.tools.stopping import current_stop

T = TypeVar("T")

THREAD_NAME = "aimu-mcp"

_OPEN: dict[int, weakref.finalize] = {}
"""The closers of clients still open, closed together at interpreter exit."""


class MCPClient:
    """An MCP server's tools, from ordinary (non-async) code and from notebooks.

    Pass exactly one of ``config`` (an ``mcpServers`` dict), ``server`` (a FastMCP instance,
    run in memory), ``file`` (a ``.py``/``.js`` server script run over stdio) or ``url`` (a
    remote streamable-HTTP server; a URL ending in ``/sse`` uses SSE). ``auth`` (a bearer
    token, ``"oauth"``, or an ``httpx2.Auth`` object such as ``fastmcp.client.auth.OAuth``)
    and ``headers`` apply only with ``url``; an auth object excludes ``headers``. Wrong
    combinations raise ``ValueError`` here. ``timeout`` bounds each tool call, in seconds.

    A server's tool annotations (``readOnlyHint``) are its own claims, so in a notebook its
    tools ask for approval (with "Always allow" for the conversation) unless the server is
    trusted: ``trust_annotations=True`` trusts every server of this client, and in a
    ``config`` ``"trust_annotations": true`` in a server's entry trusts that one.

    Connects at construction (raising :class:`MCPConnectionError` if it cannot, naming each
    server of a ``config`` that did not start and the last line it wrote to stderr); after a
    lost connection the next call reconnects. The client runs on a loop in a background
    thread. Stdio servers' stderr goes to the ``aimu.tools.mcp`` logger at INFO, not to the
    terminal or the cell.

    Close it when done, or use ``with``; close a client kept for the life of the process
    explicitly too. An exit hook closes clients still open, all at once, giving up after a
    few seconds rather than hanging the exit; but a kernel being restarted may be killed
    before it finishes, leaving a stdio server to exit when it sees its input close::

        mcp = MCPClient(server=my_server)
        agent = Agent(client, tools=[my_tool, *mcp.as_tools()])
        ...
        mcp.close()
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
        self._core = AsyncMCPClient(
            config, server, file, url, auth, headers,
            timeout=timeout, trust_annotations=trust_annotations,
        )  # fmt: skip
        self._loop = LoopThread(THREAD_NAME)
        self._closer = weakref.finalize(self, _close, self._loop, self._core.close)
        self._closer.atexit = False
        _OPEN[id(self._loop)] = self._closer
        try:
            self._run(self._core.connect)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return repr(self._core).replace("aimu.aio.MCPClient", "aimu.tools.MCPClient", 1)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return not self._closer.alive

    def list_tools(self) -> list[mcp_types.Tool]:
        """The server's tools as it describes them, unwrapped: ``mcp_types.Tool`` objects
        with ``name``, ``description``, ``input_schema`` and ``annotations``.

        Raises :class:`MCPConnectionError` if the client is closed or the server unreachable.
        """
        return self._run(self._core.list_tools)

    def ping(self) -> list[mcp_types.Tool]:
        """Check the server answers by listing its tools; returns them (as :meth:`list_tools`)."""
        return self._run(self._core.list_tools)

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: Progress | None = None,
    ) -> MCPResult:
        """Run tool ``name`` and wait for its :class:`MCPResult` (a ``str``), as
        :meth:`aimu.aio.MCPClient.call_tool` does: a failure on the server is an answer
        flagged ``is_error``; only a connection failure raises :class:`MCPConnectionError`.
        ``progress`` is called on the client's loop thread. Ctrl-C cancels the request on
        the server and leaves the client usable.
        """
        return self._run(self._core.call_tool, name, arguments, progress=progress)

    def as_tools(
        self, prefix: str = "", *, trust_annotations: bool | None = None
    ) -> list[Callable]:
        """The server's tools as functions for ``Agent(tools=...)``, beside ``@tool`` ones.

        Each returns an :class:`MCPResult`, a ``str`` (the result's text) that also carries
        its images and error flag. ``prefix`` is put before each tool's name in its spec
        (``prefix="tc_"``: ``tc_convert_time``), to keep two servers' or a server's and a
        built-in's names apart; the call still reaches the server's own name. In an agent
        run, the server's progress notifications show as tool progress, interrupting the run
        cancels the request, and when the server announces a changed tool list the agent's
        next turn offers the new one. Each function holds this client, keeping it alive.
        ``trust_annotations`` trusts (``True``) or distrusts (``False``) the servers for these
        functions only; ``None`` keeps the client's setting.
        """
        check_prefix(prefix)
        origin = self._core._origin_for(trust_annotations)

        def wrap(tools: list[mcp_types.Tool]) -> list[Callable]:
            return [sync_tool(tool, self.call_tool, self._start, origin, prefix) for tool in tools]

        async def load() -> list[Callable]:
            return wrap(await asyncio.wrap_future(self._loop.submit(self._core.list_tools)))

        return ToolList(lambda: self._core._tools_version, load).attach(wrap(self.ping()))

    def close(self) -> None:
        """Close the connection and stop the background loop. Idempotent; never hangs."""
        self._closer()

    def __enter__(self) -> MCPClient:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _run(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any) -> T:
        if not self._closer.alive:
            raise self._core._closed_error()
        return self._loop.run(lambda: fn(*args, **kwargs), stop=current_stop())

    async def _start(self, name: str, arguments: dict, progress: Progress) -> MCPResult:
        """A call from another event loop (an agent's): awaited there, run on ours."""
        if not self._closer.alive:
            raise self._core._closed_error()
        call = self._loop.submit(lambda: self._core.call_tool(name, arguments, progress=progress))
        return await asyncio.wrap_future(call)


def _close(
    loop: LoopThread, last: Callable[[], Awaitable[Any]], timeout: float = CLOSE_TIMEOUT + 2
) -> None:
    _OPEN.pop(id(loop), None)
    loop.close(last, timeout)


@atexit.register
def _close_all_at_exit() -> None:
    """Close the clients still open at exit all at once, giving up after one deadline."""
    loops = []
    for finalizer in list(_OPEN.values()):
        detached = finalizer.detach()
        if detached is not None:
            _, close, (loop, last), _ = detached
            close(loop, last, timeout=0)
            loops.append(loop)
    deadline = time.monotonic() + CLOSE_TIMEOUT + 2
    for loop in loops:
        loop.join(max(0.0, deadline - time.monotonic()))
