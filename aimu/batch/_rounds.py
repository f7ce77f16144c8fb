"""Batch backends: every item's model turns gathered into provider batches, round by round.

Each item runs its ordinary agent loop, on a :class:`RoundClient` instead of the model
client: a turn is not sent but handed to :class:`Rounds`, which waits until every running item
is waiting for its model (the others are running tools), submits all those turns as one
provider batch, polls it every ``poll_interval`` seconds and hands each item its answer. An
item that called tools runs them here, locally, and its next turn goes into the next round:
a tool-using agent takes one batch per model turn.

Each request's custom id is a digest of the item's key and the request itself, and every
submitted batch is written to the checkpoint, so a restarted run that asks for the same
requests polls the batch that already holds them instead of submitting (and paying) again.
Requests that failed or expired in a batch are retried in a later round; what completed is
kept. Requests of a cancelled batch are not retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from aimu.batch._checkpoint import Checkpoint
from aimu.batch._progress import BatchStats, Progress
from aimu.batch._provider_api import BatchRequestError, Outcome, Status
from aimu.batch._run import CURRENT_JOB, Attempt
from aimu.models.base import GenerationOptions, ModelClient, ModelEvent

logger = logging.getLogger("aimu.batch")

#: A round is submitted once nothing changed for this long (items still starting join it).
SETTLE = 0.05
#: Polls of a batch that may fail in a row (network trouble) before its requests fail.
MAX_POLL_FAILURES = 5


def custom_id(key: str, body: dict[str, Any]) -> str:
    """The request's id inside a batch: the same item asking the same thing gets the same id."""
    text = key + "\n" + json.dumps(body, sort_keys=True, ensure_ascii=False, default=str)
    return "aimu-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]


class Rounds:
    """Gathers the running items' model turns into provider batches and answers them."""

    def __init__(
        self,
        api: Any,
        *,
        backend: str,
        checkpoint: Checkpoint | None,
        stats: BatchStats,
        progress: Callable[[], Progress],
        poll_interval: float,
    ):
        self.api = api
        self.backend = backend
        self.checkpoint = checkpoint
        self.stats = stats
        self._progress = progress
        self.poll_interval = poll_interval
        self.running = 0
        self.submissions = 0
        self.batch_ids: list[str] = []
        self._pending: dict[str, tuple[dict[str, Any], asyncio.Future[Any]]] = {}
        self._in_batches: set[str] = set()
        self._known = dict(checkpoint.batches) if checkpoint is not None else {}
        self._polls: dict[str, dict[str, list[asyncio.Future[Any]]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._changed = asyncio.Event()
        self._version = 0
        self._flusher: asyncio.Task[None] | None = None

    def attempt(self, inner: Attempt) -> Attempt:
        """``inner`` counted as a running item while it runs."""

        async def attempt(prompt: str) -> tuple[str, Any, dict[str, int]]:
            self._started()
            self.running += 1
            self._touch()
            try:
                return await inner(prompt)
            finally:
                self.running -= 1
                self._touch()

        return attempt

    def client(self, real: ModelClient) -> ModelClient:
        """The client an item's agent uses: its turns go into the next round."""
        job = CURRENT_JOB.get()
        return RoundClient(real, self, job.key if job is not None else "")

    async def ask(self, request_id: str, body: dict[str, Any]) -> Any:
        """The provider's response body for one request (a turn of a running item)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        batch_id = self._known.pop(request_id, None)
        if batch_id is not None:
            self._follow(batch_id, {request_id: future})
            self._in_batches.add(request_id)
        else:
            self._pending[request_id] = (body, future)
        self._touch()
        try:
            return await future
        finally:
            self._in_batches.discard(request_id)
            self._pending.pop(request_id, None)
            self._touch()

    async def cancel(self) -> None:
        """Ask the provider to cancel every batch being polled; their finished requests are
        kept, the others end as failed (not retried)."""
        for batch_id in list(self._polls):
            await self.api.cancel(batch_id)

    async def close(self) -> None:
        """Stop polling (the batches go on at the provider; a rerun resumes them)."""
        for task in [*self._tasks, self._flusher]:
            if task is not None:
                task.cancel()
        await asyncio.gather(*self._tasks, *([self._flusher] if self._flusher else []),
                             return_exceptions=True)  # fmt: skip

    # -- internals ------------------------------------------------------------------------

    def _started(self) -> None:
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush_rounds())

    def _touch(self) -> None:
        self._version += 1
        self._changed.set()

    async def _flush_rounds(self) -> None:
        """Submit the waiting turns whenever every running item waits for its model."""
        while True:
            await self._changed.wait()
            self._changed.clear()
            version = -1
            while version != self._version:  # settle: items still starting join this round
                version = self._version
                await asyncio.sleep(SETTLE)
            waiting = len(self._pending) + len(self._in_batches)
            if self._pending and waiting >= self.running:
                requests = {rid: entry for rid, entry in self._pending.items()
                            if not entry[1].done()}  # fmt: skip
                self._pending.clear()
                self._in_batches.update(requests)
                if requests:
                    self._spawn(self._submit(requests))

    async def _submit(self, requests: dict[str, tuple[dict[str, Any], asyncio.Future[Any]]]):
        try:
            batch_id = await self.api.submit([(rid, body) for rid, (body, _) in requests.items()])
        except BaseException as exc:
            for _, future in requests.values():
                if not future.done():
                    future.set_exception(
                        exc
                        if isinstance(exc, Exception)
                        else BatchRequestError("the batch was not submitted")
                    )
            if not isinstance(exc, Exception):
                raise
            return
        self.submissions += 1
        self.batch_ids.append(batch_id)
        self.stats.round = self.submissions
        if self.checkpoint is not None:
            self.checkpoint.append_batch(self.backend, batch_id, list(requests))
        self._follow(batch_id, {rid: future for rid, (_, future) in requests.items()})

    def _follow(self, batch_id: str, waiters: dict[str, asyncio.Future[Any]]) -> None:
        """Add ``waiters`` to the poll of ``batch_id`` (started when there is none)."""
        polled = self._polls.get(batch_id)
        if polled is None:
            polled = self._polls[batch_id] = {}
            self._spawn(self._poll(batch_id))
            if not self.stats.round:
                self.stats.round = 1
        for request_id, future in waiters.items():
            polled.setdefault(request_id, []).append(future)

    async def _poll(self, batch_id: str) -> None:
        failures = 0
        try:
            while True:
                try:
                    status: Status = await self.api.status(batch_id)
                    failures = 0
                except Exception as exc:
                    failures += 1
                    if failures >= MAX_POLL_FAILURES:
                        self._fail(batch_id, exc)
                        return
                    logger.warning("polling batch %s failed (%s); trying again", batch_id, exc)
                else:
                    self.stats.provider_status = status.line()
                    self._progress().update(self.stats)
                    if status.ended:
                        break
                await asyncio.sleep(self.poll_interval)
            try:
                outcomes = await self.api.results(status)
            except Exception as exc:
                self._fail(batch_id, exc)
                return
            self._answer(batch_id, lambda rid: _settled(outcomes.get(rid), batch_id))
        finally:
            self._polls.pop(batch_id, None)

    def _fail(self, batch_id: str, error: Exception) -> None:
        self._answer(batch_id, lambda request_id: error)

    def _answer(self, batch_id: str, result: Callable[[str], Any]) -> None:
        for request_id, futures in self._polls.get(batch_id, {}).items():
            answer = result(request_id)
            for future in futures:
                if future.done():
                    continue
                if isinstance(answer, BaseException):
                    future.set_exception(answer)
                else:
                    future.set_result(answer)

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _settled(outcome: Outcome | None, batch_id: str) -> Any:
    """A request's response body, or the error its item sees."""
    if outcome is None:
        return BatchRequestError(f"the request is missing from the results of batch {batch_id}")
    if outcome.body is not None:
        return outcome.body
    return BatchRequestError(f"batch {batch_id}: {outcome.error}", final=not outcome.retry)


class RoundClient(ModelClient):
    """A model client whose turns go into the next round of provider batches."""

    def __init__(self, real: ModelClient, rounds: Rounds, key: str):
        self.provider = real.provider
        self.model = real.model
        self._real = real
        self._rounds = rounds
        self._key = key
        self._sees_images = real.sees_images

    @property
    def name(self) -> str:
        return self._real.name

    def clone(self) -> RoundClient:
        return RoundClient(self._real, self._rounds, self._key)

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> AsyncIterator[ModelEvent]:
        real: Any = self._real
        body = real.request_body(messages, tools, options)
        response = await self._rounds.ask(custom_id(self._key, body), body)
        for event in real.response_events(response, tools, options):
            yield event


@contextlib.asynccontextmanager
async def rounds_closed(rounds: Rounds | None) -> AsyncIterator[None]:
    """Stop the polling of ``rounds`` on the way out."""
    try:
        yield
    finally:
        if rounds is not None:
            await rounds.close()
