"""``aimu.aio.Agent``: the async driver of the agent loop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from aimu.agents.compaction import Compaction
from aimu.agents.events import EventSink
from aimu.agents.inbox import Inbox
from aimu.agents.loop import AgentCore
from aimu.models.chunks import StreamChunk
from aimu.tools.approval import Policy


class Agent(AgentCore):
    """The async agent: ``await agent.run(task)`` or ``async for c in agent.stream(task)``.

    The keywords of :meth:`run` and :meth:`stream` apply to that run only, as on
    :meth:`aimu.agents.Agent.run`.
    """

    async def run(
        self,
        task: str,
        *,
        tool_approval: Policy | None = None,
        deps: Any = None,
        thinking: bool | str | None = None,
        generate_kwargs: Mapping[str, Any] | None = None,
        schema: Any = None,
        events: EventSink | None = None,
        compaction: Compaction | None = None,
        inbox: Inbox | None = None,
    ) -> Any:
        """Run ``task`` and return the final answer (a ``schema`` instance when given)."""
        done: dict[str, Any] = {}
        async for chunk in self.chunks(
            task,
            tool_approval=tool_approval,
            deps=deps,
            thinking=thinking,
            generate_kwargs=generate_kwargs,
            schema=schema,
            events=events,
            compaction=compaction,
            inbox=inbox,
        ):
            done = self.final(chunk, done)
        return self.answer(done, schema)

    def stream(self, task: str, **overrides: Any) -> AsyncIterator[StreamChunk]:
        """Run ``task``, yielding every chunk as it happens (``run``'s keywords apply)."""
        return self.chunks(task, **overrides)
