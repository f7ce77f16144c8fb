"""How MCP failures reach the user, and where secrets never go: a config server that does not
start, a stdio server exiting at start-up, exception chains, log records of every logger,
secret-named config env values (and only those), and FastMCP's own console logs."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_http_harness import HttpServer

from aimu.tools import MCPClient, MCPConnectionError
from aimu.tools.mcp import MCPFailure

HERE = Path(__file__).parent


def chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception reachable from it through causes and contexts."""
    found, pending = [], [exc]
    while pending:
        current = pending.pop()
        if current is None or any(current is f for f in found):
            continue
        found.append(current)
        pending += [current.__cause__, current.__context__]
    return found


@pytest.fixture
def broken_script(tmp_path) -> Path:
    script = tmp_path / "broken_server.py"
    script.write_text("import json\nimport no_such_module_for_mcp\n")
    return script


def stdio_entry(script: Path, **extra) -> dict:
    return {"command": sys.executable, "args": [str(script)], **extra}


# --- servers that do not start ---------------------------------------------------------


def test_a_config_where_one_server_fails_to_start_fails_naming_that_server(
    stdio_script, broken_script
):
    config = {"mcpServers": {"good": stdio_entry(stdio_script), "bad": stdio_entry(broken_script)}}
    with pytest.raises(MCPConnectionError) as caught:
        MCPClient(config=config)
    message = str(caught.value)
    assert "server 'bad' did not start" in message
    assert "No module named 'no_such_module_for_mcp'" in message
    assert "server 'good' did not start" not in message


def test_a_stdio_server_exiting_at_start_up_is_one_readable_message_with_its_reason(
    broken_script, capfd
):
    with pytest.raises(MCPConnectionError) as caught:
        MCPClient(file=broken_script)
    error = caught.value
    assert "exited at start-up" in str(error)
    assert "ModuleNotFoundError: No module named 'no_such_module_for_mcp'" in str(error)
    assert "Traceback (most recent call last)" in error.server_stderr
    printed = "".join(traceback.format_exception(error))
    assert printed.count("Traceback (most recent call last)") == 1, printed
    assert len(printed.splitlines()) < 30, printed
    assert [type(e) for e in chain(error)] == [MCPConnectionError, MCPFailure]
    assert "no_such_module_for_mcp" not in capfd.readouterr().err


def test_a_server_that_prints_nothing_before_exiting_still_gets_a_clear_error(tmp_path):
    script = tmp_path / "quiet_exit.py"
    script.write_text("raise SystemExit(0)\n")
    with pytest.raises(MCPConnectionError, match="Could not connect to the MCP server script"):
        MCPClient(file=script)


# --- secrets ----------------------------------------------------------------------------


def test_no_exception_in_a_connection_errors_chain_holds_the_token_or_query(
    http_server: HttpServer,
):
    query_secret = "q-secret-77aa88bb99cc"
    wrong_token = "wrong-token-0a1b2c3d4e5f"
    url = f"{http_server.url}?api_key={query_secret}"
    with pytest.raises(MCPConnectionError) as caught:
        MCPClient(url=url, auth=wrong_token)
    links = chain(caught.value)
    assert [type(e) for e in links] == [MCPConnectionError, MCPFailure]
    for link in links:
        seen = repr(link) + repr(vars(link)) + "".join(traceback.format_exception(link))
        assert query_secret not in seen and wrong_token not in seen
    assert "Traceback (most recent call last)" in links[1].details


@pytest.fixture
def every_log_record() -> Iterator[list[str]]:
    """Every record of every logger, at DEBUG, formatted with its traceback."""

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(self.format(record))

    kept: list[str] = []
    handler = Keep(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    loggers = [logging.getLogger()] + [
        logging.getLogger(name) for name in list(logging.Logger.manager.loggerDict)
    ]
    saved = [(lg, lg.level) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.addHandler(handler)
    try:
        yield kept
    finally:
        for lg, level in saved:
            lg.setLevel(level)
            lg.removeHandler(handler)


def test_an_mcp_urls_query_secret_is_in_no_log_record(http_server: HttpServer, every_log_record):
    secret = "q-secret-5f4e3d2c1b0a"
    url = f"{http_server.url}?api_key={secret}"
    with MCPClient(url=url, auth=http_server.token) as mcp:
        assert mcp.call_tool("add", {"a": 1, "b": 1}) == "2"
    with pytest.raises(MCPConnectionError):
        MCPClient(url=url, auth="not-the-token-123456")
    logged = "\n".join(every_log_record)
    assert "HTTP Request: POST http://127.0.0.1" in logged, "the request lines were not captured"
    assert secret not in logged
    assert http_server.token not in logged


def test_config_env_values_are_redacted_only_for_secret_named_variables(stdio_script):
    secret = "sk-env-secret-9f8e7d6c"
    env = {
        "TZ": "Asia/Tokyo",
        "SERVICE_API_KEY": secret,
        "DB_PASSWORD": "hunter22x",
        "GIT_AUTHOR_NAME": "Ada Lovelace",
        "GIT_AUTHOR_DATE": "2026-01-02T03:04:05",
        "KEYBOARD": "dvorak-programmer",
    }
    config = {"mcpServers": {"clock": stdio_entry(stdio_script, env=env)}}
    with MCPClient(config=config) as mcp:
        assert mcp.call_tool("env_value", {"name": "TZ"}) == "Asia/Tokyo"
        assert mcp.call_tool("env_value", {"name": "SERVICE_API_KEY"}) == "[hidden]"
        assert mcp.call_tool("env_value", {"name": "DB_PASSWORD"}) == "[hidden]"
        assert mcp.call_tool("env_value", {"name": "GIT_AUTHOR_NAME"}) == "Ada Lovelace"
        assert mcp.call_tool("env_value", {"name": "GIT_AUTHOR_DATE"}) == "2026-01-02T03:04:05"
        assert mcp.call_tool("env_value", {"name": "KEYBOARD"}) == "dvorak-programmer"
        assert secret not in repr(mcp)


# --- FastMCP's own logging ----------------------------------------------------------------

MULTI_SERVER_RUN = textwrap.dedent(
    """
    import logging, sys
    if sys.argv[1] == "logging-on":
        logging.basicConfig(level=logging.INFO)
    from aimu.tools import MCPClient
    server = [sys.executable, {script!r}]
    config = {{"mcpServers": {{
        "one": {{"command": sys.executable, "args": [{script!r}]}},
        "two": {{"command": sys.executable, "args": [{script!r}]}},
    }}}}
    with MCPClient(config=config) as mcp:
        print(mcp.call_tool("one_add", {{"a": 1, "b": 2}}))
    """
)


@pytest.mark.parametrize("logging_on", [False, True])
def test_fastmcps_info_logs_print_only_when_the_user_turns_logging_on(
    stdio_script, tmp_path, logging_on
):
    script = tmp_path / "multi.py"
    script.write_text(MULTI_SERVER_RUN.format(script=str(stdio_script)))
    done = subprocess.run(
        [sys.executable, str(script), "logging-on" if logging_on else "quiet"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=HERE,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"
    if logging_on:
        assert "Proxy detected connected client" in done.stderr
    else:
        assert done.stderr == ""


def test_a_stdio_server_dying_mid_call_is_reported_with_what_it_last_wrote(stdio_script):
    with MCPClient(file=stdio_script) as mcp:
        with pytest.raises(MCPConnectionError, match="Lost the connection") as caught:
            mcp.call_tool("crash", {"reason": "disk on fire"})
        assert "its last stderr line: 'fatal: disk on fire'" in str(caught.value)
        assert mcp.call_tool("add", {"a": 1, "b": 1}) == "2"
