"""Fixtures for the provider tests: wire-format servers on loopback and a clean environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from provider_wire import WireServer

PROVIDER_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_PROFILE",
    "OLLAMA_HOST",
    "OLLAMA_API_KEY",
    "AIMU_MODEL",
    "AIMU_LOCAL_MODEL",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider variable from the machine leaks into a test."""
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as wire:
        yield wire


@pytest.fixture
def closed_port_url() -> str:
    """A loopback URL nothing listens on (a server that was started and closed)."""
    wire = WireServer()
    url = wire.url
    wire.close()
    return url
