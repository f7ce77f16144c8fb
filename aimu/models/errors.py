"""Errors raised by model clients. Each docstring says when; each message says what to do."""

from __future__ import annotations


class ModelError(RuntimeError):
    """A model call failed in a way the run cannot continue from."""


class ProviderNotInstalledError(ModelError, ImportError):
    """The provider's SDK is not installed; the message names the pip command."""


class MissingCredentialsError(ModelError):
    """No API key was found for a provider's own endpoint; the message names the variable."""


class AuthenticationError(ModelError):
    """The provider refused the credentials (HTTP 401/403)."""


class ContextOverflowError(ModelError):
    """The conversation no longer fits the model's context window.

    ``window`` is the window's size in tokens when the provider said it, else ``None``.
    """

    def __init__(self, message: str, window: int | None = None):
        super().__init__(message)
        self.window = window


class UnsupportedOptionError(ModelError, ValueError):
    """A generation option the provider or model cannot honour (thinking on a model that
    cannot think, an unknown sampling option); the message names the provider and what works."""


class UnknownProviderError(ModelError, ValueError):
    """``aimu.client()`` was given a provider name it does not know."""


class ModelNotFoundError(ModelError):
    """The provider does not know the model id, or a model file does not exist."""


class RateLimitError(ModelError):
    """The provider kept answering HTTP 429 until the retries ran out.

    ``retry_after`` is the wait in seconds the server asked for (``Retry-After``), if it did.
    """

    def __init__(self, message: str = "", retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after

    def __reduce__(self) -> tuple:
        return type(self), (str(self), self.retry_after)


class ModelConnectionError(ModelError):
    """The endpoint could not be reached (refused, unresolvable, timed out) or hung up."""


class NoDefaultModelError(ModelError):
    """``aimu.client()`` was called without a model and none is configured or installed."""
