"""``Agent``: the synchronous driver of the agent loop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Literal, overload

from aimu._sync import iterate, run
from aimu.agents.loop import AgentCore
from aimu.models.chunks import Phase, StreamChunk


class Agent(AgentCore):
    """A model with tools, run to completion from ordinary (non-async) code.

    ``run(task)`` returns the final answer; ``run(task, stream=True)`` yields every
    :class:`~aimu.models.StreamChunk` as it happens. Runs on one agent share a conversation;
    :meth:`reset` forgets it. Async tools work here too: the loop runs on its own event loop.
    Ctrl-C stops the run and leaves the conversation valid for the next one.
    """

    @overload
    def run(self, task: str, stream: Literal[False] = False) -> str: ...
    @overload
    def run(self, task: str, stream: Literal[True]) -> Iterator[StreamChunk]: ...

    def run(self, task: str, stream: bool = False) -> str | Iterator[StreamChunk]:
        """Run ``task``; return the answer, or an iterator of chunks with ``stream=True``."""
        if not isinstance(task, str):
            raise TypeError(f"task must be a str, not {type(task).__name__}")
        if stream:
            return iterate(lambda: self.events(task))
        return run(lambda: _answer(self.events(task), self.name))


async def _answer(chunks: AsyncIterator[StreamChunk], name: str) -> str:
    """The final answer of the run ``chunks`` belongs to (agent ``name``)."""
    text = ""
    async for chunk in chunks:
        if chunk.phase is Phase.DONE and chunk.agent == name:
            text = chunk.content["text"]
    return text
