"""A long MCP call inside a run: the server's progress shows as tool progress, and an
interrupt or a cancelled run cancels the request on the server within half a second, leaving
the client usable for the next call. Timing asserts here are the issue's own demand."""

from __future__ import annotations

import _thread
import asyncio
import threading
import time

import pytest
from fastmcp import FastMCP
from server_notes import wait_for_text

import aimu
import aimu.aio
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.tools import MCPClient
from aimu.tools.stopping import CallStopped, run_in_thread

PROMPT = 0.5  # seconds within which the server must see the cancellation


class Hang:
    """A server tool that never answers, and says when it started and when it was cancelled."""

    def __init__(self, server: FastMCP):
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.cancelled_at = 0.0
        self.server = server

        @server.tool
        async def hang() -> str:
            """Never answers."""
            self.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled_at = time.monotonic()
                self.cancelled.set()
                raise
            return "unreachable"

    async def cancel_once_started(self, task: asyncio.Task) -> None:
        """Cancel ``task`` once the call reached the server; check the server saw it in time."""
        await asyncio.to_thread(self.started.wait, 30)
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(self.cancelled.wait, 10)
        assert self.cancelled_at - cancelled_at < PROMPT


@pytest.fixture
def hang() -> Hang:
    """A server whose ``hang`` tool never answers, beside an ``add`` tool."""
    server = FastMCP("cancel")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return Hang(server)


def progress_of(chunks) -> list:
    return [c.content["progress"] for c in chunks if c.phase is Phase.TOOL_PROGRESS]


def expected_steps(n: int) -> list[dict]:
    return [{"progress": s, "total": n, "message": f"step {s}"} for s in range(1, n + 1)]


def test_server_progress_shows_as_tool_progress_in_a_sync_run(demo_server):
    with MCPClient(server=demo_server) as mcp:
        agent = aimu.Agent(ScriptedClient([call("count_to", n=3), "Done."]), tools=mcp.as_tools())
        chunks = list(agent.run("Count.", stream=True))
    assert progress_of(chunks) == expected_steps(3)
    (result,) = [c for c in chunks if c.phase is Phase.TOOL_RESULT]
    assert result.content["result"] == "counted to 3"


async def test_server_progress_shows_as_tool_progress_in_an_async_run(demo_server):
    async with aimu.aio.MCPClient(server=demo_server) as mcp:
        model = ScriptedClient([call("tc_count_to", n=2), "Done."])
        agent = aimu.aio.Agent(model, tools=await mcp.as_tools(prefix="tc_"))
        chunks = [c async for c in agent.stream("Count.")]
    assert progress_of(chunks) == expected_steps(2)


def test_call_tool_hands_progress_to_a_callback(demo_server):
    seen: list[dict] = []
    with MCPClient(server=demo_server) as mcp:
        assert mcp.call_tool("count_to", {"n": 2}, progress=seen.append) == "counted to 2"
    assert seen == expected_steps(2)


async def test_cancelling_an_async_call_cancels_the_request_and_the_next_call_works(hang):
    async with aimu.aio.MCPClient(server=hang.server) as mcp:
        await hang.cancel_once_started(asyncio.create_task(mcp.call_tool("hang")))
        assert await mcp.call_tool("add", {"a": 1, "b": 2}) == "3"


async def test_a_cancelled_async_run_cancels_a_sync_clients_call_and_the_client_goes_on(
    hang,
):
    with MCPClient(server=hang.server) as mcp:
        agent = aimu.aio.Agent(ScriptedClient([call("hang"), "Never."]), tools=mcp.as_tools())
        await hang.cancel_once_started(asyncio.create_task(agent.run("Wait.")))
        tool_messages = [m for m in agent.messages if m["role"] == "tool"]
        assert len(tool_messages) == 1, "the interrupted call was not answered"
        assert mcp.call_tool("add", {"a": 2, "b": 2}) == "4"


async def test_a_sync_call_in_a_cancelled_tool_thread_is_stopped_and_the_client_goes_on(hang):
    """A sync tool calling the client from a worker thread: cancelling the awaiting task sets
    the call's stop event, which cancels the request and raises CallStopped in the thread."""
    stopped = threading.Event()

    def call_from_a_tool(mcp: MCPClient) -> None:
        try:
            mcp.call_tool("hang")
        except CallStopped:
            stopped.set()
            raise

    with MCPClient(server=hang.server) as mcp:
        await hang.cancel_once_started(asyncio.create_task(run_in_thread(call_from_a_tool, mcp)))
        assert await asyncio.to_thread(stopped.wait, 10)
        assert mcp.call_tool("add", {"a": 2, "b": 3}) == "5"


def test_ctrl_c_in_a_sync_run_cancels_the_request_and_the_client_goes_on(hang, sigint_handled):
    interrupted_at: list[float] = []

    def interrupt_when_started() -> None:
        hang.started.wait(30)
        interrupted_at.append(time.monotonic())
        _thread.interrupt_main()

    with MCPClient(server=hang.server) as mcp:
        agent = aimu.Agent(ScriptedClient([call("hang"), "Never."]), tools=mcp.as_tools())
        threading.Thread(target=interrupt_when_started, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            agent.run("Wait.")
        assert hang.cancelled.wait(10)
        assert hang.cancelled_at - interrupted_at[0] < PROMPT
        assert mcp.call_tool("add", {"a": 3, "b": 4}) == "7"


async def test_cancelling_a_call_to_a_stdio_server_cancels_the_request_in_its_process(
    stdio_script, tmp_path
):
    note = tmp_path / "note.txt"
    async with aimu.aio.MCPClient(file=stdio_script) as mcp:
        arguments = {"seconds": 60, "note": str(note)}
        pending = asyncio.create_task(mcp.call_tool("wait_noting_cancel", arguments))
        await asyncio.to_thread(wait_for_text, note, "started", 30)
        cancelled_at = time.monotonic()
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        await asyncio.to_thread(wait_for_text, note, "cancelled", 10)
        assert time.monotonic() - cancelled_at < PROMPT
        assert await mcp.call_tool("add", {"a": 2, "b": 3}) == "5"
