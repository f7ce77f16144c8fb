"""What the SDK-backed providers share: SDK imports and clients, credentials, error mapping.

Error messages built here never contain a credential: every text that came from a server or
an SDK passes through :func:`aimu.secrets.redact` with the client's secrets before it is
shown, and the SDK's own exception is not chained (``from None``), because its message may
quote the key.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import importlib
import inspect
import os
import re
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any, Generic, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from aimu.models.base import ModelClient
from aimu.models.errors import (
    ProviderNotInstalledError,
)

T = TypeVar("T")

_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|context length"
    r"|prompt is too long|too many tokens|exceeds? the (?:model'?s? )?(?:context|maximum)"
    r"|(?:available|the) context size|exceed_context_size",
    re.IGNORECASE,
)


class PerLoop(Generic[T]):
    """The SDK client for the running event loop, shared by every caller with the same settings.

    An async SDK client keeps a connection pool tied to the loop that opened it, so there is
    one per loop; within a loop, model clients built with the same settings (a new
    ``aimu.client(...)`` per run, clones for sub-agents) share one, and with it its keep-alive
    connections. The sync driver keeps one loop per thread (:mod:`aimu._sync`), which closes
    these clients before it closes the loop.
    """

    def __init__(self, make: Callable[..., T], **settings: Any):
        self._make = make
        self._settings = settings
        self._key = (make, _freeze(settings))

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        shared = _shared.get(loop)
        client = shared.get(self._key) if shared is not None else None
        if client is None:
            client = self._new(loop)
        return client

    def _new(self, loop: asyncio.AbstractEventLoop) -> T:
        with _shared_lock:
            for old in [old for old in _shared if old.is_closed()]:
                del _shared[old]
            shared = _shared.get(loop)
            if shared is None:
                shared = _shared[loop] = {}
                from aimu._sync import at_close

                at_close(loop, lambda: _close_clients(shared))
            client = shared.get(self._key)
            if client is None:
                client = shared[self._key] = self._make(**self._settings)
            return client


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]] = (
    weakref.WeakKeyDictionary()
)
_shared_lock = threading.Lock()


async def _close_clients(clients: dict[Any, Any]) -> None:
    for client in list(clients.values()):
        await client.close()
    clients.clear()


def _freeze(value: Any) -> Any:
    """A hashable stand-in for settings made of dicts, lists and scalars."""
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return id(value)
    return value


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every SDK client of the process.

    Building one loads the CA bundle (tens of milliseconds); each SDK client would otherwise
    build its own. It honours ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` as httpx does.
    """
    import httpx

    return httpx.create_ssl_context()


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@`` part, and that pair (``None`` when it has none).

    The pair is sent as HTTP basic auth, as it would have been from the URL; keeping it out of
    the URL keeps it out of the SDKs' and httpx's request logs and of every message.
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=hostport)), (unquote(user), unquote(password))


def import_sdk(module: str, extra: str, provider: str) -> ModuleType:
    """Import a provider's SDK, or say which pip command installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderNotInstalledError(
            f"the {provider} provider needs the '{module}' package: "
            f"pip install 'aimu-jupyter[{extra}]'"
        ) from None


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


#: Request options that change how a request travels, not what the model answers.
_TRANSPORT_OPTIONS = frozenset({"extra_headers", "timeout"})


def answer_params(params: dict[str, Any]) -> dict[str, Any]:
    """The request options that decide an answer: headers (which may carry credentials)
    and timeouts left out."""
    return {k: v for k, v in params.items() if k not in _TRANSPORT_OPTIONS}


def served_identity(
    client: ModelClient, server: str, params: dict[str, Any], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """What decides a server-backed client's answers (see :meth:`ModelClient.identity`):
    which server, the standing request and sampling options, whether images are sent."""
    return {
        **ModelClient.identity(client),
        "server": server,
        "params": params,
        "defaults": dict(defaults),
        "sees_images": client.sees_images,
    }


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


def retry_after(headers: Any) -> float | None:
    """The seconds a ``Retry-After`` header asks for (a number or an HTTP date), or ``None``."""
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def root_cause(exc: BaseException) -> str:
    """The innermost cause's message (``[Errno 111] Connection refused`` and the like)."""
    seen = exc
    while seen.__cause__ is not None or seen.__context__ is not None:
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
    return str(seen) or type(seen).__name__
