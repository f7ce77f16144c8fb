"""``Agent``: the synchronous driver of the agent loop."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal, overload

from aimu._sync import iterate
from aimu.agents.compaction import Compaction
from aimu.agents.events import EventSink
from aimu.agents.inbox import Inbox
from aimu.agents.loop import AgentCore
from aimu.models.chunks import StreamChunk
from aimu.tools.approval import Policy


class Agent(AgentCore):
    """A model with tools, run to completion from ordinary (non-async) code.

    ``run(task)`` returns the final answer; ``run(task, stream=True)`` yields every
    :class:`~aimu.models.StreamChunk` as it happens; ``run(task, schema=Model)`` returns a
    validated ``Model``. Runs on one agent share a conversation; :meth:`reset` forgets it.
    Async tools work here too: the loop runs on its own event loop. Ctrl-C stops the run and
    leaves the conversation valid for the next one.
    """

    @overload
    def run(self, task: str, stream: Literal[False] = False, **overrides: Any) -> Any: ...
    @overload
    def run(self, task: str, stream: Literal[True], **overrides: Any) -> Iterator[StreamChunk]: ...

    def run(
        self,
        task: str,
        stream: bool = False,
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
        """Run ``task``; return the answer (a ``schema`` instance when one is given), or an
        iterator of chunks with ``stream=True``. The keywords apply to this run only."""
        if not isinstance(task, str):
            raise TypeError(f"task must be a str, not {type(task).__name__}")
        overrides = dict(
            tool_approval=tool_approval,
            deps=deps,
            thinking=thinking,
            generate_kwargs=generate_kwargs,
            schema=schema,
            events=events,
            compaction=compaction,
            inbox=inbox,
        )
        self._prepare(**overrides)  # bad overrides raise here, before anything runs
        chunks = iterate(lambda: self.chunks(task, **overrides))
        if stream:
            return chunks
        done: dict[str, Any] = {}
        for chunk in chunks:
            done = self.final(chunk, done)
        return self.answer(done, schema)
