"""``aimu.aio.Agent``: the async driver of the agent loop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Unpack

from aimu.agents.loop import AgentCore, RunOverrides
from aimu.models.chunks import StreamChunk


class Agent(AgentCore):
    """The async agent: ``await agent.run(task)`` or ``async for c in agent.stream(task)``.

    The keywords of :meth:`run` and :meth:`stream` (:class:`~aimu.agents.loop.RunOverrides`:
    ``tool_approval``, ``deps``, ``thinking``, ``generate_kwargs``, ``schema``, ``events``,
    ``compaction``, ``inbox``) apply to that run only, as on :meth:`aimu.agents.Agent.run`.
    """

    async def run(self, task: str, **overrides: Unpack[RunOverrides]) -> Any:
        """Run ``task`` and return the final answer (a ``schema`` instance when given)."""
        done: dict[str, Any] = {}
        async for chunk in self._chunks(task, **overrides):
            done = self._final(chunk, done)
        return self._answer(done, overrides.get("schema"))

    def stream(self, task: str, **overrides: Unpack[RunOverrides]) -> AsyncIterator[StreamChunk]:
        """Run ``task``, yielding every chunk as it happens."""
        return self._chunks(task, **overrides)
