"""The demo MCP server over stdio: ``python mcp_stdio_server.py``."""

from mcp_demo_server import build_server

if __name__ == "__main__":
    build_server("stdio-demo").run(show_banner=False)
