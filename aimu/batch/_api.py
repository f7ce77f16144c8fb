"""The batch entry points: :func:`batch`, :func:`abatch` and :class:`BatchRun` beneath both."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from aimu._sync import iterate
from aimu.agents.loop import AgentCore
from aimu.batch._checkpoint import Checkpoint
from aimu.batch._progress import BatchStats, Progress, ProgressFactory, make_progress
from aimu.batch._ray import RayPool
from aimu.batch._results import BatchItem, BatchResult
from aimu.batch._run import Task, drive, local_attempt, plan
from aimu.models.base import ModelClient

BACKENDS = ("local", "ray")


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C (or the notebook's stop button) ended a batch; ``result`` holds what finished."""

    def __init__(self, result: BatchResult):
        super().__init__(f"batch interrupted: {len(result)} of {result.total} items finished")
        self.result = result


class BatchRun:
    """One batch as an async iterator of items in the order they finish (resumed ones
    first); :meth:`result` is a :class:`BatchResult` of those seen so far, in input order.

    :func:`batch` and :func:`abatch` drive one to the end; iterate it yourself to act on
    each item as it finishes, or to keep what finished when the run is cancelled.
    """

    def __init__(
        self,
        task: Task,
        items: Any,
        *,
        agent: AgentCore | ModelClient | str | None = None,
        concurrency: int = 8,
        schema: Any = None,
        checkpoint: str | os.PathLike[str] | None = None,
        retries: int = 2,
        backend: str = "local",
        address: str | None = None,
        progress: bool | ProgressFactory | None = None,
    ):
        _check_options(concurrency, retries, backend)
        self.template = agent if isinstance(agent, AgentCore) else AgentCore(agent)
        self.checkpoint = Checkpoint(checkpoint) if checkpoint is not None else None
        self.jobs, self.resumed, self.total, self._index = plan(
            task, items, schema, self.checkpoint
        )
        self.schema = schema
        self.concurrency = concurrency
        self.retries = retries
        self.backend = backend
        self.address = address
        self.progress = progress
        self.finished: list[BatchItem] = []

    def result(self) -> BatchResult:
        return BatchResult(self.finished, total=self.total, index=self._index, schema=self.schema)

    async def __aiter__(self) -> AsyncIterator[BatchItem]:
        stats = BatchStats(total=self.total, done=len(self.resumed), resumed=len(self.resumed))
        stats.tokens = sum(sum(it.usage.values()) for it in self.resumed)
        pool = None
        if self.backend == "ray" and self.jobs:
            pool = RayPool.for_template(
                self.template, self.schema, concurrency=self.concurrency, address=self.address
            )
        attempt = pool.attempt() if pool is not None else local_attempt(self.template, self.schema)
        display: Progress = make_progress(self.progress, stats)
        completed = False
        try:
            for item in self.resumed:
                self.finished.append(item)
                yield item
            async for item in drive(
                self.jobs,
                attempt,
                concurrency=self.concurrency,
                retries=self.retries,
                schema=self.schema,
                checkpoint=self.checkpoint,
                progress=display,
                stats=stats,
            ):
                self.finished.append(item)
                yield item
            completed = True
        finally:
            display.close(stats)
            if self.checkpoint is not None:
                self.checkpoint.close()
            if pool is not None and not completed:
                pool.discard()


def batch(
    task: Task,
    items: Any,
    *,
    agent: AgentCore | ModelClient | str | None = None,
    concurrency: int = 8,
    schema: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    retries: int = 2,
    backend: str = "local",
    address: str | None = None,
    progress: bool | ProgressFactory | None = None,
) -> BatchResult:
    """Run ``task`` once per item and return the results in input order.

    ``task`` is a template filled from each item (``"Classify: {text}"`` takes the ``text``
    field of a dict or DataFrame row; ``{item}`` is the whole item) or a callable
    ``item -> prompt``. ``agent`` is an :class:`~aimu.Agent` used as a template, or a model
    (``"openai:gpt-4o-mini"``, a client; ``None`` for the default model) run without tools.
    At most ``concurrency`` (default 8) run at once. ``retries`` (default 2) counts the
    attempts per item beyond the first; a rate-limited request (HTTP 429) is not an
    attempt: the whole batch slows down instead. An item that still fails is recorded as
    failed and the batch goes on; errors every item would hit (bad credentials, unknown
    model) stop it at once. ``schema`` (a pydantic model, dataclass or TypedDict) makes each
    ``value`` a validated instance. ``checkpoint`` (a ``.jsonl`` path or a directory)
    appends every finished item as it finishes and skips the ones that succeeded when the
    same batch runs again. ``backend="ray"`` runs the agents on the Ray cluster
    ``ray.init(address=address)`` connects to (a local one by default). ``progress``:
    ``None`` shows a bar where one can be drawn, ``False`` none, or a factory
    ``stats -> display``.

    Ctrl-C stops at once and raises :class:`BatchInterrupted`, whose ``result`` holds every
    item that finished (they are in the checkpoint too).
    """
    options = {"agent": agent, "concurrency": concurrency, "schema": schema,
               "checkpoint": checkpoint, "retries": retries, "backend": backend,
               "address": address, "progress": progress}  # fmt: skip
    holder: list[BatchRun] = []

    def start() -> BatchRun:
        holder.append(BatchRun(task, items, **options))
        return holder[0]

    try:
        for _ in iterate(lambda: start().__aiter__()):
            pass
    except KeyboardInterrupt:
        if not holder:
            raise
        raise BatchInterrupted(holder[0].result()) from None
    return holder[0].result()


async def abatch(
    task: Task,
    items: Any,
    *,
    agent: AgentCore | ModelClient | str | None = None,
    concurrency: int = 8,
    schema: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    retries: int = 2,
    backend: str = "local",
    address: str | None = None,
    progress: bool | ProgressFactory | None = None,
) -> BatchResult:
    """:func:`batch` for async code (``await aimu.aio.batch(...)``), same options.

    Cancelling it stops the batch; what finished is in the checkpoint (or iterate a
    :class:`BatchRun` to keep it in hand)."""
    options = {"agent": agent, "concurrency": concurrency, "schema": schema,
               "checkpoint": checkpoint, "retries": retries, "backend": backend,
               "address": address, "progress": progress}  # fmt: skip
    run = BatchRun(task, items, **options)
    async for _ in run:
        pass
    return run.result()


def _check_options(concurrency: int, retries: int, backend: str) -> None:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, not {concurrency!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be an int >= 0, not {retries!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
