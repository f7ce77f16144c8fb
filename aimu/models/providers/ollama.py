"""``ollama:MODEL``: Ollama's native chat API through the official ``ollama`` SDK.

    aimu.client("ollama:qwen3:8b")                          # OLLAMA_HOST, else localhost:11434
    aimu.client("ollama:qwen3:8b", host="http://gpu-box:11434", think=True, num_ctx=16384)

Everything after ``ollama:`` is the model id, colons included; ``ollama:MODEL@URL`` names the
server too. ``think``, ``keep_alive`` and ``format`` are request fields; ``temperature``,
``num_ctx``, ``seed`` and the other Ollama model options go into ``options``. The SDK does not
retry, so this client retries HTTP 429 and 5xx itself (``max_retries``, exponential backoff
from ``retry_backoff`` seconds) as long as nothing has been streamed yet. ``timeout`` (seconds,
default 120) ends a turn that produces no output for that long, blank keep-alive lines aside;
mind a large model's load time. ``OLLAMA_API_KEY`` (for ollama.com) is read by the SDK.
``default_generate_kwargs`` are sampling options under each turn's ``generate_kwargs``
(``max_tokens`` is Ollama's ``num_predict``); thinking maps to ``think`` and
``response_format`` to ``format`` (see :mod:`aimu.models.providers._generation`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from aimu.models.base import (
    GenerationOptions,
    ModelEvent,
    ToolCallRequest,
    TurnEnd,
    Usage,
)
from aimu.models.errors import (
    AuthenticationError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    RateLimitError,
)
from aimu.models.providers._common import (
    PerLoop,
    body_message,
    env,
    import_sdk,
    is_context_overflow,
    root_cause,
    served_identity,
    split_credentials,
    ssl_context,
)
from aimu.models.providers._configured import ConfiguredClient
from aimu.models.providers._generation import (
    is_unsupported_thinking,
    ollama_fields,
    overflow_error,
    unsupported_thinking,
)
from aimu.models.providers._images import prepare
from aimu.models.providers._stream import Stall, field, json_object, malformed, stall_timeout
from aimu.models.providers._think import ThinkSplitter
from aimu.secrets import redact, secret_values, shown_url

_REQUEST_FIELDS = ("think", "keep_alive", "format", "logprobs", "top_logprobs")
_RETRIED = frozenset({429, 500, 502, 503, 504})


class OllamaClient(ConfiguredClient):
    """Streams chat turns from an Ollama server."""

    provider = "ollama"

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        retry_backoff: float = 0.5,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
        default_generate_kwargs: Mapping[str, Any] | None = None,
        sees_images: bool | None = None,
        **params: Any,
    ):
        sdk = import_sdk("ollama", "ollama", "ollama")
        model, _, short_url = model.partition("@")
        if not model:
            raise ValueError("name a model, e.g. 'ollama:qwen3:8b'")
        given = {url for url in (host, base_url, short_url) if url}
        if len(given) > 1:
            raise ValueError(f"more than one Ollama host given: {', '.join(sorted(given))}")
        self._configure(
            model,
            {
                "host": host or base_url or short_url or None,
                "max_retries": max_retries,
                "retry_backoff": retry_backoff,
                "timeout": timeout,
                "headers": headers,
                "default_generate_kwargs": default_generate_kwargs,
                "sees_images": sees_images,
                **params,
            },
        )
        known = set(sdk.Options.model_fields)
        self._known = frozenset(known)
        self.default_generate_kwargs = default_generate_kwargs
        self._request: dict[str, Any] = {}
        self._options: dict[str, Any] = {}
        for name, value in params.items():
            if name in _REQUEST_FIELDS:
                self._request[name] = value
            elif name in known:
                self._options[name] = value
            else:
                raise TypeError(
                    f"ollama: unknown option {name!r}; accepted: "
                    f"{', '.join(sorted(known | set(_REQUEST_FIELDS)))}"
                )
        from ollama._client import _parse_host

        host, login = split_credentials(self._init["host"] or env("OLLAMA_HOST") or "")
        self.host = _parse_host(host or None)
        self._shown_host = shown_url(self.host)
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self._timeout = stall_timeout(timeout)
        self._secrets = (env("OLLAMA_API_KEY"), *secret_values(headers), *(login or ()))
        self._clients = PerLoop(
            _sdk_client, login=login, host=self.host, timeout=timeout, headers=headers
        )

    @property
    def name(self) -> str:
        """``ollama:MODEL``, with ``@URL`` when the server was named in code."""
        url = self._init["host"]
        return f"ollama:{self.model}@{shown_url(url)}" if url else f"ollama:{self.model}"

    def _check_defaults(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        ollama_fields(None, kwargs, self._known, _REQUEST_FIELDS)
        return kwargs

    def identity(self) -> dict[str, Any]:
        """The server and the standing request options; no key, header or timeout."""
        return served_identity(self, self.host, {**self._request, **self._options}, self._defaults)

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> AsyncIterator[ModelEvent]:
        fields, sampling = ollama_fields(options, self._defaults, self._known, _REQUEST_FIELDS)
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in prepare(messages, self.sees_images)],
            "stream": True,
            **self._request,
            **fields,
        }
        if tools:
            request["tools"] = tools
        if self._options or sampling:
            request["options"] = {**self._options, **sampling}
        usage = Usage()
        stop_reason = "stop"
        calls = 0
        splitter = ThinkSplitter()
        attempt = 0
        started = False
        label = f"the Ollama server at {self._shown_host}"
        stall = Stall(self._timeout, label)
        while True:
            try:
                async with contextlib.AsyncExitStack() as stack:
                    http = self._clients.get()._client
                    opening = http.stream("POST", "/api/chat", json=request)
                    response = await stall.wait(stack.enter_async_context(opening))
                    if response.status_code >= 400:
                        body = await stall.wait(response.aread())
                        raise _Refused(response.status_code, _error_text(body))
                    async for line in stall.each(response.aiter_lines()):
                        if not line.strip():  # a keep-alive, not output
                            continue
                        part = json_object(line, label)
                        if part.get("error"):
                            raise _Refused(-1, _error_text(part["error"]))
                        started = True
                        message = field(part, "message", dict, label) or {}
                        thinking = field(message, "thinking", str, label)
                        content = field(message, "content", str, label)
                        for event in stall.events(splitter, thinking, content):
                            yield event
                        for call in field(message, "tool_calls", list, label) or ():
                            stall.output()
                            function = field(call, "function", dict, label) or {}
                            calls += 1
                            yield ToolCallRequest.from_json(
                                f"call_{uuid.uuid4().hex[:24]}",
                                field(function, "name", str, label) or "",
                                field(function, "arguments", (dict, str), label),
                            )
                        if part.get("done") is True:
                            usage = Usage(
                                field(part, "prompt_eval_count", int, label) or 0,
                                field(part, "eval_count", int, label) or 0,
                            )
                            stop_reason = field(part, "done_reason", str, label) or stop_reason
                break
            except _Refused as exc:
                if started or exc.status not in _RETRIED or attempt >= self.max_retries:
                    failure: BaseException | None = self._refusal(exc.status, exc.detail)
                else:
                    failure = None
            except ModelError:
                raise
            except (TypeError, AttributeError, KeyError, IndexError) as exc:
                failure = malformed(label, exc)
            except Exception as exc:
                failure = self._error(exc)
            if failure is not None:
                raise failure  # outside the handler: nothing holding a header is chained
            await asyncio.sleep(min(self.retry_backoff * 2**attempt, 8.0))
            attempt += 1
        for event in splitter.flush():
            yield event
        yield TurnEnd(usage, "tool_calls" if calls else stop_reason)

    def _refusal(self, status: int, detail: str) -> ModelError:
        """What an HTTP error status (or ``-1``: an error line in the stream) becomes."""
        detail = redact(detail, self._secrets)
        said = f": {detail}" if detail else ""
        if status in (401, 403):
            return AuthenticationError(
                f"the Ollama server at {self._shown_host} refused the credentials (HTTP {status}); "
                "set OLLAMA_API_KEY to a valid key"
            )
        if status == 404:
            return ModelNotFoundError(
                f"the Ollama server at {self._shown_host} has no model {self.model!r}{said}; "
                f"run `ollama pull {self.model}`"
            )
        if is_context_overflow(detail):
            return overflow_error(
                self.model,
                detail,
                window=self._options.get("num_ctx"),
                advice="start a new conversation (agent.reset()) or raise num_ctx=",
            )
        if status == 400 and is_unsupported_thinking(detail):
            return unsupported_thinking(
                f"the Ollama server at {self._shown_host}", self.model, detail
            )
        if status == 429:
            return RateLimitError(
                f"the Ollama server at {self._shown_host} is rate-limiting requests (HTTP 429) "
                f"and the retries ran out{said}"
            )
        if status < 0:
            return ModelError(f"Ollama reported an error while answering{said}")
        if status >= 500:
            return ModelError(
                f"the Ollama server at {self._shown_host} failed (HTTP {status}) and the retries "
                f"ran out{said}"
            )
        return ModelError(f"the Ollama server at {self._shown_host} rejected the request{said}")

    def _error(self, exc: Exception) -> BaseException:
        if isinstance(exc, ConnectionError | OSError) or type(exc).__module__.startswith("http"):
            cause = redact(root_cause(exc), self._secrets)
            return ModelConnectionError(
                f"could not talk to Ollama at {self._shown_host} ({cause}); is `ollama serve` "
                "running? Set OLLAMA_HOST or host= if it listens elsewhere"
            )
        return exc


class _Refused(Exception):
    """An HTTP error status or an error line from the server, before it is translated."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


def _error_text(body: Any) -> str:
    """The message in an error body (raw bytes, JSON text, or an already decoded value)."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return body.strip()
    return body_message(body)


def _sdk_client(login: tuple[str, str] | None, **options: Any) -> Any:
    """An ollama ``AsyncClient`` on the process's shared TLS context (``login``: basic auth)."""
    import ollama

    return ollama.AsyncClient(verify=ssl_context(), auth=login, **options)


def _wire_message(message: dict[str, Any]) -> dict[str, Any]:
    """A transcript message as Ollama's chat API takes it (arguments as objects)."""
    role = message["role"]
    out: dict[str, Any] = {"role": role, "content": message.get("content") or ""}
    if role == "tool":
        out["tool_name"] = message.get("name") or ""
        if message.get("images"):
            out["images"] = [image["data"] for image in message["images"]]
    elif role == "assistant" and message.get("tool_calls"):
        out["tool_calls"] = [
            {
                "function": {
                    "name": call["function"]["name"],
                    "arguments": ToolCallRequest.from_json(
                        call["id"], call["function"]["name"], call["function"].get("arguments")
                    ).arguments,
                }
            }
            for call in message["tool_calls"]
        ]
    return out


def from_spec(model: str = "", **options: Any) -> OllamaClient:
    """Factory behind ``aimu.client("ollama:MODEL", **options)``."""
    return OllamaClient(model, **options)
