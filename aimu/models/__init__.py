"""Model clients: the stream vocabulary, the client interface, ``client()`` and the
response cache."""

from aimu.models.base import (
    ModelClient,
    ModelEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    TurnEnd,
    Usage,
)
from aimu.models.cache import CachedClient, CacheWarning, ResponseCache
from aimu.models.chunks import Phase, StreamChunk
from aimu.models.errors import (
    AuthenticationError,
    ContextOverflowError,
    MissingCredentialsError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    NoDefaultModelError,
    ProviderNotInstalledError,
    RateLimitError,
    UnknownProviderError,
)
from aimu.models.registry import (
    client,
    default_model,
    providers,
    register_provider,
    set_default_model,
)

__all__ = [
    "AuthenticationError",
    "CacheWarning",
    "CachedClient",
    "ContextOverflowError",
    "MissingCredentialsError",
    "ModelClient",
    "ModelConnectionError",
    "ModelError",
    "ModelEvent",
    "ModelNotFoundError",
    "NoDefaultModelError",
    "Phase",
    "ProviderNotInstalledError",
    "RateLimitError",
    "ResponseCache",
    "StreamChunk",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallRequest",
    "TurnEnd",
    "UnknownProviderError",
    "Usage",
    "client",
    "default_model",
    "providers",
    "register_provider",
    "set_default_model",
]
