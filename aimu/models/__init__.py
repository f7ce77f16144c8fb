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
    ModelError,
    ProviderNotInstalledError,
    UnknownProviderError,
)
from aimu.models.registry import client, providers, register_provider

__all__ = [
    "AuthenticationError",
    "ContextOverflowError",
    "MissingCredentialsError",
    "ModelClient",
    "ModelError",
    "ModelEvent",
    "Phase",
    "ProviderNotInstalledError",
    "StreamChunk",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallRequest",
    "TurnEnd",
    "UnknownProviderError",
    "Usage",
    "client",
    "providers",
    "register_provider",
]
