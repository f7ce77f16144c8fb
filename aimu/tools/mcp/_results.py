"""Turn an MCP ``CallToolResult`` into the :class:`MCPResult` a model reads.

Text blocks are joined; structured content is added as JSON unless the text already says the
same (a server built with the official SDK sends a ``-> str`` result both ways, as text and as
``{"result": ...}``); images are kept as :class:`Image` (for the notebook) and named in the
text (for the model); audio and binary resources are described, never dumped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import mcp_types

from aimu.tools.results import Image, ToolResult


class MCPResult(str, ToolResult):
    """What an MCP tool answered: its text, as a ``str``, carrying ``images`` and ``is_error``.

    The text is what a model reads: the text blocks, structured content as JSON when the text
    does not already say it, images named (``[image 1: image/png, 70 bytes]``), with the
    client's secrets redacted. ``is_error`` flags a failure on the server (the text then
    carries the server's message). Being a ``str`` it is what the reference's ``as_tools()``
    functions return; being a :class:`ToolResult` it keeps the images and the error flag when
    the agent dispatches it. ``content`` holds the content blocks as the server sent them, for
    your own code (not redacted).
    """

    content: tuple[Any, ...]

    def __new__(cls, text: str, *_: Any, **__: Any) -> MCPResult:
        return str.__new__(cls, text)

    def __init__(
        self,
        text: str,
        images: Iterable[Image] = (),
        is_error: bool = False,
        content: Iterable[Any] = (),
    ) -> None:
        ToolResult.__init__(self, str(text), tuple(images), bool(is_error))
        object.__setattr__(self, "content", tuple(content))

    @classmethod
    def error(cls, text: str) -> MCPResult:
        return cls(text, is_error=True)


def to_tool_result(tool_name: str, result: mcp_types.CallToolResult) -> MCPResult:
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
    structured = _structured(result)
    if structured is not _NOTHING and not _already_said(parts, structured):
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    text = "\n".join(parts)
    if not text:
        text = f"Tool '{tool_name}' failed without a message." if result.is_error else "(no output)"
    return MCPResult(text, images, bool(result.is_error), result.content)


_NOTHING = object()


def _structured(result: mcp_types.CallToolResult) -> Any:
    """The structured content, unwrapped when FastMCP wrapped a bare value in ``result``."""
    value = result.structured_content
    if value is None:
        return _NOTHING
    fastmcp_meta = (result.meta or {}).get("fastmcp")
    if isinstance(fastmcp_meta, dict) and fastmcp_meta.get("wrap_result") and "result" in value:
        return value["result"]
    return value


def _already_said(parts: list[str], structured: Any) -> bool:
    """Whether the text blocks already carry ``structured``, or the bare value the official
    SDK wraps as ``{"result": value}`` (a list of values comes one text block per item)."""
    candidates = [structured]
    if isinstance(structured, dict) and list(structured) == ["result"]:
        candidates.append(structured["result"])
    for value in candidates:
        if any(_same_json(part, value) for part in parts):
            return True
        if (
            isinstance(value, list)
            and len(value) == len(parts) > 0
            and all(_same_json(part, item) for part, item in zip(parts, value, strict=True))
        ):
            return True
    return False


def _same_json(text: str, value: Any) -> bool:
    try:
        return json.loads(text) == value
    except ValueError:
        return text == value


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
