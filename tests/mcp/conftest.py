"""Real MCP servers for the MCP client tests: in memory, a stdio script, and an HTTP server
on 127.0.0.1 (ephemeral port) that checks a bearer token itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import FastMCP
from mcp_demo_server import build_server
from mcp_http_harness import HttpServer, start_http_server

HERE = Path(__file__).parent
STDIO_SCRIPT = HERE / "mcp_stdio_server.py"


@pytest.fixture
def demo_server() -> FastMCP:
    return build_server()


@pytest.fixture
def stdio_script() -> Path:
    return STDIO_SCRIPT


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    server = start_http_server()
    yield server
    server.kill()


@pytest.fixture
def own_http_server() -> Iterator[HttpServer]:
    """A server this test alone uses (and may kill)."""
    server = start_http_server()
    yield server
    if server.process.poll() is None:
        server.kill()
