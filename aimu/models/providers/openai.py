"""``openai:MODEL``: OpenAI Chat Completions, and every OpenAI-compatible server.

    aimu.client("openai:gpt-4o-mini")                        # OPENAI_API_KEY
    aimu.client("openai:qwen3@http://127.0.0.1:8000/v1")     # a local server, no key needed
    aimu.client("openai:llama-3.3-70b-versatile",
                base_url="https://api.groq.com/openai/v1", api_key_env="GROQ_API_KEY")

The key comes from ``api_key=``, else the variable named by ``api_key_env=``, else
``OPENAI_API_KEY`` when talking to api.openai.com or to the ``OPENAI_BASE_URL`` server. A server
named only by ``base_url=`` (or ``@URL``) is sent no key unless given one, so an OpenAI key
never travels to a third party by accident. ``timeout`` (seconds, default 120) ends a turn
whose stream produces no text, thinking or tool-call output for that long; ``max_retries``
configures the SDK (which retries 429 and 5xx with backoff); every other option is a Chat
Completions parameter (``temperature``, ``max_completion_tokens``, ``reasoning_effort``...). A
``user:password@`` in the URL is sent as basic auth and shown as ``[hidden]@``.
``default_generate_kwargs`` are sampling options under each turn's ``generate_kwargs``; how
thinking and ``response_format`` map is described in :mod:`aimu.models.providers._generation`.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from aimu.models.base import (
    GenerationOptions,
    ModelEvent,
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
from aimu.models.providers._generation import openai_fields, parameters
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
from aimu.models.providers._think import ThinkSplitter
from aimu.secrets import shown_url

OFFICIAL_URL = "https://api.openai.com/v1"
_NO_KEY = "sk-no-key-required"
_RESERVED = ("model", "messages", "stream", "tools")
_RAW = "X-Stainless-Raw-Response"  # "stream": the SDK hands back the response unread


class OpenAIClient(StainlessClient):
    """Streams Chat Completions from OpenAI or an OpenAI-compatible server."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float | None = None,
        default_headers: dict[str, str] | None = None,
        default_generate_kwargs: Mapping[str, Any] | None = None,
        sees_images: bool | None = None,
        **params: Any,
    ):
        self._sdk = import_sdk("openai", "openai", "openai")
        model, _, short_url = model.partition("@")
        if not model:
            raise ValueError(
                "name a model, e.g. 'openai:gpt-4o-mini' or 'openai:MODEL@http://127.0.0.1:8000/v1'"
            )
        if short_url and base_url and short_url != base_url:
            raise ValueError(f"two base URLs given: {short_url!r} in the name and {base_url!r}")
        self._configure(
            model,
            {
                "api_key": api_key,
                "api_key_env": api_key_env,
                "base_url": base_url or short_url or None,
                "max_retries": max_retries,
                "timeout": timeout,
                "default_headers": default_headers,
                "default_generate_kwargs": default_generate_kwargs,
                "sees_images": sees_images,
                **params,
            },
        )
        self._accepted = parameters(_create_method(), _RESERVED)
        self.default_generate_kwargs = default_generate_kwargs
        explicit_url = base_url or short_url or None
        login, official = self._locate(explicit_url, "OPENAI_BASE_URL", OFFICIAL_URL, "OpenAI")
        key, self._key_hint = _resolve_key(api_key, api_key_env, explicit_url, official)
        self._params = split_request_options(params, _create_method(), _RESERVED, "openai")
        self._timeout = stall_timeout(timeout)
        self._connect(
            "AsyncOpenAI",
            {"api_key": key} if key else {},
            login,
            no_key=_NO_KEY,
            max_retries=max_retries,
            timeout=timeout,
            default_headers=default_headers,
        )

    @property
    def name(self) -> str:
        """``openai:MODEL``, with ``@URL`` when the server was named in code."""
        url = self._init["base_url"]
        return f"openai:{self.model}@{shown_url(url)}" if url else f"openai:{self.model}"

    def _check_defaults(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return openai_fields(None, kwargs, self._accepted)

    def identity(self) -> dict[str, Any]:
        """The server and the standing request options; no key, header or timeout."""
        return served_identity(self, self.base_url, answer_params(self._params), self._defaults)

    async def _turn(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        options: GenerationOptions | None,
    ) -> AsyncIterator[ModelEvent]:
        request = {
            **self.request_body(messages, tools, options),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        calls: dict[int, dict[str, Any]] = {}
        usage = Usage()
        finish = "stop"
        splitter = ThinkSplitter()
        client = self._clients.get()
        label = self._label
        stall = Stall(self._timeout, label)
        async with contextlib.AsyncExitStack() as stack:
            response = await stall.wait(stack.enter_async_context(_post(client, request)))
            done = False
            async for kind, data in sse_events(stall.each(response.iter_lines())):
                if done or data == "[DONE]":
                    done = True  # read on to the end, so the connection can be reused
                    continue
                chunk = json_object(data, label)
                if kind == "error" or chunk.get("error"):
                    raise self._stream_error(chunk.get("error", chunk))
                counts = field(chunk, "usage", dict, label)
                if counts:
                    usage = Usage(
                        field(counts, "prompt_tokens", int, label) or 0,
                        field(counts, "completion_tokens", int, label) or 0,
                    )
                choices = objects(chunk, "choices", label)
                if not choices:
                    continue
                choice = choices[0]
                finish = field(choice, "finish_reason", str, label) or finish
                delta = field(choice, "delta", dict, label) or {}
                reasoning = field(delta, "reasoning_content", str, label) or field(
                    delta, "reasoning", str, label
                )
                content = field(delta, "content", str, label)
                for event in stall.events(splitter, reasoning, content):
                    yield event
                fragments = objects(delta, "tool_calls", label)
                if fragments:
                    stall.output()
                    _accumulate(calls, fragments, label)
        for event in splitter.flush():
            yield event
        for slot in sorted(calls.values(), key=lambda s: s["order"]):
            yield ToolCallRequest.from_json(
                slot["id"] or f"call_{uuid.uuid4().hex[:24]}",
                slot["name"],
                "".join(slot["arguments"]),
            )
        yield TurnEnd(usage, finish)

    def request_body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> dict[str, Any]:
        """The Chat Completions request for one turn, unstreamed (a Batch API line's body)."""
        request: dict[str, Any] = {
            "model": self.model,
            "messages": _wire_messages(messages, self.sees_images),
            **self._params,
            **openai_fields(options, self._defaults, self._accepted),
        }
        if tools:
            request["tools"] = tools
        return request

    def response_events(
        self,
        completion: Any,
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> list[ModelEvent]:
        """The turn a ``chat.completion`` object (a Batch API result's body) holds."""
        label = self._label
        try:
            choice = (objects(completion, "choices", label) or [{}])[0]
            message = field(choice, "message", dict, label) or {}
            counts = field(completion, "usage", dict, label) or {}
            usage = Usage(
                field(counts, "prompt_tokens", int, label) or 0,
                field(counts, "completion_tokens", int, label) or 0,
            )
            splitter = ThinkSplitter()
            reasoning = field(message, "reasoning_content", str, label) or field(
                message, "reasoning", str, label
            )
            events: list[ModelEvent] = [ThinkingDelta(reasoning)] if reasoning else []
            events += splitter.feed(field(message, "content", str, label) or "")
            events += splitter.flush()
            for call in objects(message, "tool_calls", label):
                function = field(call, "function", dict, label) or {}
                events.append(
                    ToolCallRequest.from_json(
                        field(call, "id", str, label) or f"call_{uuid.uuid4().hex[:24]}",
                        field(function, "name", str, label) or "",
                        field(function, "arguments", (str, dict), label),
                    )
                )
            events.append(TurnEnd(usage, field(choice, "finish_reason", str, label) or "stop"))
        except (TypeError, AttributeError, KeyError, IndexError) as exc:
            raise malformed(label, exc) from None
        return events


@contextlib.asynccontextmanager
async def _post(client: Any, request: dict[str, Any]) -> AsyncIterator[Any]:
    """POST ``request`` to ``/chat/completions`` as built; yield the unread streaming response.

    The request is already wire-shaped, so it goes through the SDK client's ``post`` (auth,
    retries of 429/5xx, typed errors) but not ``create``, whose typed-dict conversion of every
    argument costs more than the rest of the turn. SDK-level options are taken out as
    ``create`` would: ``extra_body`` merged in, ``extra_headers`` / ``extra_query`` /
    ``timeout`` applied to the request.
    """
    from openai import AsyncStream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    body = dict(request)
    body.update(body.pop("extra_body", None) or {})
    options: dict[str, Any] = {
        "headers": {_RAW: "stream", **(body.pop("extra_headers", None) or {})}
    }
    if "extra_query" in body:
        options["params"] = body.pop("extra_query")
    if "timeout" in body:
        options["timeout"] = body.pop("timeout")
    response = await client.post(
        "/chat/completions",
        body=body,
        options=options,
        cast_to=ChatCompletion,
        stream=True,
        stream_cls=AsyncStream[ChatCompletionChunk],
    )
    try:
        yield response
    finally:
        await response.close()


def _create_method() -> Any:
    from openai.resources.chat.completions import AsyncCompletions

    return AsyncCompletions.create


def _resolve_key(
    api_key: str | None, api_key_env: str | None, explicit_url: str | None, official: bool
) -> tuple[str | None, str]:
    """The key to send (or ``None``) and the hint a 401 should give."""
    chosen = chosen_key(api_key, api_key_env, explicit_url, official)
    if chosen is not None:
        return chosen
    key = env("OPENAI_API_KEY")
    if key is None and official:
        raise MissingCredentialsError(
            "OpenAI needs an API key: set OPENAI_API_KEY (or pass api_key=). For a local "
            "OpenAI-compatible server use 'openai:MODEL@http://HOST:PORT/v1' or base_url=; "
            "to work offline, name no model: the embedded 'local' model runs"
        )
    return key, "set OPENAI_API_KEY to a valid key"


def _wire_messages(messages: list[dict[str, Any]], sees: bool) -> list[dict[str, Any]]:
    """The transcript for Chat Completions. Tool messages take no images there, so the
    images of a batch of tool results follow it in one user message."""
    wire: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for message in prepare(messages, sees):
        if message["role"] != "tool" and pending:
            wire.append(_images_message(pending))
            pending = []
        wire.append(_wire_message(message))
        if message["role"] == "tool":
            pending += [
                {**image, "call": message["tool_call_id"]} for image in message.get("images", ())
            ]
    if pending:
        wire.append(_images_message(pending))
    return wire


def _images_message(images: list[dict[str, Any]]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "The images the tool results above refer to:"}
    ]
    for image in images:
        parts.append(
            {"type": "text", "text": f"{image['description']} (tool call {image['call']})"}
        )
        parts.append(
            {
                "type": "image_url",
                "image_url": {"url": f"data:{image['mime_type']};base64,{image['data']}"},
            }
        )
    return {"role": "user", "content": parts}


def _wire_message(message: dict[str, Any]) -> dict[str, Any]:
    """A transcript message in the fields Chat Completions documents (content never None)."""
    role = message["role"]
    content = message.get("content")
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message["tool_call_id"],
            "content": content or "",
        }
    out: dict[str, Any] = {"role": role, "content": "" if content is None else content}
    if role == "assistant" and message.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["function"]["name"],
                    "arguments": call["function"].get("arguments") or "{}",
                },
            }
            for call in message["tool_calls"]
        ]
    elif role in ("user", "system") and message.get("name"):
        out["name"] = message["name"]
    return out


def _accumulate(calls: dict[int, dict[str, Any]], deltas: list[Any], label: str) -> None:
    """Fold streamed tool-call fragments into complete calls, keyed by their index."""
    for delta in deltas:
        index = field(delta, "index", int, label)
        call_id = field(delta, "id", str, label)
        if index is None:  # some servers omit the index: a new id starts a new call
            known = {slot["id"]: i for i, slot in calls.items()}
            if call_id and call_id not in known:
                index = len(calls)
            else:
                index = known.get(call_id, max(calls, default=0))
        slot = calls.get(index)
        if slot is None:
            slot = calls[index] = {"id": "", "name": "", "arguments": [], "order": len(calls)}
        if call_id:
            slot["id"] = call_id
        function = field(delta, "function", dict, label) or {}
        name = field(function, "name", str, label)
        if name and name != slot["name"]:
            slot["name"] += name
        arguments = field(function, "arguments", (str, dict), label)
        if isinstance(arguments, dict):  # a server that sends the decoded object
            arguments = json.dumps(arguments)
        if arguments:
            slot["arguments"].append(arguments)


def from_spec(model: str = "", **options: Any) -> OpenAIClient:
    """Factory behind ``aimu.client("openai:MODEL", **options)``."""
    return OpenAIClient(model, **options)
