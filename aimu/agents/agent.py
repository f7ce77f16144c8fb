"""``Agent``: the synchronous driver of the agent loop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal, Unpack, overload

from aimu._sync import iterate, run
from aimu.agents.loop import AgentCore, RunOverrides
from aimu.models.chunks import StreamChunk


class Agent(AgentCore):
    """A model with tools, run to completion from ordinary (non-async) code.

    ``run(task)`` returns the final answer; ``stream(task)`` yields every
    :class:`~aimu.models.StreamChunk` as it happens (as ``aimu.aio.Agent.stream`` does;
    ``run(task, stream=True)`` is the same); ``run(task, schema=Model)`` returns a
    validated ``Model``. Runs on one agent share a conversation; :meth:`reset` forgets it.
    Async tools work here too: the loop runs on its own event loop. Ctrl-C stops the run and
    leaves the conversation valid for the next one.
    """

    @overload
    def run(
        self, task: str, stream: Literal[False] = False, **overrides: Unpack[RunOverrides]
    ) -> Any: ...
    @overload
    def run(
        self, task: str, stream: Literal[True], **overrides: Unpack[RunOverrides]
    ) -> Iterator[StreamChunk]: ...

    def run(self, task: str, stream: bool = False, **overrides: Unpack[RunOverrides]) -> Any:
        """Run ``task``; return the answer (a ``schema`` instance when one is given), or with
        ``stream=True`` the chunks :meth:`stream` yields. The keywords (:class:`RunOverrides`:
        ``tool_approval``, ``deps``, ``thinking``, ``generate_kwargs``, ``schema``,
        ``events``, ``compaction``, ``inbox``) apply to this run only."""
        if not isinstance(task, str):
            raise TypeError(f"task must be a str, not {type(task).__name__}")
        self._prepare(**overrides)  # bad overrides raise here, before anything runs
        if stream:
            return iterate(lambda: self._chunks(task, **overrides))
        return run(lambda: self._final_answer(task, overrides))

    def stream(self, task: str, **overrides: Unpack[RunOverrides]) -> Iterator[StreamChunk]:
        """Run ``task`` and yield every chunk as it happens, ending with the ``DONE`` chunk;
        the keywords are :meth:`run`'s. Errors in ``task`` or the keywords raise here."""
        return self.run(task, stream=True, **overrides)

    async def _final_answer(self, task: str, overrides: RunOverrides) -> Any:
        done: dict[str, Any] = {}
        async for chunk in self._chunks(task, **overrides):
            done = self._final(chunk, done)
        return self._answer(done, overrides.get("schema"))
