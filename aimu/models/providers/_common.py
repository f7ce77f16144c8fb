"""What the SDK-backed providers share: lazy SDK imports, credentials, options, error mapping.

Error messages built here never contain a credential: every text that came from a server or
an SDK passes through :func:`redact` with the client's secrets before it is shown, and the
SDK's own exception is not chained (``from None``), because its message may quote the key.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, Generic, TypeVar

from aimu.models.errors import (
    AuthenticationError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ProviderNotInstalledError,
    RateLimitError,
)
from aimu.models.providers._generation import (
    is_unsupported_thinking,
    overflow_error,
    unsupported_thinking,
)

T = TypeVar("T")

_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|context length"
    r"|prompt is too long|too many tokens|exceeds? the (?:model'?s? )?(?:context|maximum)"
    r"|(?:available|the) context size|exceed_context_size",
    re.IGNORECASE,
)


class PerLoop(Generic[T]):
    """One SDK client per event loop.

    An async SDK client keeps a connection pool tied to the loop that opened it; the sync
    ``Agent`` runs each call on a fresh loop, so a client reused across loops would fail with
    "Event loop is closed". Clients of loops that are gone are dropped with them.
    """

    def __init__(self, make: Callable[[], T]):
        self._make = make
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                client = self._clients[loop] = self._make()
            return client


def import_sdk(module: str, extra: str, provider: str) -> ModuleType:
    """Import a provider's SDK, or say which pip command installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderNotInstalledError(
            f"the {provider} provider needs the '{module}' package: "
            f"pip install 'aimu-jupyter[{extra}]'"
        ) from None


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (longer than 3 characters) replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) > 3:
            text = text.replace(secret, "***")
    return text


def env(name: str) -> str | None:
    """The variable's value, or ``None`` when unset or blank."""
    value = os.environ.get(name, "").strip()
    return value or None


def split_request_options(
    options: dict[str, Any], create: Callable[..., Any], reserved: Iterable[str], provider: str
) -> dict[str, Any]:
    """Check that every option is a parameter the SDK's request method accepts.

    Unknown names (usually typos) fail when the client is built, not at the first request.
    ``reserved`` names are set by the provider itself and may not be overridden.
    """
    accepted = set(inspect.signature(create).parameters) - {"self"}
    blocked = set(reserved)
    for name in options:
        if name in blocked:
            raise TypeError(f"{provider}: the option {name!r} is set by aimu and cannot be passed")
        if name not in accepted:
            raise TypeError(
                f"{provider}: unknown option {name!r}; accepted: "
                f"{', '.join(sorted(accepted - blocked))}"
            )
    return dict(options)


def is_context_overflow(message: str) -> bool:
    """Whether a provider's error text says the prompt no longer fits the context window."""
    return bool(_OVERFLOW.search(message))


def body_message(body: Any) -> str:
    """The human-readable message inside an HTTP error body, as far as one can be found."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(inner, str):
            return inner
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str):
        return body
    return "" if body is None else str(body)


def root_cause(exc: BaseException) -> str:
    """The innermost cause's message (``[Errno 111] Connection refused`` and the like)."""
    seen = exc
    while seen.__cause__ is not None or seen.__context__ is not None:
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
    return str(seen) or type(seen).__name__


def stainless_error(
    exc: BaseException,
    sdk: ModuleType,
    *,
    label: str,
    model: str,
    endpoint: str,
    key_hint: str,
    secrets: Iterable[str | None],
) -> BaseException:
    """Translate an ``openai`` / ``anthropic`` SDK exception (same generator) into ours.

    ``label`` names the other side ("OpenAI", "the server at http://..."), ``key_hint`` says
    how to supply a key. Anything that is not an SDK error is returned unchanged.
    """
    secrets = list(secrets)
    if isinstance(exc, json.JSONDecodeError):
        return ModelError(f"{label} sent a stream event that is not JSON ({exc.msg})")
    if type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2"):
        cause = redact(root_cause(exc), secrets)
        return ModelConnectionError(f"the connection to {label} broke mid-answer: {cause}")
    if isinstance(exc, sdk.APITimeoutError):
        return ModelConnectionError(f"{label} did not answer in time ({endpoint}); try again")
    if isinstance(exc, sdk.APIConnectionError):
        cause = redact(root_cause(exc), secrets)
        return ModelConnectionError(
            f"could not reach {label} at {endpoint}: {cause}. Is the server running and the "
            "base URL right?"
        )
    if not isinstance(exc, sdk.APIStatusError):
        if not isinstance(exc, sdk.APIError):
            return exc
        detail = redact(body_message(exc.body) or str(exc), secrets)
        if is_context_overflow(detail):
            return overflow_error(model, detail, body=exc.body)
        return ModelError(f"{label} reported an error while answering: {detail}")
    status = exc.status_code
    detail = redact(body_message(exc.body), secrets).strip()
    said = f": {detail}" if detail else ""
    if status < 400:  # an error event inside a stream that had started fine
        if is_context_overflow(detail):
            return overflow_error(model, detail, body=exc.body)
        return ModelError(f"{label} reported an error while answering{said}")
    if status in (401, 403):
        return AuthenticationError(f"{label} refused the credentials (HTTP {status}); {key_hint}")
    if status == 404:
        return ModelNotFoundError(
            f"{label} does not know the model {model!r} or the endpoint (HTTP 404){said}"
        )
    if status == 429:
        return RateLimitError(
            f"{label} is rate-limiting requests (HTTP 429) and the retries ran out{said}; "
            "wait a little and run again, or use max_retries= to retry longer"
        )
    if status in (400, 413, 422) and is_context_overflow(detail):
        return overflow_error(model, detail, body=exc.body)
    if status in (400, 422) and is_unsupported_thinking(detail):
        return unsupported_thinking(label, model, detail)
    if status >= 500:
        return ModelError(f"{label} failed (HTTP {status}) and the retries ran out{said}")
    return ModelError(f"{label} rejected the request (HTTP {status}){said}")
