"""Structured output: ``agent.run(task, schema=Model)`` returns a validated ``Model``.

The schema (a pydantic model, a dataclass or a TypedDict) becomes the JSON Schema sent as the
request's ``response_format``, so providers with native structured output follow it; the
answer is validated here either way. An answer that does not validate is sent back with the
validation error for another try (tools off); after the retries :class:`StructuredOutputError`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from aimu.models.errors import ModelError
from aimu.tools import Adapter, Mismatch, UnsupportedType, adapter_for

#: How many more answers are asked for after the first one fails validation.
RETRIES = 2

_FENCE = "```"


class StructuredOutputError(ModelError):
    """The model's answer still did not match the requested schema after the retries."""


@dataclass(frozen=True)
class OutputSchema:
    """A requested answer type: its JSON Schema, and validation of the model's text."""

    target: Any
    adapter: Adapter
    schema: dict[str, Any]

    @classmethod
    def of(cls, target: Any) -> OutputSchema:
        try:
            adapter = adapter_for(target)
        except UnsupportedType as exc:
            raise TypeError(
                f"schema must be a pydantic model, a dataclass or a TypedDict: {exc}"
            ) from None
        schema = _rooted(adapter.schema)
        if schema.get("type") != "object" and "properties" not in schema:
            raise TypeError(
                f"schema must be a pydantic model, a dataclass or a TypedDict, not {target!r}"
            )
        return cls(target, adapter, schema)

    @property
    def name(self) -> str:
        return re.sub(r"[^A-Za-z0-9_-]", "_", getattr(self.target, "__name__", "answer"))[:64]

    def response_format(self) -> dict[str, Any]:
        return {"name": self.name, "schema": self.schema}

    def parse(self, text: str) -> tuple[Any, str | None]:
        """``(json value, None)`` when ``text`` validates, else ``(None, what is wrong)``."""
        value = _decode(text)
        if value is None:
            return None, "the answer is not a JSON object"
        try:
            self.adapter.coerce(value)
        except Mismatch as exc:
            return None, exc.detail or f"expected {exc.expected}"
        return value, None

    def build(self, value: Any) -> Any:
        """The validated instance for a value :meth:`parse` accepted."""
        return self.adapter.coerce(value)

    def retry_prompt(self, problem: str) -> str:
        return (
            f"Your answer did not match the required {self.name} schema: {problem}. "
            "Reply with only a JSON object that follows this JSON Schema, no other text:\n"
            + json.dumps(self.schema)
        )


def _rooted(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a root ``$ref`` (a self-referencing model, e.g. a tree) replaced by the
    definition it names, so the root is the object providers require."""
    ref = schema.get("$ref")
    defs = schema.get("$defs") or {}
    name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else None
    if name is None or name not in defs:
        return schema
    rest = {key: value for key, value in schema.items() if key != "$ref"}
    return {**defs[name], **rest}


def _decode(text: str) -> Any:
    candidates = [text.strip(), *(block.strip() for block in _fenced_blocks(text))]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _fenced_blocks(text: str) -> list[str]:
    """The bodies of the answer's fenced blocks (```` ``` ```` or ```` ```json ````), found in
    one linear pass: the model writes the text, and a regular expression backtracks
    quadratically on an opening fence followed by a long run of spaces."""
    blocks = []
    start = text.find(_FENCE)
    while start != -1:
        body = start + len(_FENCE)
        if text.startswith("json", body):
            body += len("json")
        end = text.find(_FENCE, body)
        if end == -1:
            break
        blocks.append(text[body:end])
        start = text.find(_FENCE, end + len(_FENCE))
    return blocks
