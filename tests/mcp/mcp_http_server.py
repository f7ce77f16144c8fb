"""The demo MCP server over streamable HTTP on 127.0.0.1, bearer auth checked by the server.

The accepted token comes from the environment (AIMU_TEST_MCP_TOKEN), never argv. Binds an
ephemeral port and prints it on the first line of stdout.
"""

import os
import socket

import uvicorn
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from mcp_demo_server import build_server

if __name__ == "__main__":
    token = os.environ.pop("AIMU_TEST_MCP_TOKEN")
    verifier = StaticTokenVerifier({token: {"client_id": "aimu-tests", "scopes": []}})
    app = build_server("http-demo", auth=verifier).http_app(path="/mcp")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    print(sock.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
