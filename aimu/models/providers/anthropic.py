"""``anthropic:MODEL``: Claude through the Messages API and the official ``anthropic`` SDK.

    aimu.client("anthropic:claude-sonnet-4-5")                      # ANTHROPIC_API_KEY
    aimu.client("anthropic:claude-sonnet-4-5", max_tokens=8000,
                thinking={"type": "enabled", "budget_tokens": 4000})

The transcript is translated at this edge: system messages become the top-level ``system``
prompt, assistant tool calls become ``tool_use`` blocks and tool messages ``tool_result``
blocks carrying the same ids, tool specs become ``input_schema`` tools. Thinking blocks of a
turn that called tools are kept (with their signatures) and sent back with that turn, as the
API requires when extended thinking and tools are combined.

The key comes from ``api_key=``, else the variable named by ``api_key_env=``, else
``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``) for api.anthropic.com or the
``ANTHROPIC_BASE_URL`` server. ``max_tokens`` defaults to 4096; ``timeout`` (seconds, default
120) ends a turn whose stream produces no output for that long (``ping`` events do not count);
``max_retries`` configures the SDK; any other option is a Messages API parameter.
``default_generate_kwargs`` are sampling options under each turn's ``generate_kwargs``. A
``response_format`` is answered through a forced tool whose input is the answer; that input is
streamed back as the answer text (JSON), not as a tool call (see
:mod:`aimu.models.providers._generation`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import Any

from aimu.models.base import (
    GenerationOptions,
    ModelEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    TurnEnd,
    Usage,
)
from aimu.models.errors import MissingCredentialsError
from aimu.models.providers._common import (
    answer_params,
    env,
    import_sdk,
    served_identity,
    split_request_options,
)
from aimu.models.providers._generation import anthropic_fields, parameters
from aimu.models.providers._images import prepare
from aimu.models.providers._sse import sse_events
from aimu.models.providers._stainless import StainlessClient, chosen_key
from aimu.models.providers._stream import (
    Stall,
    field,
    json_object,
    malformed,
    objects,
    stall_timeout,
)

OFFICIAL_URL = "https://api.anthropic.com"
_NO_KEY = "no-key-required"
_RESERVED = ("model", "messages", "stream", "tools", "system")
_KEPT_THINKING = 64
_DATA_URL = re.compile(r"^data:(?P<mime>[\w/+.-]+);base64,(?P<data>.*)$", re.DOTALL)


class AnthropicClient(StainlessClient):
    """Streams Messages API turns from Anthropic (or a server speaking its protocol)."""

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 4096,
        max_retries: int = 2,
        timeout: float | None = None,
        default_headers: dict[str, str] | None = None,
        default_generate_kwargs: Mapping[str, Any] | None = None,
        sees_images: bool | None = None,
        **params: Any,
    ):
        self._sdk = import_sdk("anthropic", "anthropic", "anthropic")
        if not model:
            raise ValueError("name a model, e.g. 'anthropic:claude-sonnet-4-5'")
        self._configure(
            model,
            {
                "api_key": api_key,
                "api_key_env": api_key_env,
                "base_url": base_url,
                "max_tokens": max_tokens,
                "max_retries": max_retries,
                "timeout": timeout,
                "default_headers": default_headers,
                "default_generate_kwargs": default_generate_kwargs,
                "sees_images": sees_images,
                **params,
            },
        )
        from anthropic.resources.messages import AsyncMessages

        self._params = split_request_options(params, AsyncMessages.create, _RESERVED, "anthropic")
        self._params["max_tokens"] = max_tokens
        self._accepted = parameters(AsyncMessages.create, _RESERVED)
        self.default_generate_kwargs = default_generate_kwargs
        login, official = self._locate(base_url, "ANTHROPIC_BASE_URL", OFFICIAL_URL, "Anthropic")
        credentials, self._key_hint = _resolve_credentials(api_key, api_key_env, base_url, official)
        self._timeout = stall_timeout(timeout)
        self._connect(
            "AsyncAnthropic",
            credentials,
            login,
            no_key=_NO_KEY,
            max_retries=max_retries,
            timeout=timeout,
            default_headers=default_headers,
        )
        self._thinking: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    def _check_defaults(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        defaults = {"max_tokens": self._init["max_tokens"], **kwargs}
        anthropic_fields(None, defaults, self._accepted, [])
        return defaults

    def identity(self) -> dict[str, Any]:
        """The server and the standing request options; no key, header or timeout."""
        return served_identity(self, self.base_url, answer_params(self._params), self._defaults)

    async def _turn(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        options: GenerationOptions | None,
    ) -> AsyncIterator[ModelEvent]:
        body, answer_tool = self._request(messages, tools, options)
        request = {**body, "stream": True}
        blocks: dict[int, dict[str, Any]] = {}
        input_tokens = output_tokens = 0
        stop_reason = "end_turn"
        answered = False
        client = self._clients.get()
        label = self._label
        stall = Stall(self._timeout, label)
        async with contextlib.AsyncExitStack() as stack:
            opening = client.messages.with_streaming_response.create(**request)
            response = await stall.wait(stack.enter_async_context(opening))
            async for kind, data in sse_events(stall.each(response.iter_lines())):
                event = json_object(data, label)
                kind = field(event, "type", str, label) or kind
                if kind == "content_block_delta":
                    delta = field(event, "delta", dict, label) or {}
                    block = blocks[event["index"]]
                    part = delta.get("type")
                    if part == "text_delta":
                        text = field(delta, "text", str, label)
                        if text:
                            stall.output()
                            yield TextDelta(text)
                    elif part == "input_json_delta":
                        stall.output()
                        piece = field(delta, "partial_json", str, label) or ""
                        block["json"].append(piece)
                        if piece and _is_answer(block["block"], answer_tool):
                            yield TextDelta(piece)
                    elif part == "thinking_delta":
                        thinking = field(delta, "thinking", str, label)
                        if thinking:
                            stall.output()
                            block["thinking"].append(thinking)
                            yield ThinkingDelta(thinking)
                    elif part == "signature_delta":
                        block["signature"] += field(delta, "signature", str, label) or ""
                elif kind == "content_block_start":
                    blocks[event["index"]] = {
                        "block": field(event, "content_block", dict, label) or {},
                        "json": [],
                        "thinking": [],
                        "signature": "",
                    }
                elif kind == "content_block_stop":
                    block = blocks[event["index"]]["block"]
                    if _is_answer(block, answer_tool):
                        answered = True
                    elif block.get("type") == "tool_use":
                        stall.output()
                        yield ToolCallRequest.from_json(
                            field(block, "id", str, label) or "",
                            field(block, "name", str, label) or "",
                            "".join(blocks[event["index"]]["json"]),
                        )
                elif kind == "message_start":
                    message = field(event, "message", dict, label) or {}
                    usage = field(message, "usage", dict, label) or {}
                    input_tokens = _input_tokens(usage, label)
                    output_tokens = field(usage, "output_tokens", int, label) or 0
                elif kind == "message_delta":
                    delta = field(event, "delta", dict, label) or {}
                    stop_reason = field(delta, "stop_reason", str, label) or stop_reason
                    usage = field(event, "usage", dict, label) or {}
                    output_tokens = field(usage, "output_tokens", int, label) or output_tokens
                    input_tokens = _input_tokens(usage, label) or input_tokens
                elif kind == "error":
                    raise self._stream_error(event.get("error", event))
        self._keep_thinking(blocks)
        if answered and not any(
            b["block"]["type"] == "tool_use" and not _is_answer(b["block"], answer_tool)
            for b in blocks.values()
        ):
            stop_reason = "end_turn"
        yield TurnEnd(Usage(input_tokens, output_tokens), stop_reason)

    def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        options: GenerationOptions | None,
    ) -> tuple[dict[str, Any], str | None]:
        """The Messages API request for one turn (unstreamed), and the forced answer tool's
        name when a response format is asked for."""
        system, wire = self._translate(messages)
        wire_tools = [_wire_tool(spec) for spec in tools or ()]
        fields, answer_tool = anthropic_fields(options, self._defaults, self._accepted, wire_tools)
        request: dict[str, Any] = {"model": self.model, "messages": wire, **self._params, **fields}
        if system:
            request["system"] = system
        if wire_tools and "tools" not in request:
            request["tools"] = wire_tools
        return request, answer_tool

    def request_body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> dict[str, Any]:
        """The Messages API request for one turn, unstreamed (a Message Batch's ``params``)."""
        return self._request(messages, tools, options)[0]

    def response_events(
        self,
        message: Any,
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> list[ModelEvent]:
        """The turn a ``message`` object (a Message Batch result) holds, for a request made
        with ``tools`` and ``options``."""
        label = self._label
        answer_tool = self._request([], tools, options)[1]
        events: list[ModelEvent] = []
        try:
            blocks: dict[int, dict[str, Any]] = {}
            for index, block in enumerate(objects(message, "content", label)):
                kind = field(block, "type", str, label)
                blocks[index] = {"block": block, "json": [], "thinking": [], "signature": ""}
                if kind == "text":
                    events.append(TextDelta(field(block, "text", str, label) or ""))
                elif kind == "thinking":
                    thinking = field(block, "thinking", str, label) or ""
                    blocks[index].update(thinking=[thinking], signature=block.get("signature", ""))
                    events.append(ThinkingDelta(thinking))
                elif kind == "tool_use" and _is_answer(block, answer_tool):
                    events.append(TextDelta(json.dumps(block.get("input") or {})))
                elif kind == "tool_use":
                    events.append(
                        ToolCallRequest.from_json(
                            field(block, "id", str, label) or "",
                            field(block, "name", str, label) or "",
                            block.get("input"),
                        )
                    )
            self._keep_thinking(blocks)
            usage = field(message, "usage", dict, label) or {}
            stop = field(message, "stop_reason", str, label) or "end_turn"
            if answer_tool is not None and not any(isinstance(e, ToolCallRequest) for e in events):
                stop = "end_turn"
            tokens = Usage(
                _input_tokens(usage, label), field(usage, "output_tokens", int, label) or 0
            )
            events.append(TurnEnd(tokens, stop))
        except (TypeError, AttributeError, KeyError, IndexError) as exc:
            raise malformed(label, exc) from None
        return events

    def _keep_thinking(self, blocks: dict[int, dict[str, Any]]) -> None:
        """Remember a tool-calling turn's thinking blocks, keyed by its first tool_use id."""
        ordered = [blocks[i] for i in sorted(blocks)]
        first_call = next(
            (b["block"]["id"] for b in ordered if b["block"]["type"] == "tool_use"), None
        )
        if first_call is None:
            return
        kept = []
        for block in ordered:
            if block["block"]["type"] == "thinking":
                kept.append(
                    {
                        "type": "thinking",
                        "thinking": "".join(block["thinking"]),
                        "signature": block["signature"],
                    }
                )
            elif block["block"]["type"] == "redacted_thinking":
                kept.append({"type": "redacted_thinking", "data": block["block"]["data"]})
        if kept:
            self._thinking[first_call] = kept
            while len(self._thinking) > _KEPT_THINKING:
                self._thinking.popitem(last=False)

    def _translate(self, messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        """Split out the system prompt and turn the rest into Messages API turns."""
        system: list[str] = []
        turns: list[dict[str, Any]] = []

        def add(role: str, blocks: list[dict[str, Any]]) -> None:
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)
            else:
                turns.append({"role": role, "content": blocks})

        for message in prepare(messages, self.sees_images):
            role = message["role"]
            content = message.get("content")
            if role == "system":
                text = _plain_text(content)
                if text:
                    system.append(text)
            elif role == "tool":
                add("user", [_tool_result(message)])
            elif role == "assistant":
                calls = message.get("tool_calls") or []
                blocks = list(self._thinking.get(calls[0]["id"], ())) if calls else []
                text = _plain_text(content)
                if text:
                    blocks.append({"type": "text", "text": text})
                blocks += [_tool_use(call) for call in calls]
                add("assistant", blocks or [{"type": "text", "text": "(no answer)"}])
            else:
                add("user", _user_blocks(content))
        return "\n\n".join(system), turns


def _resolve_credentials(
    api_key: str | None, api_key_env: str | None, base_url: str | None, official: bool
) -> tuple[dict[str, str], str]:
    """The SDK credential arguments and the hint a 401 should give."""
    chosen = chosen_key(api_key, api_key_env, base_url, official)
    if chosen is not None:
        key, hint = chosen
        return ({"api_key": key} if key else {}), hint
    if key := env("ANTHROPIC_API_KEY"):
        return {"api_key": key}, "set ANTHROPIC_API_KEY to a valid key"
    if token := env("ANTHROPIC_AUTH_TOKEN"):
        return {"auth_token": token}, "set ANTHROPIC_AUTH_TOKEN to a valid token"
    if official:
        raise MissingCredentialsError(
            "Anthropic needs an API key: set ANTHROPIC_API_KEY (or pass api_key=)"
        )
    return {}, "set ANTHROPIC_API_KEY to the server's key"


def _input_tokens(usage: dict[str, Any], label: str) -> int:
    """Prompt tokens including the cached ones, which the API counts separately."""
    return sum(
        field(usage, name, int, label) or 0
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


def _wire_tool(spec: dict[str, Any]) -> dict[str, Any]:
    function = spec["function"]
    tool = {
        "name": function["name"],
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if function.get("description"):
        tool["description"] = function["description"]
    return tool


def _is_answer(block: dict[str, Any], answer_tool: str | None) -> bool:
    """Whether a content block is the forced call that carries a structured answer."""
    return (
        answer_tool is not None
        and block.get("type") == "tool_use"
        and (block.get("name") == answer_tool)
    )


def _tool_use(call: dict[str, Any]) -> dict[str, Any]:
    raw = call["function"].get("arguments") or "{}"
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        arguments = {}
    return {
        "type": "tool_use",
        "id": call["id"],
        "name": call["function"]["name"],
        "input": arguments if isinstance(arguments, dict) else {},
    }


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    """A tool message as a ``tool_result`` block; its images become image blocks inside."""
    text = _plain_text(message.get("content")) or "(no output)"
    images = message.get("images") or ()
    content: str | list[dict[str, Any]] = text
    if images:
        content = [{"type": "text", "text": text}] + [
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": image["mime_type"],
                    "data": image["data"],
                },
            }
            for image in images
        ]
    return {"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": content}


def _plain_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    """OpenAI-style user content (a string or parts) as Messages API blocks."""
    if not isinstance(content, list):
        return [{"type": "text", "text": content or "(empty message)"}]
    blocks: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url":
            url = part["image_url"]["url"] if isinstance(part["image_url"], dict) else ""
            found = _DATA_URL.match(url)
            if found:
                source = {"type": "base64", "media_type": found["mime"], "data": found["data"]}
            else:
                source = {"type": "url", "url": url}
            blocks.append({"type": "image", "source": source})
    return blocks or [{"type": "text", "text": "(empty message)"}]


def from_spec(model: str = "", **options: Any) -> AnthropicClient:
    """Factory behind ``aimu.client("anthropic:MODEL", **options)``."""
    return AnthropicClient(model, **options)
