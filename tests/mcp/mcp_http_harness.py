"""The HTTP MCP server the tests start: a subprocess on 127.0.0.1 that checks a bearer token."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
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
