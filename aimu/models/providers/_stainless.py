"""What the clients on Stainless-generated SDKs (``openai``, ``anthropic``) share: where the
server is and what to call it, the key a user chose, one SDK client per event loop on the
shared TLS context, and the translation of the SDK's errors (and of an error event inside a
stream) into :class:`~aimu.models.errors.ModelError`.

The two SDKs come from one generator, so their client classes, options and exceptions have
the same shape; only the module and class names differ.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import AsyncIterator, Iterable
from types import ModuleType
from typing import Any
from urllib.parse import urlparse

from aimu.models.base import GenerationOptions, ModelEvent
from aimu.models.errors import (
    AuthenticationError,
    MissingCredentialsError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    RateLimitError,
)
from aimu.models.providers._common import (
    PerLoop,
    body_message,
    env,
    is_context_overflow,
    retry_after,
    root_cause,
    split_credentials,
    ssl_context,
)
from aimu.models.providers._configured import ConfiguredClient
from aimu.models.providers._generation import (
    is_unsupported_thinking,
    overflow_error,
    unsupported_thinking,
)
from aimu.models.providers._stream import translated
from aimu.secrets import redact, shown_url


class StainlessClient(ConfiguredClient):
    """A provider client talking through an official Stainless-generated SDK.

    Subclasses set ``_sdk`` (the SDK module) and call :meth:`_locate` and :meth:`_connect`
    from their constructor; ``sdk_client`` / ``sdk_error`` serve callers beyond a streamed
    turn (the batch backends' files and batches endpoints).
    """

    _sdk: ModuleType
    _clients: PerLoop
    _label: str
    _key_hint: str
    _secrets: tuple[str | None, ...]
    base_url: str

    def _locate(
        self, explicit: str | None, variable: str, official_url: str, official_name: str
    ) -> tuple[tuple[str, str] | None, bool]:
        """Set ``base_url`` and the label errors use; return the URL's login and whether
        it is the provider's own endpoint."""
        self.base_url, login = split_credentials(
            (explicit or env(variable) or official_url).rstrip("/")
        )
        official = urlparse(self.base_url).hostname == urlparse(official_url).hostname
        self._label = official_name if official else f"the server at {shown_url(self.base_url)}"
        return login, official

    def _connect(
        self,
        client_class: str,
        credentials: dict[str, str],
        login: tuple[str, str] | None,
        *,
        no_key: str,
        max_retries: int,
        timeout: float | None,
        default_headers: dict[str, str] | None,
    ) -> None:
        """Keep the secrets errors must not show, and the per-loop SDK clients (which send
        ``no_key`` when no credential was found: the SDKs insist on one)."""
        self._secrets = (*credentials.values(), *(login or ()))
        options: dict[str, Any] = {"max_retries": max_retries, "base_url": self.base_url}
        if timeout is not None:
            options["timeout"] = timeout
        if default_headers:
            options["default_headers"] = default_headers
        self._clients = PerLoop(
            _sdk_client,
            sdk=self._sdk.__name__,
            client_class=client_class,
            login=login,
            **(credentials or {"api_key": no_key}),
            **options,
        )

    def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> AsyncIterator[ModelEvent]:
        return translated(self._turn(messages, tools, options), self._label, self._error)

    def _turn(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        options: GenerationOptions | None,
    ) -> AsyncIterator[ModelEvent]:
        """One turn's events, read from the SDK; its errors are translated by :meth:`stream`."""
        raise NotImplementedError

    def sdk_client(self) -> Any:
        """The SDK's async client for the running event loop."""
        return self._clients.get()

    def sdk_error(self, exc: Exception) -> BaseException:
        """The :class:`ModelError` an SDK exception means (secrets taken out)."""
        return self._error(exc)

    def _stream_error(self, error: Any) -> ModelError:
        """An error event inside a stream that had started fine."""
        detail = redact(body_message(error) or json.dumps(error), self._secrets)
        if is_context_overflow(detail):
            return overflow_error(self.model, detail, body=error)
        return ModelError(f"{self._label} reported an error while answering: {detail}")

    def _error(self, exc: Exception) -> BaseException:
        return _translate(
            exc,
            self._sdk,
            label=self._label,
            model=self.model,
            endpoint=shown_url(self.base_url),
            key_hint=self._key_hint,
            secrets=self._secrets,
        )


def chosen_key(
    api_key: str | None, api_key_env: str | None, explicit_url: str | None, official: bool
) -> tuple[str | None, str] | None:
    """The key the user chose (``None``: a named third-party server, sent no key) and the
    hint a 401 should give; ``None`` when the provider's own variables decide."""
    if api_key:
        return api_key, "check the api_key= you passed"
    if api_key_env:
        key = env(api_key_env)
        if key is None:
            raise MissingCredentialsError(f"{api_key_env} is not set; set it to your API key")
        return key, f"set {api_key_env} to a valid key"
    if explicit_url and not official:
        return None, "pass the server's key as api_key= or name its variable with api_key_env="
    return None


def _sdk_client(sdk: str, client_class: str, login: tuple[str, str] | None, **options: Any) -> Any:
    """An SDK async client on the process's shared TLS context (``login``: basic auth)."""
    module = importlib.import_module(sdk)
    http_client = module.DefaultAsyncHttpxClient(verify=ssl_context(), auth=login)
    return getattr(module, client_class)(http_client=http_client, **options)


def _translate(
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
        where = "" if endpoint in label else f" at {endpoint}"
        return ModelConnectionError(
            f"could not reach {label}{where}: {cause}. Is the server running and the "
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
            "wait a little and run again, or use max_retries= to retry longer",
            retry_after=retry_after(exc.response.headers),
        )
    if status in (400, 413, 422) and is_context_overflow(detail):
        return overflow_error(model, detail, body=exc.body)
    if status in (400, 422) and is_unsupported_thinking(detail):
        return unsupported_thinking(label, model, detail)
    if status >= 500:
        return ModelError(f"{label} failed (HTTP {status}) and the retries ran out{said}")
    return ModelError(f"{label} rejected the request (HTTP {status}){said}")
