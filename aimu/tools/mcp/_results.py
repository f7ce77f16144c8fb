"""Turn an MCP ``CallToolResult`` into the :class:`MCPResult` a model reads.

The content blocks are what the model reads, as the MCP specification intends (a tool that
returns structured content also sends it serialised in a text block): text blocks are
joined, images are kept as :class:`Image` (for the notebook) and named in the text (for the
model), audio and binary resources are described, never dumped. Structured content becomes
the text only when the server sent no content; it is always kept on the result for code.
A text longer than the built-in tools' output cap is cut in the middle, as theirs is, saying
so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import mcp_types

from aimu.tools._capture import cut
from aimu.tools.results import Image, ToolResult


class MCPResult(str, ToolResult):
    """What an MCP tool answered: its text, as a ``str``, carrying ``images`` and ``is_error``.

    The text is what a model reads: the content blocks (images named, ``[image 1:
    image/png, 70 bytes]``), or the structured content as JSON when the server sent no
    content; the client's secrets redacted; beyond about 16,000 characters cut in the middle,
    saying how much was left out. ``is_error`` flags a failure on the server (the text then
    carries the server's message). Being a ``str`` it is what the reference's ``as_tools()``
    functions return; being a :class:`ToolResult` it keeps the images and the error flag when
    the agent dispatches it. For your own code, whole and not redacted: ``content`` holds the
    content blocks as the server sent them, ``structured`` its structured content (``None``
    when it sent none).
    """

    content: tuple[Any, ...]
    structured: Any

    def __new__(cls, text: str, *_: Any, **__: Any) -> MCPResult:
        return str.__new__(cls, text)

    def __init__(
        self,
        text: str,
        images: Iterable[Image] = (),
        is_error: bool = False,
        content: Iterable[Any] = (),
        structured: Any = None,
    ) -> None:
        ToolResult.__init__(self, str(text), tuple(images), bool(is_error))
        object.__setattr__(self, "content", tuple(content))
        object.__setattr__(self, "structured", structured)

    @classmethod
    def error(cls, text: str) -> MCPResult:
        return cls(text, is_error=True)


def to_tool_result(
    tool_name: str, result: mcp_types.CallToolResult, redact: Callable[[str], str] = str
) -> MCPResult:
    """The :class:`MCPResult` of ``result``: its text passed through ``redact``, then cut."""
    parts: list[str] = []
    images: list[Image] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            parts.append(_add_image(images, tool_name, block.data, block.mime_type))
        elif isinstance(block, mcp_types.AudioContent):
            parts.append(f"[audio: {block.mime_type}, {_size(block.data)}, not shown]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            parts.append(_resource_text(images, tool_name, block.resource))
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource link: {block.name} <{block.uri}>]")
    text = "\n".join(parts)
    if not text.strip() and result.structured_content is not None:
        text = json.dumps(_unwrapped(result), ensure_ascii=False, default=str)
    if not text:
        text = f"Tool '{tool_name}' failed without a message." if result.is_error else "(no output)"
    return MCPResult(
        cut(redact(text)), images, bool(result.is_error), result.content, result.structured_content
    )


def _unwrapped(result: mcp_types.CallToolResult) -> Any:
    """The structured content, unwrapped when FastMCP wrapped a bare value in ``result``."""
    value = result.structured_content
    fastmcp_meta = (result.meta or {}).get("fastmcp")
    if isinstance(fastmcp_meta, dict) and fastmcp_meta.get("wrap_result") and "result" in value:
        return value["result"]
    return value


def _add_image(images: list[Image], tool_name: str, data: str, mime_type: str) -> str:
    images.append(Image(data, mime_type, f"image {len(images) + 1} from tool '{tool_name}'"))
    return f"[image {len(images)}: {mime_type}, {_size(data)}]"


def _resource_text(images: list[Image], tool_name: str, resource: Any) -> str:
    if isinstance(resource, mcp_types.TextResourceContents):
        return resource.text
    mime_type = resource.mime_type or "application/octet-stream"
    if mime_type.startswith("image/"):
        return _add_image(images, tool_name, resource.blob, mime_type)
    return f"[resource {resource.uri}: {mime_type}, {_size(resource.blob)}, not shown]"


def _size(data: str) -> str:
    """The decoded size of base64 ``data``, without decoding it."""
    count = len(data) * 3 // 4 - data[-2:].count("=")
    if count < 1024:
        return f"{count} bytes"
    return f"{count / 1024:.0f} KB"
