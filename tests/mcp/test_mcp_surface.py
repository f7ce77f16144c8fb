"""The reference's MCP surface and the tool contract: as_tools() functions return a str that
keeps images and the error flag, list_tools() lists the server's own descriptions,
call_tool()'s answer, names prefixed on request, read-only from the server's annotations,
and an official-SDK server's results delivered once."""

from __future__ import annotations

import pytest
from fastmcp import FastMCP
from mcp.server.mcpserver import MCPServer

import aimu
import aimu.aio
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.tools import MCPClient, ToolResult
from aimu.tools.mcp import MCPResult


@pytest.fixture
def mcp(demo_server):
    with MCPClient(server=demo_server) as client:
        yield client


def by_name(tools) -> dict:
    return {fn.__name__: fn for fn in tools}


def test_as_tools_functions_return_a_str_for_text_errors_and_images_alike(mcp):
    tools = by_name(mcp.as_tools())
    plain, failed, image = tools["add"](a=1, b=2), tools["fail"](reason="no"), tools["red_square"]()
    for answer in (plain, failed, image):
        assert isinstance(answer, str)
    assert plain == "3" and not plain.is_error
    assert failed.is_error and "cannot comply: no" in failed
    assert image.images[0].mime_type == "image/png" and "[image 1: image/png" in image


async def test_the_async_clients_functions_return_a_str_too(demo_server):
    async with aimu.aio.MCPClient(server=demo_server) as mcp:
        tools = by_name(await mcp.as_tools())
        failed = await tools["fail"](reason="late")
        assert isinstance(failed, str) and failed.is_error
        assert isinstance(await tools["red_square"](), str)


def test_an_error_result_called_through_an_agent_is_flagged_for_the_model(mcp):
    model = ScriptedClient([call("fail", reason="closed"), "Sorry."])
    agent = aimu.Agent(model, tools=mcp.as_tools())
    results = [c for c in agent.run("Try.", stream=True) if c.phase is Phase.TOOL_RESULT]
    assert results[0].content["is_error"] is True
    assert "cannot comply: closed" in results[0].content["result"]


def test_call_tool_answers_with_text_images_error_flag_and_the_raw_content(mcp):
    answer = mcp.call_tool("caption_and_data", {"word": "kite"})
    assert isinstance(answer, MCPResult) and isinstance(answer, ToolResult)
    assert answer.text == str(answer)
    assert answer.content[0].text == "The word is kite."
    assert repr(answer) == repr(str(answer))


def test_list_tools_lists_the_servers_own_descriptions_unwrapped(mcp):
    tools = {tool.name: tool for tool in mcp.list_tools()}
    assert tools["add"].description == "Add two integers and return the sum."
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert not callable(tools["add"])


async def test_the_async_client_lists_tools_the_same_way(demo_server):
    async with aimu.aio.MCPClient(server=demo_server) as mcp:
        assert "add" in {tool.name for tool in await mcp.list_tools()}


def test_a_prefix_renames_tools_in_the_spec_and_still_calls_the_servers_name(mcp):
    tools = by_name(mcp.as_tools(prefix="tc_"))
    assert "tc_add" in tools and "add" not in tools
    assert tools["tc_add"].__tool_spec__["function"]["name"] == "tc_add"
    model = ScriptedClient([call("tc_add", a=20, b=22), "42."])
    agent = aimu.Agent(model, tools=list(tools.values()))
    assert agent.run("Add.") == "42."
    assert [m["content"] for m in agent.messages if m["role"] == "tool"] == ["42"]


@pytest.mark.parametrize("prefix", ["tc.", "a b", 3])
def test_a_prefix_a_model_would_refuse_is_a_value_error(mcp, prefix):
    with pytest.raises(ValueError, match="prefix must be"):
        mcp.as_tools(prefix=prefix)


def annotated_server() -> FastMCP:
    server = FastMCP("hints")

    @server.tool(annotations={"readOnlyHint": True})
    def look() -> str:
        """Reads only."""
        return "seen"

    @server.tool(annotations={"readOnlyHint": True, "destructiveHint": True})
    def confused() -> str:
        """Says read-only and destructive."""
        return "?"

    @server.tool(annotations={"destructiveHint": False})
    def harmless_write() -> str:
        """Not destructive, but not read-only either."""
        return "written"

    @server.tool
    def plain() -> str:
        """No annotations."""
        return "plain"

    return server


def test_annotations_decide_read_only_only_for_a_trusted_server_on_both_clients():
    expected = {"look": True, "confused": False, "harmless_write": False, "plain": False}
    with MCPClient(server=annotated_server(), trust_annotations=True) as mcp:
        found = {fn.__name__: fn.__tool_read_only__ for fn in mcp.as_tools()}
    assert found == expected
    with MCPClient(server=annotated_server()) as mcp:
        untrusted = {fn.__name__: fn.__tool_read_only__ for fn in mcp.as_tools()}
    assert untrusted == dict.fromkeys(expected, False)


async def test_the_async_clients_tools_carry_read_only_too():
    async with aimu.aio.MCPClient(server=annotated_server(), trust_annotations=True) as mcp:
        found = {fn.__name__: fn.__tool_read_only__ for fn in await mcp.as_tools(prefix="x_")}
        distrusted = await mcp.as_tools(trust_annotations=False)
    assert found == {
        "x_look": True,
        "x_confused": False,
        "x_harmless_write": False,
        "x_plain": False,
    }
    assert [fn.__tool_read_only__ for fn in distrusted] == [False] * 4


def sdk_server() -> MCPServer:
    server = MCPServer("sdk")

    @server.tool()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello, {name}!"

    @server.tool()
    def letters(word: str) -> list[str]:
        """The letters of a word."""
        return list(word)

    @server.tool()
    def count(word: str) -> int:
        """How long a word is."""
        return len(word)

    return server


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("greet", {"name": "Ada"}, "Hello, Ada!"),
        ("letters", {"word": "Ada"}, "A\nd\na"),
        ("count", {"word": "Ada"}, "3"),
    ],
)
def test_an_official_sdk_servers_result_is_read_once(tool, arguments, expected):
    with MCPClient(server=sdk_server()) as mcp:
        assert mcp.call_tool(tool, arguments) == expected


def test_structured_content_beside_text_is_not_added_to_what_the_model_reads(mcp):
    model = ScriptedClient([call("caption_and_data", word="kite"), "A kite."])
    agent = aimu.Agent(model, tools=mcp.as_tools())
    agent.run("Caption.")
    assert [m["content"] for m in agent.messages if m["role"] == "tool"] == ["The word is kite."]


def test_a_prefix_lets_a_servers_tool_sit_beside_a_built_in_of_the_same_name():
    from aimu.tools import builtin

    server = FastMCP("timeclient")

    @server.tool
    def convert_time(time: str, to_zone: str) -> str:
        """The server's own time conversion."""
        return f"server converted {time} to {to_zone}"

    with MCPClient(server=server) as mcp:
        with pytest.raises(ValueError, match="convert_time"):
            aimu.Agent(ScriptedClient(["-"]), tools=[builtin.convert_time, *mcp.as_tools()])
        model = ScriptedClient([call("tc_convert_time", time="10:00", to_zone="UTC"), "Done."])
        agent = aimu.Agent(model, tools=[builtin.convert_time, *mcp.as_tools(prefix="tc_")])
        agent.run("Convert.")
    assert [m["content"] for m in agent.messages if m["role"] == "tool"] == [
        "server converted 10:00 to UTC"
    ]
