"""Async twins of the library's blocking entry points.

``aimu.aio.Agent`` shares the loop of :class:`aimu.agents.Agent`; it only drives it with
``await`` instead of an event loop of its own, which is what a Jupyter cell (already inside
a running loop) or an async web app needs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from aimu.agents.loop import AgentCore
from aimu.models.chunks import Phase, StreamChunk


class Agent(AgentCore):
    """The async agent: ``await agent.run(task)`` or ``async for c in agent.stream(task)``."""

    async def run(self, task: str) -> str:
        """Run ``task`` and return the final answer."""
        text = ""
        async for chunk in self.events(task):
            if chunk.phase is Phase.DONE and chunk.agent == self.name:
                text = chunk.content["text"]
        return text

    def stream(self, task: str) -> AsyncIterator[StreamChunk]:
        """Run ``task``, yielding every chunk as it happens."""
        return self.events(task)


def __getattr__(name: str) -> Any:
    if name == "batch":
        from aimu.batch import abatch

        return abatch
    if name == "MCPClient":
        from aimu.tools.mcp import AsyncMCPClient

        return AsyncMCPClient
    raise AttributeError(f"module 'aimu.aio' has no attribute {name!r}")


__all__ = ["Agent", "MCPClient", "batch"]  # noqa: F822 (MCPClient and batch are lazy)
