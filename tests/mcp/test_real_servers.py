"""Third-party MCP servers from the registries, as users run them: npm's server-everything,
-filesystem and -memory, PyPI's mcp-server-time and mcp-server-git. ``scripts/setup`` installs
them into ``.mcp-servers/`` (``scripts/mcp_servers.sh``); without npm the npm servers' tests
are skipped, saying so."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp_demo_server import red_png

import aimu
import aimu.aio
from aimu.agents.loop import STOPPED
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.tools import MCPClient

SERVERS = Path(__file__).resolve().parents[2] / ".mcp-servers"
NPM_BIN = SERVERS / "node_modules" / ".bin"
PY_BIN = SERVERS / "python" / "bin"
INSTALL = "run bash scripts/mcp_servers.sh (bash scripts/setup does)"


def npm_server(name: str) -> str:
    """The installed npm server ``name``; skipped without npm, failing if npm is there but
    the server was not installed."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip(f"npm is not installed, so the npm MCP server {name} is not either")
    path = NPM_BIN / name
    assert path.exists(), f"{name} is not installed in .mcp-servers: {INSTALL}"
    return str(path)


def python_server(name: str) -> str:
    path = PY_BIN / name
    assert path.exists(), f"{name} is not installed in .mcp-servers: {INSTALL}"
    return str(path)


def stdio(command: str, *args: str, **env: str) -> dict:
    entry: dict = {"command": command, "args": list(args)}
    if env:
        entry["env"] = env
    return entry


def test_filesystem_read_text_file_is_the_files_text_alone(tmp_path):
    (tmp_path / "hello.txt").write_text("Hello ünïcode ✓\nline 2\n", encoding="utf-8")
    server = stdio(npm_server("mcp-server-filesystem"), str(tmp_path))
    with MCPClient(config={"mcpServers": {"fs": server}}) as mcp:
        answer = mcp.call_tool("read_text_file", {"path": str(tmp_path / "hello.txt")})
    assert answer == "Hello ünïcode ✓\nline 2\n"
    assert answer.structured == {"content": "Hello ünïcode ✓\nline 2\n"}


def test_filesystem_read_media_file_is_an_image_not_base64_text(tmp_path):
    png = red_png(300)
    (tmp_path / "red.png").write_bytes(png)
    server = stdio(npm_server("mcp-server-filesystem"), str(tmp_path))
    with MCPClient(config={"mcpServers": {"fs": server}}) as mcp:
        answer = mcp.call_tool("read_media_file", {"path": str(tmp_path / "red.png")})
    (image,) = answer.images
    assert base64.b64decode(image.data) == png
    assert len(answer) < 100, answer[:200]


def test_memory_create_entities_lists_them_once(tmp_path):
    server = stdio(npm_server("mcp-server-memory"), MEMORY_FILE_PATH=str(tmp_path / "memory.jsonl"))
    entities = [{"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}]
    with MCPClient(config={"mcpServers": {"memory": server}}) as mcp:
        answer = mcp.call_tool("create_entities", {"entities": entities})
    assert json.loads(answer) == entities
    assert answer.count("wrote programs") == 1


def test_everything_structured_weather_is_read_once():
    with MCPClient(config={"mcpServers": {"e": stdio(npm_server("mcp-server-everything"))}}) as mcp:
        answer = mcp.call_tool("get-structured-content", {"location": "Chicago"})
    assert json.loads(answer) == {"temperature": 36, "conditions": "Light rain / drizzle",
                                  "humidity": 82}  # fmt: skip
    assert answer.structured["humidity"] == 82


def test_a_config_with_everything_and_memory_prints_no_tracebacks(tmp_path, capfd):
    config = {
        "mcpServers": {
            "everything": stdio(npm_server("mcp-server-everything")),
            "memory": stdio(
                npm_server("mcp-server-memory"), MEMORY_FILE_PATH=str(tmp_path / "m.jsonl")
            ),
        }
    }
    with MCPClient(config=config) as mcp:
        names = {tool.name for tool in mcp.list_tools()}
        assert mcp.call_tool("everything_get-sum", {"a": 2, "b": 3}) == "The sum of 2 and 3 is 5."
    assert {"everything_echo", "memory_create_entities"} <= names
    err = capfd.readouterr().err
    assert "notification callback" not in err and "Traceback" not in err


async def test_an_interrupted_long_operation_is_recorded_as_started_and_stopped():
    server = stdio(npm_server("mcp-server-everything"))
    async with aimu.aio.MCPClient(config={"mcpServers": {"e": server}}) as mcp:
        model = ScriptedClient(
            [call("trigger-long-running-operation", duration=30, steps=30), "Never."]
        )
        agent = aimu.aio.Agent(model, tools=await mcp.as_tools())
        progress = []

        async def run() -> None:
            async for chunk in agent.stream("Run the long operation."):
                if chunk.phase is Phase.TOOL_PROGRESS:
                    progress.append(chunk.content["progress"])
                    if len(progress) == 2:
                        task.cancel()

        task = asyncio.ensure_future(run())
        with pytest.raises(asyncio.CancelledError):
            await task
    assert progress[:2] == [
        {"progress": 1, "total": 30, "message": None},
        {"progress": 2, "total": 30, "message": None},
    ]
    (answer,) = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert answer == STOPPED


def test_time_server_answers_json_once():
    server = stdio(python_server("mcp-server-time"), "--local-timezone", "UTC")
    with MCPClient(config={"mcpServers": {"time": server}}) as mcp:
        answer = mcp.call_tool("get_current_time", {"timezone": "Europe/Oslo"})
    assert not answer.is_error, answer
    assert json.loads(answer)["timezone"] == "Europe/Oslo"


def test_git_server_log_shows_the_commit(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Ada Lovelace", "-c", "user.email=ada@x.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "notes.txt").write_text("analytical engine\n")
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "First notes"], check=True)
    server = stdio(python_server("mcp-server-git"), "--repository", str(repo))
    with MCPClient(config={"mcpServers": {"git": server}}) as mcp:
        answer = mcp.call_tool("git_log", {"repo_path": str(repo)})
    assert not answer.is_error, answer
    assert "First notes" in answer and "Ada Lovelace" in answer
    assert answer.count("First notes") == 1
