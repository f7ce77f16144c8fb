"""The four ways to reach a server, for real: in memory (see test_mcp_client.py), a stdio
script, an HTTP server on 127.0.0.1 that checks a bearer token, and an mcpServers config.
Also: a server dying mid-session, and secrets never reaching messages or reprs."""

from __future__ import annotations

import os
import sys
import traceback

import psutil
import pytest
from mcp_http_harness import HttpServer

import aimu.aio
from aimu.tools import MCPClient, MCPConnectionError


def full_text(exc: BaseException) -> str:
    """Everything a traceback would show, chained causes included."""
    return "".join(traceback.format_exception(exc))


# --- stdio ------------------------------------------------------------------------------


def test_a_stdio_server_script_runs_in_its_own_process_and_stops_on_close(stdio_script):
    with MCPClient(file=stdio_script) as mcp:
        assert mcp.call_tool("add", {"a": 20, "b": 22}).text == "42"
        pid = int(mcp.call_tool("server_pid").text)
        assert pid != os.getpid()
        assert psutil.pid_exists(pid)
    assert not psutil.pid_exists(pid)


def test_a_stdio_server_gets_no_secrets_from_our_environment(stdio_script, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-travel")
    with MCPClient(file=stdio_script) as mcp:
        pid = int(mcp.call_tool("server_pid").text)
        assert "OPENAI_API_KEY" not in psutil.Process(pid).environ()


def test_a_stdio_server_dying_mid_call_raises_and_the_next_call_reconnects(stdio_script):
    with MCPClient(file=stdio_script) as mcp:
        first = int(mcp.call_tool("server_pid").text)
        with pytest.raises(MCPConnectionError, match="next call reconnects") as caught:
            mcp.call_tool("stop_server")
        assert caught.value.__cause__ is not None
        second = int(mcp.call_tool("server_pid").text)
        assert second != first
        assert mcp.call_tool("add", {"a": 1, "b": 2}).text == "3"


def test_a_script_that_crashes_at_start_is_a_connection_error(tmp_path):
    script = tmp_path / "broken_server.py"
    script.write_text("raise SystemExit('no server today')\n")
    with pytest.raises(MCPConnectionError, match="Could not connect") as caught:
        MCPClient(file=script)
    assert "broken_server.py" in str(caught.value)
    assert caught.value.__cause__ is not None


# --- HTTP with bearer auth --------------------------------------------------------------


def test_the_right_bearer_token_is_accepted_by_the_http_server(http_server: HttpServer):
    with MCPClient(url=http_server.url, auth=http_server.token) as mcp:
        assert mcp.call_tool("add", {"a": 2, "b": 2}).text == "4"
        assert "/mcp" in repr(mcp)
        assert http_server.token not in repr(mcp)


@pytest.mark.parametrize("auth", ["wrong-token-d41d8cd98f00", None])
def test_a_wrong_or_missing_token_is_a_connection_error_that_never_shows_it(
    http_server: HttpServer, auth
):
    with pytest.raises(MCPConnectionError, match="Could not connect") as caught:
        MCPClient(url=http_server.url, auth=auth)
    assert caught.value.__cause__ is not None
    assert "auth=" in str(caught.value)
    if auth:
        assert auth not in full_text(caught.value)
        assert auth not in repr(caught.value)


def test_a_token_given_with_its_bearer_prefix_still_works(http_server: HttpServer):
    with MCPClient(url=http_server.url, auth=f"Bearer {http_server.token}") as mcp:
        assert mcp.call_tool("add", {"a": 1, "b": 1}).text == "2"


def test_a_bearer_auth_object_works_like_a_token_string(http_server: HttpServer):
    from fastmcp.client.auth import BearerAuth

    with MCPClient(url=http_server.url, auth=BearerAuth(http_server.token)) as mcp:
        assert mcp.call_tool("add", {"a": 1, "b": 1}).text == "2"


def test_header_values_reach_the_server_but_never_the_model(http_server: HttpServer):
    secret = "hdr-secret-0f9e8d7c6b5a"
    headers = {"X-Api-Key": secret, "Authorization": f"Bearer {http_server.token}"}
    with MCPClient(url=http_server.url, headers=headers) as mcp:
        result = mcp.call_tool("echo_header", {"name": "x-api-key"})
        assert result.text == "[hidden]"
        assert secret not in repr(mcp)


def test_query_values_and_headers_not_named_secret_are_never_rewritten(http_server: HttpServer):
    headers = {"X-Client-Name": "notebook", "X-Api-Key": "hdr-secret-5e4d3c2b1a"}
    url = f"{http_server.url}?client=notebook"
    with MCPClient(url=url, auth=http_server.token, headers=headers) as mcp:
        assert mcp.call_tool("echo_header", {"name": "x-client-name"}).text == "notebook"
        assert mcp.call_tool("echo", {"text": "my notebook is open"}).text == (
            "Echo: my notebook is open"
        )
        assert mcp.call_tool("echo_header", {"name": "x-api-key"}).text == "[hidden]"


def test_an_unreachable_url_hides_header_values_and_query_secrets():
    secret, header_secret = "q-secret-1a2b3c4d5e", "hdr-secret-9z8y7x6w"
    url = f"http://127.0.0.1:9/mcp?api_key={secret}"
    headers = {"X-Api-Key": header_secret}
    with pytest.raises(MCPConnectionError) as caught:
        MCPClient(url=url, headers=headers)
    text = full_text(caught.value)
    assert secret not in text
    assert header_secret not in text
    assert "http://127.0.0.1:9/mcp?api_key=[hidden]" in str(caught.value)


def test_an_http_server_dying_mid_session_raises_then_says_it_cannot_reconnect(
    own_http_server: HttpServer,
):
    mcp = MCPClient(url=own_http_server.url, auth=own_http_server.token)
    try:
        assert mcp.call_tool("add", {"a": 1, "b": 1}).text == "2"
        own_http_server.kill()
        with pytest.raises(MCPConnectionError, match="Lost the connection") as lost:
            mcp.call_tool("add", {"a": 1, "b": 1})
        with pytest.raises(MCPConnectionError, match="Could not connect") as again:
            mcp.ping()
        for error in (lost.value, again.value):
            assert own_http_server.token not in full_text(error)
    finally:
        mcp.close()


async def test_the_async_client_reaches_the_http_server_with_its_token(http_server: HttpServer):
    async with aimu.aio.MCPClient(url=http_server.url, auth=http_server.token) as mcp:
        assert (await mcp.call_tool("add", {"a": 3, "b": 4})).text == "7"


# --- config -----------------------------------------------------------------------------


def test_a_config_reaches_every_server_it_names(http_server: HttpServer, stdio_script):
    config = {
        "mcpServers": {
            "local": {"command": sys.executable, "args": [str(stdio_script)]},
            "remote": {"url": http_server.url, "auth": http_server.token},
        }
    }
    with MCPClient(config=config) as mcp:
        names = {fn.__name__ for fn in mcp.as_tools()}
        assert {"local_add", "remote_add"} <= names
        assert mcp.call_tool("local_add", {"a": 1, "b": 2}).text == "3"
        assert mcp.call_tool("remote_add", {"a": 2, "b": 2}).text == "4"
        assert http_server.token not in repr(mcp)


def test_a_single_server_config_keeps_plain_tool_names(stdio_script):
    config = {"mcpServers": {"only": {"command": sys.executable, "args": [str(stdio_script)]}}}
    with MCPClient(config=config) as mcp:
        assert "add" in {fn.__name__ for fn in mcp.as_tools()}


def test_an_invalid_config_is_refused_without_quoting_its_secrets():
    secret = "env-secret-5e6f7a8b"
    config = {
        "mcpServers": {"a": {"command": "python", "args": "not-a-list", "env": {"K": secret}}}
    }
    with pytest.raises(ValueError, match="not a valid mcpServers config") as caught:
        MCPClient(config=config)
    assert secret not in full_text(caught.value)
