"""Model clients: the stream vocabulary, the client interface and ``client()``."""

from aimu.models.base import (
    ModelClient,
    ModelEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    TurnEnd,
    Usage,
)
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
