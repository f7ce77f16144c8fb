"""Real MCP servers for the MCP client tests: in memory, a stdio script, and an HTTP server
on 127.0.0.1 (ephemeral port) that checks a bearer token itself."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastmcp import FastMCP
from mcp_demo_server import build_server

HERE = Path(__file__).parent
STDIO_SCRIPT = HERE / "mcp_stdio_server.py"
HTTP_SCRIPT = HERE / "mcp_http_server.py"


@dataclass
class HttpServer:
    url: str
    token: str
    process: subprocess.Popen

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)


def start_http_server() -> HttpServer:
    token = secrets.token_urlsafe(24)
    process = subprocess.Popen(
        [sys.executable, str(HTTP_SCRIPT)],
        cwd=HERE,
        env={**os.environ, "AIMU_TEST_MCP_TOKEN": token},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = process.stdout.readline()
    if not line.strip().isdigit():
        process.kill()
        raise RuntimeError(f"the test HTTP MCP server did not start (said {line!r})")
    return HttpServer(f"http://127.0.0.1:{int(line)}/mcp", token, process)


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
