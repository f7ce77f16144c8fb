"""The batch entry points: :func:`batch`, :func:`abatch` and :class:`BatchRun` beneath both."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aimu._sync import iterate
from aimu.agents.loop import AgentCore
from aimu.batch._checkpoint import Checkpoint, configuration
from aimu.batch._progress import BatchStats, Progress, ProgressFactory, make_progress
from aimu.batch._provider_api import PROVIDERS, batch_api
from aimu.batch._ray import BatchSetupError, RayPool
from aimu.batch._results import BatchItem, BatchResult
from aimu.batch._rounds import Rounds, rounds_closed
from aimu.batch._run import Task, drive, local_attempt, plan
from aimu.models.base import ModelClient
from aimu.models.prices import prices

BACKENDS = ("local", "ray", *PROVIDERS)
DEFAULT_CONCURRENCY = 8


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
        concurrency: int | None = None,
        schema: Any = None,
        checkpoint: str | os.PathLike[str] | None = None,
        retries: int = 2,
        backend: str = "local",
        address: str | None = None,
        progress: bool | ProgressFactory | None = None,
        max_cost: float | None = None,
        poll_interval: float = 30.0,
        admit: Callable[[int], Awaitable[bool]] | None = None,
    ):
        _check_options(concurrency, retries, backend, max_cost, poll_interval)
        self.template = agent if isinstance(agent, AgentCore) else AgentCore(agent)
        config = configuration(self.template, schema)
        self.checkpoint = Checkpoint(checkpoint, config) if checkpoint is not None else None
        self.jobs, self.resumed, self.total, self._index = plan(
            task, items, schema, self.checkpoint
        )
        self.schema = schema
        self.backend = backend
        batched = backend in PROVIDERS
        if concurrency is None:
            concurrency = max(1, len(self.jobs)) if batched else DEFAULT_CONCURRENCY
        self.concurrency = concurrency
        self.retries = retries
        self.address = address
        self.progress = progress
        self.max_cost = max_cost
        self.poll_interval = poll_interval
        self.admit = admit
        self.price = prices.for_client(self.template.client)
        if max_cost is not None and self.price is None:
            raise BatchSetupError(
                f"max_cost needs the price of {self.template.client.name}, which is not known; "
                f"set it: aimu.prices[{_price_name(self.template.client)!r}] = "
                "(input, output)  # US dollars per million tokens"
            )
        self._api = batch_api(backend, self.template.client) if batched else None
        self.rounds: Rounds | None = None
        self.finished: list[BatchItem] = []
        self.stats = BatchStats(total=self.total, done=len(self.resumed),
                                resumed=len(self.resumed))  # fmt: skip
        self.stats.ignored = self.checkpoint.ignored if self.checkpoint is not None else 0
        self.stats.cost = 0.0 if self.price is not None else None
        for item in self.resumed:
            self.stats.add(item.usage, self.cost(item.usage), resumed=True)

    def cost(self, usage: dict[str, int]) -> float | None:
        """What ``usage`` costs in US dollars on this backend (batch prices on a batch
        backend), ``None`` when the model's price is not known."""
        if self.price is None:
            return None
        return self.price.cost(usage, batch=self.backend in PROVIDERS)

    def result(self) -> BatchResult:
        spent = [self.cost(it.usage) for it in self.finished]
        total = None if self.price is None else sum(c or 0.0 for c in spent)
        return BatchResult(self.finished, total=self.total, index=self._index,
                           schema=self.schema, stopped=self.stats.stopped, cost=total)  # fmt: skip

    async def cancel(self) -> None:
        """Ask the provider to cancel the batches a batch backend is waiting for: what they
        finished is kept, the rest of their requests end as failed."""
        if self.rounds is not None:
            await self.rounds.cancel()

    async def __aiter__(self) -> AsyncIterator[BatchItem]:
        stats = self.stats
        pool = None
        if self.backend == "ray" and self.jobs:
            pool = RayPool.for_template(
                self.template, self.schema, concurrency=self.concurrency, address=self.address
            )
        display: Progress = make_progress(self.progress, stats)
        if self._api is not None:
            self.rounds = Rounds(self._api, backend=self.backend, checkpoint=self.checkpoint,
                                 stats=stats, progress=lambda: display,
                                 poll_interval=self.poll_interval)  # fmt: skip
            attempt = self.rounds.attempt(
                local_attempt(self.template, self.schema, client=self.rounds.client)
            )
        elif pool is not None:
            attempt = pool.attempt()
        else:
            attempt = local_attempt(self.template, self.schema)
        completed = False
        try:
            for item in self.resumed:
                self.finished.append(item)
                yield item
            async with rounds_closed(self.rounds):
                async for item in drive(
                    self.jobs,
                    attempt,
                    concurrency=self.concurrency,
                    retries=self.retries,
                    schema=self.schema,
                    checkpoint=self.checkpoint,
                    progress=display,
                    stats=stats,
                    cost=self.cost,
                    max_cost=self.max_cost,
                    admit=self.admit,
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
    concurrency: int | None = None,
    schema: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    retries: int = 2,
    backend: str = "local",
    address: str | None = None,
    progress: bool | ProgressFactory | None = None,
    max_cost: float | None = None,
    poll_interval: float = 30.0,
) -> BatchResult:
    """Run ``task`` once per item and return the results in input order.

    ``task`` is a template filled from each item (``"Classify: {text}"`` takes the ``text``
    field of a dict or DataFrame row; ``{item}`` is the whole item) or a callable
    ``item -> prompt``. ``agent`` is an :class:`~aimu.Agent` used as a template, or a model
    (``"openai:gpt-4o-mini"``, a client; ``None`` for the default model) run without tools.
    At most ``concurrency`` (default 8; on a batch backend every item) run at once.
    ``retries`` (default 2) counts the
    attempts per item beyond the first; a rate-limited request (HTTP 429) is not an
    attempt: the whole batch slows down instead. An item that still fails is recorded as
    failed and the batch goes on; errors every item would hit (bad credentials, unknown
    model) stop it at once. ``schema`` (a pydantic model, dataclass or TypedDict) makes each
    ``value`` a validated instance. ``checkpoint`` (a ``.jsonl`` path or a directory)
    appends every finished item as it finishes and skips the ones that succeeded when the
    same batch runs again with the same model, system message, tools, schema and options
    (records another configuration wrote are ignored, and the progress line says how many).
    ``backend="ray"`` runs the agents on the Ray cluster ``ray.init(address=address)``
    connects to (a local one by default). ``progress``: ``None`` shows a bar where one can
    be drawn, ``False`` none, or a factory ``stats -> display``.

    ``backend="openai-batch"`` / ``"anthropic-batch"`` send the model turns through the
    provider's batch API (half the list price, results within 24 h), asking every
    ``poll_interval`` seconds (default 30) how it goes. A tool-using agent needs one batch
    per model turn: the turn is submitted, its tool calls run here, the next turn goes into
    the next batch (the progress line shows the round). With a ``checkpoint`` each batch's
    id is kept, so running the batch again after a restart polls the same batch instead of
    paying again; requests that failed or expired are retried, what completed is kept.

    ``max_cost`` (US dollars) stops starting new items once what was spent (items read back
    from the checkpoint included) and what the running items will cost would pass it; the
    result's ``stopped`` says so, and a rerun with the checkpoint and a higher ceiling goes
    on. It needs the model's price (:data:`aimu.prices`); the
    result's ``cost`` and the progress line show the money spent, at batch prices on a
    batch backend.

    Ctrl-C stops at once and raises :class:`BatchInterrupted`, whose ``result`` holds every
    item that finished (they are in the checkpoint too; a provider batch goes on, and a
    rerun collects it).
    """
    options = {"agent": agent, "concurrency": concurrency, "schema": schema,
               "checkpoint": checkpoint, "retries": retries, "backend": backend,
               "address": address, "progress": progress, "max_cost": max_cost,
               "poll_interval": poll_interval}  # fmt: skip
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
    concurrency: int | None = None,
    schema: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    retries: int = 2,
    backend: str = "local",
    address: str | None = None,
    progress: bool | ProgressFactory | None = None,
    max_cost: float | None = None,
    poll_interval: float = 30.0,
) -> BatchResult:
    """:func:`batch` for async code (``await aimu.aio.batch(...)``), same options.

    Cancelling it stops the batch; what finished is in the checkpoint (or iterate a
    :class:`BatchRun` to keep it in hand)."""
    options = {"agent": agent, "concurrency": concurrency, "schema": schema,
               "checkpoint": checkpoint, "retries": retries, "backend": backend,
               "address": address, "progress": progress, "max_cost": max_cost,
               "poll_interval": poll_interval}  # fmt: skip
    run = BatchRun(task, items, **options)
    async for _ in run:
        pass
    return run.result()


def _check_options(
    concurrency: int | None, retries: int, backend: str, max_cost: Any, poll_interval: Any
) -> None:
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise ValueError(f"concurrency must be an int >= 1, not {concurrency!r}")
    for name, value in (("max_cost", max_cost), ("poll_interval", poll_interval)):
        if value is None and name == "max_cost":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"{name} must be a number > 0, not {value!r}")
        if value == float("inf"):
            raise ValueError(f"{name} must be finite, not {value!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be an int >= 0, not {retries!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")


def _price_name(client: ModelClient) -> str:
    return f"{client.provider}:{client.model}"
