"""MCP results as servers send them, reproduced by in-process servers: the content blocks
are what the model reads, structured content only when a server sends no content (and is
kept on the result for code), a ``-> str`` that looks like a number is read once, an image
with structured content is an image and not base64 text, and a huge result is cut."""

from __future__ import annotations

import base64
import json

import mcp_types
import pytest
from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from mcp.server.mcpserver import MCPServer
from mcp_demo_server import red_png

import aimu
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.tools import MCPClient

FILE_TEXT = "Hello ünïcode ✓\nline 2\n"


def shapes_server() -> FastMCP:
    """Tools shaped like server-filesystem's, server-memory's and a calculator's."""
    server = FastMCP("shapes")

    @server.tool
    def read_text_file(path: str) -> ToolResult:
        """Text, and the same under another key as structured content (server-filesystem)."""
        return ToolResult(content=FILE_TEXT, structured_content={"content": FILE_TEXT})

    @server.tool
    def read_media_file(path: str) -> ToolResult:
        """An image block, and the image again inside structured content."""
        data = base64.b64encode(red_png(64)).decode()
        block = mcp_types.ImageContent(type="image", data=data, mime_type="image/png")
        return ToolResult(
            content=[block],
            structured_content={
                "content": [{"type": "image", "data": data, "mimeType": "image/png"}]
            },
        )

    @server.tool
    def create_entities(names: list[str]) -> ToolResult:
        """JSON text, and the same entities as structured content (server-memory)."""
        entities = [{"name": name, "entityType": "person"} for name in names]
        return ToolResult(
            content=json.dumps(entities, indent=2), structured_content={"entities": entities}
        )

    @server.tool
    def multiply(a: int, b: int) -> str:
        """A calculator that answers in text."""
        return str(a * b)

    @server.tool
    def is_even(n: int) -> str:
        """'true' or 'false', as text."""
        return "true" if n % 2 == 0 else "false"

    @server.tool
    def only_structured() -> ToolResult:
        """Structured content and no content blocks at all."""
        return ToolResult(content=[], structured_content={"rows": 3, "ok": True})

    @server.tool
    def flood(characters: int) -> str:
        """A result of the given size."""
        return "".join(chr(ord("a") + i % 26) for i in range(characters))

    return server


@pytest.fixture(scope="module")
def shapes():
    with MCPClient(server=shapes_server()) as client:
        yield client


def test_text_with_structured_content_under_another_key_is_read_once(shapes):
    answer = shapes.call_tool("read_text_file", {"path": "hello.txt"})
    assert answer == FILE_TEXT
    assert answer.structured == {"content": FILE_TEXT}


def test_json_text_with_structured_entities_lists_them_once(shapes):
    answer = shapes.call_tool("create_entities", {"names": ["Ada", "Alan"]})
    assert json.loads(answer) == [
        {"name": "Ada", "entityType": "person"},
        {"name": "Alan", "entityType": "person"},
    ]
    assert answer.count("Ada") == 1
    assert answer.structured["entities"][1]["name"] == "Alan"


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [("multiply", {"a": 19, "b": 55}, "1045"), ("is_even", {"n": 4}, "true")],
)
def test_a_str_result_that_looks_like_a_number_or_boolean_is_read_once(
    shapes, tool, arguments, expected
):
    assert shapes.call_tool(tool, arguments) == expected


def test_an_official_sdk_str_result_that_looks_like_a_number_is_read_once():
    server = MCPServer("sdk-calc")

    @server.tool()
    def multiply(a: int, b: int) -> str:
        """Multiply, answering in text."""
        return str(a * b)

    with MCPClient(server=server) as mcp:
        answer = mcp.call_tool("multiply", {"a": 19, "b": 55})
    assert answer == "1045"
    assert answer.structured == {"result": "1045"}


def test_an_image_with_structured_content_is_an_image_not_base64_text(shapes):
    answer = shapes.call_tool("read_media_file", {"path": "red.png"})
    (image,) = answer.images
    assert base64.b64decode(image.data) == red_png(64)
    assert answer.startswith("[image 1: image/png, ")
    assert len(answer) < 100
    assert image.data not in answer


def test_structured_content_is_the_text_when_the_server_sends_no_content(shapes):
    answer = shapes.call_tool("only_structured")
    assert json.loads(answer) == {"rows": 3, "ok": True}
    assert answer.structured == {"rows": 3, "ok": True}


def test_a_four_megabyte_result_is_cut_in_the_middle_saying_so(shapes):
    size = 4_000_000
    answer = shapes.call_tool("flood", {"characters": size})
    assert len(answer) < 16_100
    assert f"[... {size - 16_000} characters omitted ...]" in answer
    assert answer.startswith("abcdefghij")
    whole = "".join(block.text for block in answer.content)
    assert len(whole) == size
    assert answer.endswith(whole[-50:])


def test_the_model_reads_the_cut_result_and_the_record_keeps_no_more(shapes):
    model = ScriptedClient([call("flood", characters=1_000_000), "A lot of letters."])
    agent = aimu.Agent(model, tools=shapes.as_tools())
    chunks = list(agent.run("Flood me.", stream=True))
    (sent,) = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert len(sent) < 16_100 and "characters omitted" in sent
    (result,) = [c.content["result"] for c in chunks if c.phase.name == "TOOL_RESULT"]
    assert result == sent
