"""MCPClient and aimu.aio.MCPClient on an in-memory FastMCP server: construction, tool
specs, results, server-side failures, closing, and the async twin."""

from __future__ import annotations

import base64
import json
import threading
import warnings

import pytest
from fastmcp import FastMCP
from mcp_demo_server import red_png

import aimu
import aimu.aio
from aimu.tools import Image, MCPClient, MCPConnectionError, ToolResult
from aimu.tools.mcp import AsyncMCPClient


def mcp_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("aimu-mcp")]


@pytest.fixture
def client(demo_server: FastMCP):
    with MCPClient(server=demo_server) as mcp:
        yield mcp


# --- construction -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of config="),
        ({"url": "http://127.0.0.1:1/mcp", "file": "server.py"}, "got file= and url="),
        ({"file": "server.py", "auth": "tok"}, "apply only with url="),
        ({"config": {"mcpServers": {"a": {"url": "http://h/mcp"}}}, "headers": {}}, "only with"),
        ({"url": "ftp://host/mcp"}, "http:// or https://"),
        ({"url": "http://h/mcp", "auth": ""}, "empty token"),
        ({"url": "http://h/mcp", "auth": "t0ken", "headers": {"Authorization": "x"}}, "not both"),
        ({"config": {"mcpServers": {}}}, "no servers"),
        ({"config": {"mcpServers": {"a": {"port": 1}}}}, "needs a 'url'"),
    ],
)
def test_wrong_combinations_raise_a_clear_value_error_before_connecting(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MCPClient(**kwargs)
    assert mcp_threads() == []


def test_an_auth_object_cannot_be_combined_with_headers():
    from fastmcp.client.auth import BearerAuth

    with pytest.raises(ValueError, match="auth object cannot be combined with headers"):
        MCPClient(url="http://h/mcp", auth=BearerAuth("t0ken"), headers={"X-A": "b"})


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"server": "not a server"}, TypeError),
        ({"url": "http://h/mcp", "auth": 42}, TypeError),
        ({"url": "http://h/mcp", "headers": {"X-Count": 3}}, TypeError),
        ({"config": ["a"]}, TypeError),
        ({"file": 12}, TypeError),
        ({"file": "/no/such/server.py"}, FileNotFoundError),
        ({"server": FastMCP("x"), "timeout": 0}, ValueError),
    ],
)
def test_wrong_types_and_missing_scripts_are_refused_at_construction(kwargs, error):
    with pytest.raises(error):
        MCPClient(**kwargs)


def test_an_httpx_auth_object_is_refused_with_what_to_pass_instead():
    import httpx

    class HeaderAuth(httpx.Auth):
        def auth_flow(self, request):
            yield request

    with pytest.raises(TypeError, match=r"httpx2\.Auth"):
        MCPClient(url="http://h/mcp", auth=HeaderAuth())


def test_a_script_that_is_not_python_or_node_is_refused(tmp_path):
    script = tmp_path / "server.sh"
    script.write_text("echo hi")
    with pytest.raises(ValueError, match=r"\.py or \.js"):
        MCPClient(file=script)


def test_the_public_names_resolve_to_the_clients():
    assert aimu.tools.MCPClient is MCPClient
    assert aimu.aio.MCPClient is AsyncMCPClient
    assert issubclass(MCPConnectionError, RuntimeError)


# --- tools and results ------------------------------------------------------------------


def test_as_tools_carries_the_servers_input_schema_as_an_openai_spec(client):
    tools = {fn.__name__: fn for fn in client.as_tools()}
    add = tools["add"]
    assert add.__tool_spec__ == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers and return the sum.",
            "parameters": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
    assert add.__tool_is_async__ is False
    assert add.__tool_is_streaming__ is False
    assert add(a=2, b=3) == "5"


def test_as_tools_is_a_snapshot_and_calling_it_again_picks_up_new_tools(demo_server, client):
    before = {fn.__name__ for fn in client.as_tools()}

    @demo_server.tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    assert "shout" not in before
    after = {fn.__name__: fn for fn in client.as_tools()}
    assert after["shout"](text="hey") == "HEY"


def test_a_tool_function_keeps_its_client_alive_after_the_client_name_is_dropped(demo_server):
    tools = MCPClient(server=demo_server).as_tools()
    import gc

    gc.collect()
    add = next(fn for fn in tools if fn.__name__ == "add")
    assert add(a=1, b=1) == "2"
    assert mcp_threads() != []


def test_structured_results_reach_the_model_as_json(client):
    result = client.call_tool("describe_city", {"city": "Oslo"})
    assert json.loads(result.text) == {"city": "Oslo", "letters": 4}
    assert not result.is_error


def test_the_text_is_the_content_and_structured_content_is_kept_for_code(client):
    result = client.call_tool("caption_and_data", {"word": "kite"})
    assert result.text == "The word is kite."
    assert result.structured == {"word": "kite"}


def test_image_results_are_kept_as_images_and_named_for_the_model(client):
    result = client.call_tool("red_square")
    assert isinstance(result, ToolResult)
    (image,) = result.images
    assert isinstance(image, Image)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data) == red_png()
    assert "[image 1: image/png" in result.text
    red_square = next(fn for fn in client.as_tools() if fn.__name__ == "red_square")
    assert red_square().images == result.images


def test_a_tool_that_fails_on_the_server_is_a_result_carrying_the_servers_text(client):
    result = client.call_tool("fail", {"reason": "the moon is full"})
    assert result.is_error
    assert "cannot comply: the moon is full" in result.text
    fail = next(fn for fn in client.as_tools() if fn.__name__ == "fail")
    assert fail(reason="no").is_error


def test_rejected_arguments_are_a_result_the_model_can_correct_from(client):
    result = client.call_tool("add", {"a": "many"})
    assert result.is_error
    assert "valid integer" in result.text
    assert "b" in result.text and "Missing required argument" in result.text
    assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"


def test_an_unknown_tool_is_a_result_not_a_connection_error(client):
    result = client.call_tool("no_such_tool")
    assert result.is_error
    assert "no_such_tool" in result.text


def test_a_call_over_its_timeout_is_a_result_and_the_connection_stays_usable(demo_server):
    with MCPClient(server=demo_server, timeout=0.2) as mcp:
        result = mcp.call_tool("wait", {"seconds": 5})
        assert result.is_error
        assert result.text == "Tool 'wait' did not answer within 0.2 s."
        assert mcp.call_tool("add", {"a": 1, "b": 1}).text == "2"


def test_bad_call_tool_arguments_raise_type_errors(client):
    with pytest.raises(TypeError, match="arguments must be a dict"):
        client.call_tool("add", [1, 2])
    with pytest.raises(TypeError, match="tool name must be a str"):
        client.call_tool(None)


def test_tool_names_models_refuse_are_made_safe_but_call_the_real_tool(demo_server):
    @demo_server.tool(name="weather.today")
    def weather() -> str:
        """Today's weather."""
        return "sunny"

    with MCPClient(server=demo_server) as mcp:
        tool = next(
            fn for fn in mcp.as_tools() if fn.__tool_spec__["function"]["name"] == "weather_today"
        )
        assert tool() == "sunny"


# --- lifecycle --------------------------------------------------------------------------


def test_close_is_idempotent_stops_the_thread_and_later_use_says_closed(demo_server):
    mcp = MCPClient(server=demo_server)
    assert mcp_threads() == ["aimu-mcp"]
    mcp.close()
    mcp.close()
    assert mcp.closed
    assert mcp_threads() == []
    assert "(closed)" in repr(mcp)
    with pytest.raises(MCPConnectionError, match="closed; create a new one"):
        mcp.ping()
    with pytest.raises(MCPConnectionError, match="closed"):
        mcp.call_tool("add", {"a": 1, "b": 2})


def test_ping_lists_the_servers_tools(client):
    assert {"add", "fail", "red_square"} <= {tool.name for tool in client.ping()}


def test_a_dropped_client_is_closed_when_collected(demo_server):
    import gc

    MCPClient(server=demo_server).ping()
    gc.collect()
    assert mcp_threads() == []


def test_current_fastmcp_raises_no_deprecation_warnings(demo_server, stdio_script):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with MCPClient(server=demo_server) as mcp:
            mcp.as_tools()[0](a=1, b=2)
        with MCPClient(file=stdio_script) as mcp:
            mcp.call_tool("add", {"a": 1, "b": 2})
    assert [w for w in caught if issubclass(w.category, DeprecationWarning)] == []


# --- the async twin ---------------------------------------------------------------------


async def test_the_async_client_gives_the_same_results_as_the_sync_one(demo_server):
    async with aimu.aio.MCPClient(server=demo_server) as mcp:
        tools = {fn.__name__: fn for fn in await mcp.as_tools()}
        assert tools["add"].__tool_is_async__ is True
        assert tools["add"].__tool_is_streaming__ is False
        assert await tools["add"](a=4, b=5) == "9"
        assert (await mcp.call_tool("fail", {"reason": "x"})).is_error
        assert (await mcp.call_tool("red_square")).images
    assert mcp.closed
    with pytest.raises(MCPConnectionError, match="closed"):
        await mcp.ping()


async def test_the_async_client_connects_on_first_use(demo_server):
    mcp = aimu.aio.MCPClient(server=demo_server)
    assert "(idle)" in repr(mcp)
    assert (await mcp.call_tool("add", {"a": 1, "b": 2})).text == "3"
    assert "(connected)" in repr(mcp)
    await mcp.close()
    await mcp.close()


def test_an_interrupt_stops_a_waiting_call_and_the_client_stays_usable(demo_server, sigint_handled):
    import _thread

    started = threading.Event()

    @demo_server.tool
    async def hang() -> str:
        """Never answers."""
        import asyncio

        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    def interrupt_when_started() -> None:
        started.wait()
        _thread.interrupt_main()

    with MCPClient(server=demo_server) as mcp:
        threading.Thread(target=interrupt_when_started, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            mcp.call_tool("hang")
        assert mcp.call_tool("add", {"a": 1, "b": 1}).text == "2"
