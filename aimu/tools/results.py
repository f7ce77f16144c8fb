"""Tool results: what a call returns, turned into the text a model reads."""

from __future__ import annotations

import base64
import dataclasses
import json
import mimetypes
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_BUNDLE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")


def sniff_mime_type(raw: bytes) -> str | None:
    """The image type the bytes begin with (PNG, JPEG, GIF, WebP, SVG), or ``None``."""
    for signature, kind in _SIGNATURES:
        if raw.startswith(signature):
            return kind
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    head = raw[:512].lstrip().lower()
    if head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in head):
        return "image/svg+xml"
    return None


@dataclass(frozen=True)
class Image:
    """An image a tool produced. ``data`` is base64 text; ``description`` is for the model."""

    data: str
    mime_type: str = "image/png"
    description: str = ""

    @classmethod
    def from_bytes(cls, raw: bytes, mime_type: str | None = None, description: str = "") -> Image:
        """An image from its encoded bytes; ``mime_type`` is read from the bytes when omitted."""
        if not isinstance(raw, bytes | bytearray | memoryview):
            raise TypeError(f"Image.from_bytes takes bytes, not {type(raw).__name__}")
        raw = bytes(raw)
        kind = mime_type or sniff_mime_type(raw)
        if kind is None:
            raise ValueError(
                "Image.from_bytes: these bytes are not a PNG, JPEG, GIF, WebP or SVG image; "
                "pass mime_type= if they are another kind"
            )
        return cls(base64.b64encode(raw).decode("ascii"), kind, description)

    @classmethod
    def from_file(cls, path: str | os.PathLike, description: str = "") -> Image:
        """An image read from ``path`` (PNG, JPEG, GIF, WebP or SVG, told by its bytes)."""
        raw = Path(path).read_bytes()
        kind = sniff_mime_type(raw) or mimetypes.guess_type(str(path))[0]
        if kind is None or not kind.startswith("image/"):
            raise ValueError(f"Image.from_file: {path} is not a PNG, JPEG, GIF, WebP or SVG image")
        return cls.from_bytes(raw, kind, description or Path(path).name)

    @classmethod
    def from_bundle(cls, bundle: Mapping[str, Any], description: str = "") -> Image | None:
        """The first image in a MIME bundle (PNG, JPEG, GIF, WebP, SVG; bytes or base64
        text), or ``None`` when it holds none."""
        for mime_type in _BUNDLE_TYPES:
            data = bundle.get(mime_type)
            if not data:
                continue
            if mime_type == "image/svg+xml":
                raw = data.encode() if isinstance(data, str) else bytes(data)
                text = base64.b64encode(raw).decode("ascii")
            elif isinstance(data, bytes | bytearray):
                text = base64.b64encode(bytes(data)).decode("ascii")
            elif isinstance(data, str):
                text = "".join(data.split())
            else:
                continue
            return cls(text, mime_type, description or mime_type)
        return None

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
