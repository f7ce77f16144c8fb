"""``aimu.aio`` mirrors the sync surface: Agent, client, MCPClient and tools.builtin."""

import subprocess
import sys

import aimu
import aimu.aio
from aimu.models.providers.scripted import ScriptedClient, call


def test_aio_client_builds_the_same_clients_as_aimu_client():
    model = aimu.aio.client("scripted", turns=["hi"])
    assert isinstance(model, ScriptedClient)


async def test_aio_agent_runs_builtin_tools_from_aio_tools_builtin():
    from aimu.aio.tools.builtin import calculate, get_webpage_html, make_web_tools

    assert get_webpage_html is aimu.tools.builtin.get_webpage_html
    assert callable(make_web_tools)
    agent = aimu.aio.Agent(ScriptedClient([call("calculate", expression="6*7"), "42"]),
                           tools=[calculate])  # fmt: skip
    assert await agent.run("6*7?") == "42"
    assert [m["content"] for m in agent.messages if m["role"] == "tool"] == ["42"]


def test_aio_mcp_client_is_the_async_client():
    from aimu.tools.mcp import AsyncMCPClient

    assert aimu.aio.MCPClient is AsyncMCPClient
    assert aimu.aio.tools.MCPClient is AsyncMCPClient


def test_aio_tools_builtin_lists_the_same_names_and_stays_light():
    import aimu.aio.tools.builtin as aio_builtin

    assert set(aio_builtin.__all__) == set(aimu.tools.builtin.__all__)
    code = (
        "import sys, aimu.aio.tools.builtin as b; b.get_web_content; "
        "print('chromadb' in sys.modules, 'aimu.tools.builtin._memory' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
