"""Tool results: what a call returns, turned into the text a model reads."""

from __future__ import annotations

import base64
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Image:
    """An image a tool produced. ``data`` is base64 text; ``description`` is for the model."""

    data: str
    mime_type: str = "image/png"
    description: str = ""

    @classmethod
    def from_bytes(cls, raw: bytes, mime_type: str = "image/png", description: str = "") -> Image:
        return cls(base64.b64encode(raw).decode("ascii"), mime_type, description)

    def to_json(self) -> dict[str, str]:
        return {"data": self.data, "mime_type": self.mime_type, "description": self.description}


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer: the text the model reads, images for the notebook, an error flag."""

    text: str
    images: tuple[Image, ...] = field(default_factory=tuple)
    is_error: bool = False

    @classmethod
    def error(cls, text: str) -> ToolResult:
        return cls(text, is_error=True)


def to_result(value: Any) -> ToolResult:
    """Turn whatever a tool returned into a :class:`ToolResult`."""
    kind = type(value)
    if kind is str:
        return ToolResult(value)
    if kind is int or kind is float:
        return ToolResult(repr(value))
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value)
    if value is None:
        return ToolResult("(no output)")
    if isinstance(value, Image):
        return ToolResult(f"[image: {value.description or value.mime_type}]", (value,))
    if isinstance(value, bytes | bytearray):
        return ToolResult(f"({len(value)} bytes of binary data)")
    if hasattr(value, "model_dump_json"):
        return ToolResult(value.model_dump_json())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict | list | tuple | int | float | bool):
        return ToolResult(json.dumps(value, ensure_ascii=False, default=str))
    return ToolResult(str(value))
