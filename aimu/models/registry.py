"""``aimu.client("provider:model", **options)``: build a model client from a short name."""

from __future__ import annotations

import importlib
from typing import Any

from aimu.models.base import ModelClient
from aimu.models.errors import UnknownProviderError

# provider name -> "module:factory"; each factory is called as factory(model, **options).
_PROVIDERS: dict[str, str] = {
    "scripted": "aimu.models.providers.scripted:from_spec",
}


def register_provider(name: str, factory: str) -> None:
    """Make ``aimu.client(f"{name}:...")`` call ``factory`` (a ``"module:callable"`` path)."""
    _PROVIDERS[name] = factory


def providers() -> list[str]:
    """The provider names :func:`client` accepts."""
    return sorted(_PROVIDERS)


def client(spec: str | ModelClient, **options: Any) -> ModelClient:
    """Build a :class:`ModelClient` from ``"provider:model"``.

    Everything after the first colon is the model id, passed through unchanged, so ids that
    contain colons (``"ollama:qwen3:8b"``) work. A :class:`ModelClient` is returned as is.
    """
    if isinstance(spec, ModelClient):
        if options:
            raise TypeError("options cannot be applied to an existing ModelClient")
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise TypeError(f"model must be a 'provider:model' string, not {spec!r}")
    provider, _, model = spec.strip().partition(":")
    target = _PROVIDERS.get(provider)
    if target is None:
        raise UnknownProviderError(
            f"unknown model provider {provider!r} in {spec!r}; "
            f"use one of: {', '.join(providers())} (as 'provider:model')"
        )
    module_name, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    return factory(model, **options)
