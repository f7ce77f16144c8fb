"""Running a batch: prompts from items, bounded concurrency, retries, rate limits, checkpoint.

The driver is one async generator, shared by every backend: it yields each
:class:`BatchItem` as it finishes. A backend only supplies ``attempt(prompt)``, one fresh
agent run returning ``(answer, value, usage)`` — in this event loop for ``"local"``, on a
Ray actor for ``"ray"``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import copy
import logging
import string
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from aimu.agents.loop import AgentCore
from aimu.agents.structured import OutputSchema
from aimu.batch._checkpoint import Checkpoint, fits, item_keys, succeeded
from aimu.batch._progress import BatchStats, Progress
from aimu.batch._results import FAILED, OK, BatchItem
from aimu.models.base import ModelClient
from aimu.models.errors import (
    AuthenticationError,
    MissingCredentialsError,
    ModelNotFoundError,
    NoDefaultModelError,
    ProviderNotInstalledError,
    RateLimitError,
    UnknownProviderError,
)
from aimu.models.prices import format_money
from aimu.tools import Mismatch

logger = logging.getLogger("aimu.batch")

Task = str | Callable[[Any], str]
Attempt = Callable[[str], Awaitable[tuple[str, Any, dict[str, int]]]]

#: Errors that every item would hit alike: the batch stops at the first one.
FATAL = (
    AuthenticationError,
    MissingCredentialsError,
    ModelNotFoundError,
    NoDefaultModelError,
    ProviderNotInstalledError,
    UnknownProviderError,
)

#: After this many rate-limit answers in a row for one item, the next one counts as a failure.
MAX_RATE_LIMIT_WAITS = 12
MAX_BACKOFF = 30.0


@dataclass
class Job:
    index: int
    item: Any
    prompt: str
    key: str


#: The job whose attempt is running in this task (read by batch backends and policies).
CURRENT_JOB: contextvars.ContextVar[Job | None] = contextvars.ContextVar("aimu_batch_job",
                                                                       default=None)  # fmt: skip


def current_item() -> int | None:
    """The position of the batch item whose agent run calls this (``None`` outside a batch):
    a policy or tool can tell the rows of a batch apart."""
    job = CURRENT_JOB.get()
    return job.index if job is not None else None


# --- prompts -------------------------------------------------------------------------------


def to_rows(items: Any) -> tuple[list[Any], Any]:
    """The items as a list, and a DataFrame's index when ``items`` is one (else ``None``)."""
    if hasattr(items, "iterrows") and hasattr(items, "columns"):
        return items.to_dict("records"), list(items.index)
    if isinstance(items, str | bytes | dict):
        raise TypeError("items must be a list (or DataFrame) of items, not a single item")
    if not isinstance(items, Iterable):
        raise TypeError(f"items must be iterable, not {type(items).__name__}")
    rows = [
        row.to_dict() if hasattr(row, "to_dict") and hasattr(row, "index") else row for row in items
    ]
    return rows, None


def render_prompts(task: Task, rows: list[Any]) -> list[str]:
    """Fill ``task`` from each item, checking every item before anything runs."""
    if callable(task):
        prompts = [task(row) for row in rows]
        for position, prompt in enumerate(prompts):
            if not isinstance(prompt, str):
                raise TypeError(
                    f"the task callable returned {type(prompt).__name__} for item {position}; "
                    "it must return the prompt as a str"
                )
        return prompts
    if not isinstance(task, str):
        raise TypeError("task must be a template string like 'Classify: {text}', or a callable")
    fields = [name for _, name, _, _ in string.Formatter().parse(task) if name is not None]
    if not fields:
        raise ValueError(
            "the task has no {placeholder}, so every item would get the same prompt; "
            "write e.g. 'Classify: {text}' (a field of each item) or '{item}' (the whole item)"
        )
    prompts = []
    for position, row in enumerate(rows):
        values = {"item": row}
        if isinstance(row, dict):
            values.update({str(k): v for k, v in row.items()})
        try:
            prompts.append(task.format(row, **values))
        except (KeyError, AttributeError, IndexError) as exc:
            known = ", ".join(sorted(values)) or "none"
            raise ValueError(
                f"item {position} cannot fill the task: no field {exc} (its fields: {known})"
            ) from None
        except (ValueError, TypeError) as exc:
            raise ValueError(f"item {position} cannot fill the task: {exc}") from None
    return prompts


# --- one agent run ---------------------------------------------------------------------------


def fresh_conversation(template: AgentCore) -> AgentCore:
    """A copy of ``template`` with its own, empty conversation (same model, tools, policy)
    and no tool group loaded yet."""
    agent = copy.copy(template)
    agent.messages = []
    if agent.tool_groups is not None:
        agent.tool_groups = agent.tool_groups.fresh()
    return agent


def dump_value(schema: Any, value: Any) -> Any:
    """A JSON-ready form of a validated value, for the checkpoint and Ray workers."""
    if schema is None:
        return value
    from pydantic import TypeAdapter

    return TypeAdapter(schema).dump_python(value, mode="json")


def load_value(schema: Any, value: Any) -> Any:
    """A checkpoint's (or a worker's) JSON value as the schema's instance again."""
    return value if schema is None else OutputSchema.of(schema).build(value)


def local_attempt(
    template: AgentCore,
    schema: Any,
    client: Callable[[ModelClient], ModelClient] | None = None,
) -> Attempt:
    """One run in this event loop on a fresh conversation of ``template``.

    With a ``schema`` the agent's own structured output does the work (native where the
    provider has it, else a validated retry); an answer that never validates fails the item.
    ``client(template_client)``, when given, is the model client the run uses instead.
    """

    async def attempt(prompt: str) -> tuple[str, Any, dict[str, int]]:
        agent = fresh_conversation(template)
        if client is not None:
            agent.client = client(template.client)
        done: dict[str, Any] = {}
        async for chunk in agent._chunks(prompt, schema=schema):
            done = agent._final(chunk, done)
        return done.get("text", ""), agent._answer(done, schema), dict(done.get("usage") or {})

    return attempt


# --- the driver ------------------------------------------------------------------------------


class Throttle:
    """Bounded concurrency that halves on a rate limit and pauses everyone for a while.

    After a rate-limit answer no new run starts until the pause is over, and at most half as
    many run at once; each success lets one more run again, up to ``limit``.
    """

    def __init__(self, limit: int):
        self.max = limit
        self.limit = limit
        self.active = 0
        self.resume_at = 0.0
        self.waits = 0
        self._changed = asyncio.Condition()

    async def acquire(self) -> None:
        async with self._changed:
            while True:
                pause = self.resume_at - time.monotonic()
                if pause <= 0 and self.active < self.limit:
                    self.active += 1
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), pause if pause > 0 else None)

    async def release(self, rate_limited: RateLimitError | None = None) -> None:
        async with self._changed:
            self.active -= 1
            if rate_limited is not None:
                self.waits += 1
                delay = getattr(rate_limited, "retry_after", None)
                if delay is None:
                    delay = min(MAX_BACKOFF, 0.5 * 2 ** min(self.waits, 8))
                self.resume_at = max(self.resume_at, time.monotonic() + delay)
                self.limit = max(1, self.limit // 2)
            else:
                self.waits = 0
                self.limit = min(self.max, self.limit + 1)
            self._changed.notify_all()

    @property
    def rate_limited(self) -> bool:
        return self.resume_at > time.monotonic() or self.limit < self.max


class Admission:
    """Which job starts next, and whether any may: the cost ceiling and the caller's gate.

    With ``max_cost`` an item starts only while what was spent plus what the running items
    and this one will cost (each at the mean cost of the items finished so far) stays within
    it; until the first item finishes only one runs, so the batch never passes the ceiling
    by more than one item. ``admit(index)`` (awaited before item ``index`` starts) returning
    false stops the batch the same way: nothing new starts, what runs finishes.
    """

    def __init__(
        self,
        jobs: list[Job],
        *,
        max_cost: float | None,
        spent: float,
        admit: Callable[[int], Awaitable[bool]] | None,
    ):
        self.pending = collections.deque(jobs)
        self.max_cost = max_cost
        self.spent = spent
        self.ran = 0
        self.ran_cost = 0.0
        self.running = 0
        self.stopped: str | None = None
        self.admit = admit
        self._changed = asyncio.Condition()

    async def next(self) -> Job | None:
        """The next job to run, or ``None`` when there is none or the batch stopped."""
        async with self._changed:
            while True:
                if self.stopped is not None or not self.pending:
                    return None
                verdict = self._affordable()
                if verdict:
                    break
                if verdict is False:
                    self.stopped = f"the cost limit ({format_money(self.max_cost or 0)})"
                    self._changed.notify_all()
                    return None
                await self._changed.wait()
            job = self.pending.popleft()
            self.running += 1
        if self.admit is not None and not await self.admit(job.index):
            async with self._changed:
                self.running -= 1
                self.pending.appendleft(job)
                self.stopped = self.stopped or "the approval sample: Stop was chosen"
                self._changed.notify_all()
            return None
        return job

    def _affordable(self) -> bool | None:
        """True: start one; False: stop; None: wait for a running item to finish."""
        if self.max_cost is None:
            return True
        if self.spent >= self.max_cost:
            return False
        if not self.ran:
            return True if not self.running else None
        each = self.ran_cost / self.ran
        if self.spent + (self.running + 1) * each <= self.max_cost:
            return True
        return None if self.running else False

    async def finished(self, cost: float | None) -> None:
        async with self._changed:
            self.running -= 1
            if cost is not None:
                self.spent += cost
                self.ran += 1
                self.ran_cost += cost
            self._changed.notify_all()


async def drive(
    jobs: list[Job],
    attempt: Attempt,
    *,
    concurrency: int,
    retries: int,
    schema: Any,
    checkpoint: Checkpoint | None,
    progress: Progress,
    stats: BatchStats,
    cost: Callable[[dict[str, int]], float | None] = lambda usage: None,
    max_cost: float | None = None,
    admit: Callable[[int], Awaitable[bool]] | None = None,
) -> AsyncIterator[BatchItem]:
    """Run every job, yielding each finished item; checkpoint and progress as they finish.

    ``cost(usage)`` prices an item; ``max_cost`` and ``admit`` decide which start
    (:class:`Admission`); when either stops the batch, ``stats.stopped`` says why.
    """
    throttle = Throttle(concurrency)
    admission = Admission(jobs, max_cost=max_cost, spent=stats.cost or 0.0, admit=admit)
    keys = {job.index: job.key for job in jobs}
    finished: asyncio.Queue[BatchItem | BaseException | None] = asyncio.Queue()

    async def run_job(job: Job) -> BatchItem:
        CURRENT_JOB.set(job)
        item = BatchItem(job.index, job.item, job.prompt)
        rate_limit_waits = 0
        while True:
            await throttle.acquire()
            limited: RateLimitError | None = None
            try:
                item.attempts += 1
                item.answer, item.value, usage = await attempt(job.prompt)
                item.usage = _added(item.usage, usage)
                item.status, item.error = OK, None
            except RateLimitError as exc:
                rate_limit_waits += 1
                if rate_limit_waits <= MAX_RATE_LIMIT_WAITS:
                    item.attempts -= 1
                    limited = exc
                item.status, item.error = FAILED, f"{type(exc).__name__}: {exc}"
            except FATAL:
                raise
            except Exception as exc:
                item.status, item.error = FAILED, f"{type(exc).__name__}: {exc}"
                item.answer = item.value = None
                item.usage = _added(item.usage, getattr(exc, "usage", None) or {})
                if getattr(exc, "final", False):  # e.g. the provider batch was cancelled
                    break
            finally:
                await throttle.release(limited)
            if item.ok or (limited is None and item.attempts > retries):
                break
        return item

    async def work() -> None:
        while (job := await admission.next()) is not None:
            item = None
            try:
                item = await run_job(job)
            finally:
                await admission.finished(cost(item.usage) if item is not None else None)
            finished.put_nowait(item)

    async def run_all() -> None:
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(concurrency, len(jobs))):
                    group.create_task(work())
        except BaseExceptionGroup as group_error:
            finished.put_nowait(group_error.exceptions[0])
            return
        except BaseException as exc:
            finished.put_nowait(exc)
            raise
        finished.put_nowait(None)

    worker = asyncio.ensure_future(run_all())
    try:
        while (outcome := await finished.get()) is not None:
            if isinstance(outcome, BaseException):
                raise outcome
            if checkpoint is not None:
                value = dump_value(schema, outcome.value) if outcome.ok else None
                checkpoint.append(keys[outcome.index], outcome, value)
            stats.done += 1
            stats.failed += not outcome.ok
            stats.add(outcome.usage, cost(outcome.usage))
            stats.waiting_for_rate_limit = throttle.rate_limited
            stats.stopped = admission.stopped
            progress.update(stats)
            yield outcome
        await worker
        stats.stopped = admission.stopped
    finally:
        if not worker.done():
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)


def _added(total: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    """Token counts of every attempt of an item: a failed attempt was paid for too."""
    summed = dict(total)
    for name, count in more.items():
        summed[name] = summed.get(name, 0) + count
    return summed


def plan(
    task: Task, items: Any, schema: Any, checkpoint: Checkpoint | None
) -> tuple[list[Job], list[BatchItem], int, Any]:
    """The jobs still to run, the items a checkpoint already holds, the total, the index."""
    rows, index = to_rows(items)
    prompts = render_prompts(task, rows)
    keys = item_keys(prompts)
    done = checkpoint.load() if checkpoint is not None else {}
    jobs: list[Job] = []
    resumed: list[BatchItem] = []
    for position, (row, prompt, key) in enumerate(zip(rows, prompts, keys, strict=True)):
        record = done.get(key)
        kept = None
        if succeeded(record) and fits(record):
            kept = _resumed(position, row, prompt, record, schema)
        elif record is not None and succeeded(record):
            logger.warning("item %d: its checkpoint record does not fit; running it again",
                           position)  # fmt: skip
        if kept is not None:
            resumed.append(kept)
        else:
            jobs.append(Job(position, row, prompt, key))
    return jobs, resumed, len(rows), index


def _resumed(position: int, row: Any, prompt: str, record: Any, schema: Any) -> BatchItem | None:
    """The finished item a checkpoint record holds, or ``None`` (it runs again) when the
    record cannot be read back, e.g. it was written for another schema."""
    try:
        return BatchItem(
            position,
            row,
            prompt,
            OK,
            record.get("answer"),
            load_value(schema, record.get("value")),
            None,
            dict(record.get("usage") or {}),
            int(record.get("attempts") or 0),
            True,
        )
    except (Mismatch, TypeError, ValueError):
        logger.warning("item %d: its checkpoint record does not fit this batch; running it again",
                       position)  # fmt: skip
        return None
