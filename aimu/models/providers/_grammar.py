"""The JSON schema that constrains an embedded model's reply when it may call tools.

A reply is exactly one of::

    {"tool_call": {"name": "<one of the tools>", "arguments": {...that tool's parameters...}}}
    {"answer": "<text>"}

llama.cpp compiles the schema into a grammar, so a small model cannot name a tool that does
not exist, misspell an argument or produce broken JSON: whatever it picks is well-formed and
valid against the tool's own schema. Each tool's ``$defs`` are moved to the root (renamed
``<tool>__<name>``) so that their ``$ref`` pointers still resolve inside the combined schema.
"""

from __future__ import annotations

import copy
from typing import Any

_EMPTY = {"type": "object", "properties": {}, "additionalProperties": False}


def decision_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The "call one of these tools with valid arguments, or answer" schema."""
    definitions: dict[str, Any] = {}
    calls = []
    for spec in tools:
        function = spec["function"]
        name = function["name"]
        parameters = copy.deepcopy(function.get("parameters") or _EMPTY)
        calls.append(
            {
                "type": "object",
                "properties": {
                    "name": {"const": name},
                    "arguments": _hoist(parameters, name, definitions),
                },
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"tool_call": {"anyOf": calls}},
                "required": ["tool_call"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
                "additionalProperties": False,
            },
        ]
    }
    if definitions:
        schema["$defs"] = definitions
    return schema


def _hoist(schema: dict[str, Any], tool: str, definitions: dict[str, Any]) -> dict[str, Any]:
    """Move ``$defs`` / ``definitions`` to ``definitions`` and point the refs at them."""
    local: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        local.update(schema.pop(key, None) or {})
    renamed = {name: f"{tool}__{name}" for name in local}

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out = {key: rewrite(value) for key, value in node.items()}
            ref = out.get("$ref")
            if isinstance(ref, str):
                for prefix in ("#/$defs/", "#/definitions/"):
                    if ref.startswith(prefix) and ref[len(prefix) :] in renamed:
                        out["$ref"] = f"#/$defs/{renamed[ref[len(prefix) :]]}"
            return out
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        return node

    for name, definition in local.items():
        definitions[renamed[name]] = rewrite(definition)
    return rewrite(schema)
