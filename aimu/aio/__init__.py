"""The async surface, mirroring the sync one: ``Agent``, ``client``, ``MCPClient``, tools.

``aimu.aio.Agent`` shares the loop of :class:`aimu.agents.Agent`; it only drives it with
``await`` instead of an event loop of its own, which is what a Jupyter cell (already inside
a running loop) or an async web app needs. Model clients are async already, so
``aimu.aio.client`` is :func:`aimu.client`. ``aimu.aio.tools.builtin`` holds the built-in
tools and factories (the agent runs sync and async tools alike).
"""

from __future__ import annotations

from typing import Any

from aimu.aio.agent import Agent
from aimu.models.registry import client


def __getattr__(name: str) -> Any:
    if name == "batch":
        from aimu.batch import abatch

        return abatch
    if name == "MCPClient":
        from aimu.tools.mcp import AsyncMCPClient

        return AsyncMCPClient
    if name == "tools":
        import importlib

        return importlib.import_module("aimu.aio.tools")
    raise AttributeError(f"module 'aimu.aio' has no attribute {name!r}")


__all__ = ["Agent", "MCPClient", "batch", "client", "tools"]
