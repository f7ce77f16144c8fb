"""How each provider honours :class:`~aimu.models.base.GenerationOptions` on the wire.

One function per provider turns the options (over the client's ``default_generate_kwargs``)
into the request fields that provider documents; the provider modules only splice the result
into their request. Decisions, spelled out once:

- ``thinking``: OpenAI ``reasoning_effort`` (``True`` is ``"medium"``, ``False`` is
  ``"none"``; a server that refuses it answers 400, raised as :class:`UnsupportedOptionError`);
  Anthropic extended thinking with a token budget per level (``max_tokens`` is raised by the
  budget, so the answer keeps its own allowance; ``False`` sends ``{"type": "disabled"}``);
  Ollama ``think`` (levels passed as they are, which gpt-oss understands; a model that cannot
  think answers 400, raised the same way); ``local`` refuses it.
- ``generate_kwargs``: the provider's own parameter names, plus the common spellings
  ``max_tokens`` and ``stop`` where the provider calls them otherwise. Anything else is an
  :class:`UnsupportedOptionError` naming the provider and the accepted names. The Anthropic
  SDK takes no ``temperature`` / ``top_p`` / ``top_k`` (current Claude models fix sampling),
  so those are unknown there.
- ``response_format``: OpenAI ``json_schema`` (strict when the schema allows it); Anthropic a
  forced answer tool whose input is the answer; Ollama ``format``. With tools in the same
  turn, OpenAI and Ollama send both (the model calls a tool or answers in the schema);
  Anthropic requires a tool call (``tool_choice: any``), the answer tool being one of them.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aimu.models.base import NO_OPTIONS, GenerationOptions
from aimu.models.errors import ContextOverflowError, UnsupportedOptionError

#: Anthropic thinking budgets (tokens) per level.
ANTHROPIC_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576}
ANSWER_TOOL_DESCRIPTION = (
    "Give your final answer by calling this tool: its arguments are the answer. Call it once "
    "you have everything you need."
)

_UNSUPPORTED = re.compile(
    r"not supported|unsupported|does not support|unrecognized|not available|extra inputs"
    r"|not permitted|unknown (?:field|parameter)",
    re.IGNORECASE,
)
_THINKING_WORD = re.compile(r"reasoning|thinking|\bthink\b", re.IGNORECASE)
_WINDOW = (
    re.compile(r"maximum context length is (\d[\d,]*)", re.IGNORECASE),
    re.compile(r"\d[\d,]* tokens? > (\d[\d,]*)(?: tokens?)? maximum", re.IGNORECASE),
    re.compile(r"context (?:window|length|size) (?:of|is) (\d[\d,]*)", re.IGNORECASE),
)


def parameters(method: Callable[..., Any], reserved: Iterable[str]) -> frozenset[str]:
    """The keyword parameters an SDK request method takes, less those aimu sets itself."""
    return frozenset(inspect.signature(method).parameters) - {"self", *reserved}


def check_kwargs(
    provider: str, kwargs: Mapping[str, Any], accepted: Iterable[str]
) -> dict[str, Any]:
    """``kwargs`` as a dict, or an :class:`UnsupportedOptionError` for a name not accepted."""
    names = set(accepted)
    for name in kwargs:
        if name not in names:
            raise UnsupportedOptionError(
                f"{provider}: unknown generation option {name!r}; accepted: "
                f"{', '.join(sorted(names))}"
            )
    return dict(kwargs)


def _sampling(
    provider: str,
    defaults: Mapping[str, Any],
    options: GenerationOptions,
    accepted: Iterable[str],
    aliases: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Defaults under the turn's kwargs, renamed to the provider's names and checked."""
    aliases = aliases or {}
    accepted = set(accepted)
    out: dict[str, Any] = {}
    for name, value in {**defaults, **options.generate_kwargs}.items():
        out[aliases.get(name, name)] = value
    return check_kwargs(provider, out, accepted | set(aliases))


def openai_fields(
    options: GenerationOptions | None, defaults: Mapping[str, Any], accepted: Iterable[str]
) -> dict[str, Any]:
    """Chat Completions fields for ``options``."""
    options = options or NO_OPTIONS
    fields = _sampling("openai", defaults, options, accepted)
    if options.thinking is not None:
        fields["reasoning_effort"] = options.thinking_level or "none"
    if options.response_format:
        schema = options.response_format["schema"]
        fields["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": _tool_name(options.response_format["name"]),
                "schema": schema,
                "strict": is_strict(schema),
            },
        }
    return fields


def anthropic_fields(
    options: GenerationOptions | None,
    defaults: Mapping[str, Any],
    accepted: Iterable[str],
    tools: list[dict[str, Any]],
) -> tuple[dict[str, Any], str | None]:
    """Messages API fields for ``options``, and the answer tool's name when one is forced.

    ``tools`` are the turn's wire tools; the answer tool is appended to the returned
    ``tools`` field when ``response_format`` is set.
    """
    options = options or NO_OPTIONS
    fields = _sampling("anthropic", defaults, options, accepted, {"stop": "stop_sequences"})
    if isinstance(fields.get("stop_sequences"), str):
        fields["stop_sequences"] = [fields["stop_sequences"]]
    level = options.thinking_level
    if level:
        budget = ANTHROPIC_BUDGETS[level]
        fields["thinking"] = {"type": "enabled", "budget_tokens": budget}
        fields["max_tokens"] = int(fields.get("max_tokens") or 0) + budget
    elif options.thinking is False:
        fields["thinking"] = {"type": "disabled"}
    answer_tool = None
    if options.response_format:
        if level:
            raise UnsupportedOptionError(
                "anthropic: a response_format is answered through a forced tool call, which the "
                "API refuses while extended thinking is on; turn thinking off for this run"
            )
        taken = {tool["name"] for tool in tools}
        answer_tool = _tool_name(options.response_format["name"])
        if answer_tool in taken:
            answer_tool = _tool_name(f"answer_{answer_tool}")
        fields["tools"] = [
            *tools,
            {
                "name": answer_tool,
                "description": ANSWER_TOOL_DESCRIPTION,
                "input_schema": options.response_format["schema"],
            },
        ]
        fields["tool_choice"] = {"type": "any"} if tools else {"type": "tool", "name": answer_tool}
    return fields, answer_tool


def ollama_fields(
    options: GenerationOptions | None,
    defaults: Mapping[str, Any],
    model_options: Iterable[str],
    request_fields: Iterable[str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(request fields, model options)`` for Ollama's chat API."""
    options = options or NO_OPTIONS
    request_fields = set(request_fields)
    merged = _sampling(
        "ollama",
        defaults,
        options,
        set(model_options) | request_fields,
        {"max_tokens": "num_predict"},
    )
    request = {k: v for k, v in merged.items() if k in request_fields}
    sampling = {k: v for k, v in merged.items() if k not in request_fields}
    if options.thinking is not None:
        request["think"] = options.thinking_level or False
    if options.response_format:
        request["format"] = options.response_format["schema"]
    return request, sampling


def local_fields(
    options: GenerationOptions | None, defaults: Mapping[str, Any], accepted: Iterable[str]
) -> dict[str, Any]:
    """``create_chat_completion`` options; thinking is refused (the models shipped cannot)."""
    options = options or NO_OPTIONS
    if options.thinking:
        raise UnsupportedOptionError(
            "local: this embedded model cannot think (it has no reasoning mode); run without "
            "thinking, or choose a reasoning model, e.g. ollama:qwen3:8b or openai:o4-mini"
        )
    return _sampling("local", defaults, options, accepted)


def is_strict(schema: Any) -> bool:
    """Whether OpenAI's strict mode accepts ``schema``: every object closed, every key required."""
    if isinstance(schema, list):
        return all(is_strict(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    properties = schema.get("properties")
    if schema.get("type") == "object" or properties is not None:
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != set(properties or {}):
            return False
    return all(is_strict(value) for key, value in schema.items() if key != "required")


def _tool_name(name: str) -> str:
    """``name`` with only the characters tool and schema names may hold, at most 64 of them."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "answer"


def is_unsupported_thinking(detail: str) -> bool:
    """Whether a server's 400 says the reasoning/thinking control is not supported."""
    return bool(_THINKING_WORD.search(detail) and _UNSUPPORTED.search(detail))


def unsupported_thinking(label: str, model: str, detail: str) -> UnsupportedOptionError:
    return UnsupportedOptionError(
        f"{label} says {model!r} cannot think as asked: {detail}; run without thinking= or "
        "choose a reasoning model"
    )


def context_window(detail: str, body: Any = None) -> int | None:
    """The window size an overflow answer names (llama.cpp puts ``n_ctx`` in the body)."""
    inner = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(inner, dict) and isinstance(inner.get("n_ctx"), int):
        return inner["n_ctx"]
    for pattern in _WINDOW:
        found = pattern.search(detail)
        if found:
            return int(found.group(1).replace(",", ""))
    return None


def overflow_error(
    model: str,
    detail: str,
    *,
    body: Any = None,
    window: int | None = None,
    advice: str = "start a new conversation (agent.reset()) or shorten the input",
) -> ContextOverflowError:
    """The :class:`ContextOverflowError` for a provider's "context too long" answer."""
    window = context_window(detail, body) or window
    size = f" of {window} tokens" if window else ""
    said = f": {detail}" if detail else ""
    return ContextOverflowError(
        f"the conversation no longer fits {model!r}'s context window{size}{said}; {advice}",
        window=window,
    )
