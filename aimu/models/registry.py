"""``aimu.client("provider:model", **options)``: build a model client from a short name.

With no name, :func:`default_model` decides: a model set with :func:`set_default_model`, else
``AIMU_MODEL``, else the embedded ``local`` model when it is installed.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from aimu.models.base import ModelClient
from aimu.models.errors import NoDefaultModelError, UnknownProviderError

# provider name -> "module:factory"; each factory is called as factory(model, **options).
_PROVIDERS: dict[str, str] = {
    "scripted": "aimu.models.providers.scripted:from_spec",
    "acp": "aimu.models.providers.acp:from_spec",
    "openai": "aimu.models.providers.openai:from_spec",
    "anthropic": "aimu.models.providers.anthropic:from_spec",
    "ollama": "aimu.models.providers.ollama:from_spec",
    "local": "aimu.models.providers.local:from_spec",
    "llamacpp": "aimu.models.providers.local:from_spec",
}

_default: str | None = None


def set_default_model(spec: str | None) -> None:
    """Make ``spec`` what :func:`client` builds when called without a model (``None`` resets)."""
    global _default
    if spec is not None and (not isinstance(spec, str) or not spec.strip()):
        raise TypeError(f"the default model must be a 'provider:model' string, not {spec!r}")
    _default = spec.strip() if spec else None


def default_model() -> str:
    """The model :func:`client` uses when given none.

    In order: :func:`set_default_model`, the ``AIMU_MODEL`` variable, then ``"local"`` when
    llama-cpp-python and a model file are installed. Otherwise :class:`NoDefaultModelError`
    says how to choose.
    """
    if _default:
        return _default
    configured = os.environ.get("AIMU_MODEL", "").strip()
    if configured:
        return configured
    from aimu.models.providers.local import is_available

    if is_available():
        return "local"
    raise NoDefaultModelError(
        "no model chosen: pass one, e.g. aimu.client('openai:gpt-4o-mini'), or set AIMU_MODEL "
        "(e.g. AIMU_MODEL=anthropic:claude-sonnet-4-5 or ollama:qwen3:8b), or install the "
        "offline model with: pip install 'aimu-jupyter[local]'"
    )


def register_provider(name: str, factory: str) -> None:
    """Make ``aimu.client(f"{name}:...")`` call ``factory`` (a ``"module:callable"`` path)."""
    _PROVIDERS[name] = factory


def providers() -> list[str]:
    """The provider names :func:`client` accepts."""
    return sorted(_PROVIDERS)


def client(
    spec: str | ModelClient | None = None, *, cache: Any = None, **options: Any
) -> ModelClient:
    """Build a :class:`ModelClient` from ``"provider:model"`` (no name: :func:`default_model`).

    Everything after the first colon is the model id, passed through unchanged, so ids that
    contain colons (``"ollama:qwen3:8b"``) work. A :class:`ModelClient` is returned as is
    (with ``cache`` applied). ``cache`` keeps answers and replays identical requests
    (:mod:`aimu.models.cache`): a file path, ``True`` (``$AIMU_CACHE``, else a per-user
    file), or ``False`` (never); by default answers are cached only when ``$AIMU_CACHE``
    names a file.
    """
    from aimu.models.cache import cached

    if spec is None:
        spec = default_model()
    if isinstance(spec, ModelClient):
        if options:
            raise TypeError("options cannot be applied to an existing ModelClient")
        return cached(spec, cache) if cache is not None else spec
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
    return cached(factory(model, **options), cache)
