"""A server's changed tool list (``notifications/tools/list_changed``) reaches the agent's
next turn, from one server or from a config of several, and no traceback reaches stderr."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp_changing_server import build_server

import aimu
import aimu.aio
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.tools import MCPClient

HERE = Path(__file__).parent


def offered(model: ScriptedClient, turn: int) -> list[str]:
    return [spec["function"]["name"] for spec in model.requests[turn]["tools"] or ()]


def tool_messages(agent) -> list[str]:
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def door_model() -> ScriptedClient:
    return ScriptedClient([call("unlock"), call("open_door", room="kitchen"), "It is open."])


def test_a_tool_the_server_adds_mid_run_is_offered_at_the_next_turn():
    with MCPClient(server=build_server()) as mcp:
        model = door_model()
        agent = aimu.Agent(model, tools=mcp.as_tools())
        assert agent.run("Open the kitchen door.") == "It is open."
    assert "open_door" not in offered(model, 0)
    assert "open_door" in offered(model, 1)
    assert tool_messages(agent) == ["unlocked", "the kitchen door is open"]


async def test_the_async_client_brings_the_new_tool_to_the_next_turn_too():
    async with aimu.aio.MCPClient(server=build_server()) as mcp:
        model = ScriptedClient([call("d_unlock"), call("d_open_door", room="hall"), "Open."])
        agent = aimu.aio.Agent(model, tools=await mcp.as_tools(prefix="d_"))
        assert await agent.run("Open the hall door.") == "Open."
    assert "d_open_door" in offered(model, 1)
    assert tool_messages(agent)[-1] == "the hall door is open"


def test_a_config_of_several_servers_brings_the_change_without_tracebacks(capfd):
    config = {
        "mcpServers": {
            "changing": {"command": sys.executable, "args": [str(HERE / "mcp_changing_server.py")]},
            "demo": {"command": sys.executable, "args": [str(HERE / "mcp_stdio_server.py")]},
        }
    }
    with MCPClient(config=config) as mcp:
        model = ScriptedClient(
            [call("changing_unlock"), call("changing_open_door", room="attic"), "Open."]
        )
        agent = aimu.Agent(model, tools=mcp.as_tools())
        assert agent.run("Open the attic door.") == "Open."
        assert mcp.call_tool("demo_add", {"a": 1, "b": 2}) == "3"
    assert tool_messages(agent) == ["unlocked", "the attic door is open"]
    err = capfd.readouterr().err
    assert "notification callback" not in err
    assert "Traceback" not in err


def test_a_tool_list_that_cannot_be_reloaded_keeps_the_old_tools(caplog):
    with MCPClient(server=build_server()) as mcp:
        model = ScriptedClient([call("unlock"), "Fine."])
        agent = aimu.Agent(model, tools=mcp.as_tools())

        async def server_gone() -> list:
            raise ConnectionError("the server went away")

        agent.tools["unlock"].__tool_source__._load = server_gone
        assert agent.run("Unlock.") == "Fine."
    assert offered(model, 1) == ["unlock"]
    assert "could not reload a changed tool list: the server went away" in caplog.text


def test_a_new_tool_whose_name_is_taken_is_left_out(caplog):
    @aimu.tool
    def open_door(room: str) -> str:
        """The agent's own door opener."""
        return "mine"

    with MCPClient(server=build_server()) as mcp:
        model = ScriptedClient([call("unlock"), call("open_door", room="x"), "Ok."])
        agent = aimu.Agent(model, tools=[open_door, *mcp.as_tools()])
        agent.run("Go.")
    assert tool_messages(agent)[-1] == "mine"
    assert "'open_door' is left out: the name is taken" in caplog.text
