"""MCP tools inside real agent runs, driven by the scripted model: the spec the model is
sent, the results it reads, server-side failures it can correct from, and images."""

from __future__ import annotations

import json

import pytest

import aimu
import aimu.aio
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.tools import MCPClient


@aimu.tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def tool_messages(agent) -> list[str]:
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


@pytest.fixture
def mcp(demo_server):
    with MCPClient(server=demo_server) as client:
        yield client


def test_an_agent_calls_an_mcp_tool_beside_a_decorated_tool(mcp):
    model = ScriptedClient(
        [reply(tool_calls=[call("add", a=19, b=23), call("shout", text="done")]), "It is 42."]
    )
    agent = aimu.Agent(model, tools=[shout, *mcp.as_tools()])
    assert agent.run("What is 19 + 23?") == "It is 42."
    assert tool_messages(agent) == ["42", "DONE"]
    sent = {spec["function"]["name"] for spec in model.requests[0]["tools"]}
    assert {"add", "describe_city", "shout"} <= sent


def test_a_tool_failing_on_the_server_is_read_by_the_model_and_the_run_goes_on(mcp):
    model = ScriptedClient(
        [
            call("add", a="nineteen", b=23),
            call("add", a=19, b=23),
            "It is 42.",
        ]
    )
    agent = aimu.Agent(model, tools=mcp.as_tools())
    assert agent.run("What is 19 + 23?") == "It is 42."
    first, second = tool_messages(agent)
    assert "valid integer" in first
    assert second == "42"


def test_an_image_from_an_mcp_tool_reaches_the_stream_for_the_notebook(mcp):
    model = ScriptedClient([call("red_square"), "A red square."])
    agent = aimu.Agent(model, tools=mcp.as_tools())
    results = [c for c in agent.run("Draw.", stream=True) if c.phase is Phase.TOOL_RESULT]
    (result,) = results
    assert result.content["images"][0]["mime_type"] == "image/png"
    assert "[image 1: image/png" in result.content["result"]
    assert not result.content["is_error"]


def test_structured_results_reach_the_model_as_json(mcp):
    model = ScriptedClient([call("describe_city", city="Lima"), "Lima has 4 letters."])
    agent = aimu.Agent(model, tools=mcp.as_tools())
    agent.run("How long is Lima?")
    assert json.loads(tool_messages(agent)[0]) == {"city": "Lima", "letters": 4}


def test_mcp_tools_run_concurrently_from_worker_threads(mcp):
    calls = [call("add", a=n, b=n) for n in range(6)]
    model = ScriptedClient([reply(tool_calls=calls), "Done."])
    agent = aimu.Agent(model, tools=mcp.as_tools(), concurrent_tool_calls=True)
    agent.run("Double 0..5.")
    assert tool_messages(agent) == [str(2 * n) for n in range(6)]


async def test_the_async_agent_uses_the_async_clients_tools(demo_server):
    async with aimu.aio.MCPClient(server=demo_server) as mcp:
        model = ScriptedClient([call("add", a=1, b=2), "It is 3."])
        agent = aimu.aio.Agent(model, tools=[shout, *await mcp.as_tools()])
        assert await agent.run("1 + 2?") == "It is 3."
        assert tool_messages(agent) == ["3"]


def test_async_tools_work_in_the_sync_agent_across_runs(demo_server):
    """Each sync run has its own event loop; the async client reconnects on the new one."""
    import asyncio

    mcp = aimu.aio.MCPClient(server=demo_server)
    tools = asyncio.run(mcp.as_tools())
    model = ScriptedClient([call("add", a=1, b=1), "2.", call("add", a=2, b=2), "4."])
    agent = aimu.Agent(model, tools=tools)
    assert agent.run("1 + 1?") == "2."
    assert agent.run("2 + 2?") == "4."
    assert tool_messages(agent) == ["2", "4"]
