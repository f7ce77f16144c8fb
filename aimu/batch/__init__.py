"""Many agent runs over data: ``aimu.batch(task, items, agent=...)``.

Each item gets a fresh conversation of the ``agent`` template (same model, tools, policy and
options), at most ``concurrency`` at once on one event loop and one shared client, or on a
Ray cluster with ``backend="ray"``. Results come back in input order; a checkpoint file keeps
every finished item, so running the same batch again only runs what is missing or failed.

    results = aimu.batch("Classify this ticket: {text}", tickets_df, agent=agent,
                         schema=Ticket, checkpoint="tickets.jsonl")
    results.to_pandas()
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from aimu._sync import iterate
from aimu.agents.loop import AgentCore
from aimu.batch._checkpoint import Checkpoint
from aimu.batch._progress import (
    BatchStats,
    Progress,
    ProgressFactory,
    make_progress,
    set_default_progress,
)
from aimu.batch._ray import BatchSetupError, RayPool
from aimu.batch._results import BatchItem, BatchResult
from aimu.batch._run import SchemaValidationError, Task, drive, local_attempt, plan
from aimu.models.base import ModelClient

BACKENDS = ("local", "ray")


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C (or the notebook's stop button) ended a batch; ``result`` holds what finished."""

    def __init__(self, result: BatchResult):
        super().__init__(f"batch interrupted: {len(result)} of {result.total} items finished")
        self.result = result


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
    ``retries`` counts the attempts per item beyond the first; a rate-limited request (HTTP
    429) is not an attempt: the whole batch slows down instead. An item that still fails is
    recorded as failed and the batch goes on; errors every item would hit (bad credentials,
    unknown model) stop it at once. ``schema`` (a pydantic model, dataclass or TypedDict)
    makes each ``value`` a validated instance. ``checkpoint`` (a ``.jsonl`` path or a
    directory) appends every finished item as it finishes and skips the ones that succeeded
    when the same batch runs again. ``backend="ray"`` runs the agents on the Ray cluster
    ``ray.init(address=address)`` connects to (a local one by default).

    Ctrl-C stops at once and raises :class:`BatchInterrupted`, whose ``result`` holds every
    item that finished (they are in the checkpoint too).
    """
    collected: list[BatchItem] = []
    meta: dict[str, Any] = {}
    try:
        options = (agent, concurrency, schema, checkpoint, retries, backend, address, progress)
        for item in iterate(lambda: _stream(task, items, *options, meta)):
            collected.append(item)
    except KeyboardInterrupt:
        if "total" not in meta:
            raise
        raise BatchInterrupted(_result(collected, meta)) from None
    return _result(collected, meta)


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
    """:func:`batch` for async code: ``await aimu.aio.batch(...)``. Cancelling it stops the
    batch; what finished is in the checkpoint."""
    collected: list[BatchItem] = []
    meta: dict[str, Any] = {}
    options = (agent, concurrency, schema, checkpoint, retries, backend, address, progress)
    async for item in _stream(task, items, *options, meta):
        collected.append(item)
    return _result(collected, meta)


async def _stream(
    task: Task,
    items: Any,
    agent: AgentCore | ModelClient | str | None,
    concurrency: int,
    schema: Any,
    checkpoint_path: str | os.PathLike[str] | None,
    retries: int,
    backend: str,
    address: str | None,
    progress_option: bool | ProgressFactory | None,
    meta: dict[str, Any],
) -> AsyncIterator[BatchItem]:
    """Every item of the batch as it finishes, resumed ones first."""
    _check_options(concurrency, retries, backend)
    template = agent if isinstance(agent, AgentCore) else AgentCore(agent)
    checkpoint = Checkpoint(checkpoint_path) if checkpoint_path is not None else None
    jobs, resumed, total, index = plan(task, items, schema, checkpoint)
    meta.update(total=total, index=index, schema=schema)
    stats = BatchStats(total=total, done=len(resumed), resumed=len(resumed))
    stats.tokens = sum(sum(it.usage.values()) for it in resumed)
    pool = None
    if backend == "ray" and jobs:
        pool = RayPool.for_template(template, schema, concurrency=concurrency, address=address)
    attempt = pool.attempt() if pool is not None else local_attempt(template, schema)
    display: Progress = make_progress(progress_option, stats)
    finished = False
    try:
        for item in resumed:
            yield item
        async for item in drive(
            jobs,
            attempt,
            concurrency=concurrency,
            retries=retries,
            schema=schema,
            checkpoint=checkpoint,
            progress=display,
            stats=stats,
        ):
            yield item
        finished = True
    finally:
        display.close(stats)
        if checkpoint is not None:
            checkpoint.close()
        if pool is not None and not finished:
            pool.discard()


def _check_options(concurrency: int, retries: int, backend: str) -> None:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, not {concurrency!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be an int >= 0, not {retries!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")


def _result(collected: list[BatchItem], meta: dict[str, Any]) -> BatchResult:
    return BatchResult(
        collected,
        total=meta.get("total", len(collected)),
        index=meta.get("index"),
        schema=meta.get("schema"),
    )


__all__ = [
    "BatchInterrupted",
    "BatchItem",
    "BatchResult",
    "BatchSetupError",
    "BatchStats",
    "SchemaValidationError",
    "abatch",
    "batch",
    "set_default_progress",
]
