"""``coerce_tool_arguments``: check and lax-coerce the arguments a model supplied."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aimu.tools._types import Mismatch
from aimu.tools.errors import ToolArgumentError


def coerce_tool_arguments(fn: Callable, arguments: dict[str, Any]) -> dict[str, Any]:
    """Validate ``arguments`` against ``fn``'s declared types and coerce them.

    Returns a new dict (``"5"`` -> ``5`` for an ``int``, ``"true"`` -> ``True`` for a
    ``bool``, a JSON string -> a dict for a ``dict`` or model parameter). Raises
    :class:`ToolArgumentError` naming the tool and listing every problem: unknown arguments,
    missing required ones, and values that cannot be coerced, with the expected type.

    Callables that ``@tool`` did not build (MCP wrappers, for instance) carry no parameter
    description; their arguments are returned unchanged for the server to validate.
    """
    spec = getattr(fn, "__tool_params__", None)
    if spec is None:
        return dict(arguments)
    if not isinstance(arguments, dict):
        raise ToolArgumentError(
            f"Invalid arguments for tool '{spec.tool_name}': expected a JSON object of named "
            f"arguments, got {type(arguments).__name__}."
        )
    params = spec.params
    coerced: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in arguments.items():
        param = params.get(key)
        if param is None:
            problems.append(
                f"unknown argument '{key}' (the tool takes: {', '.join(params) or 'nothing'})"
            )
            continue
        try:
            coerced[key] = param.adapter.coerce(value)
        except Mismatch as exc:
            detail = f" ({exc.detail})" if exc.detail else ""
            problems.append(f"'{key}': expected {exc.expected}, got {_preview(value)}{detail}")
        except Exception as exc:  # a type's own constructor or validator refused the value
            problems.append(
                f"'{key}': {param.adapter.label} could not be built from {_preview(value)} "
                f"({type(exc).__name__}: {exc})"
            )
    for name, param in params.items():
        if param.required and name not in arguments:
            problems.append(f"missing required argument '{name}' ({param.adapter.label})")
    if problems:
        listing = "\n".join(f"- {p}" for p in problems)
        raise ToolArgumentError(
            f"Invalid arguments for tool '{spec.tool_name}':\n{listing}\n"
            "Correct the arguments and call the tool again."
        )
    return coerced


def _preview(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "…"
