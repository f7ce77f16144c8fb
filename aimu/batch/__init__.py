"""Many agent runs over data: ``aimu.batch(task, items, agent=...)``.

Each item gets a fresh conversation of the ``agent`` template (same model, tools, policy and
options), at most ``concurrency`` at once on one event loop and one shared client, or on a
Ray cluster with ``backend="ray"``, or through the provider's batch API at half price with
``backend="openai-batch"`` / ``"anthropic-batch"`` (one provider batch per model turn).
Results come back in input order; a checkpoint file keeps every finished item (and the ids
of submitted provider batches), so running the same batch again only runs what is missing
or failed. ``max_cost=`` stops starting items at a spending ceiling (:data:`aimu.prices`).
``progress=`` takes a display factory: :class:`TextProgress` is the library's text bar, the
one a display registered with :func:`set_default_progress` may fall back on.

    results = aimu.batch("Classify this ticket: {text}", tickets_df, agent=agent,
                         schema=Ticket, checkpoint="tickets.jsonl")
    results.to_pandas()
"""

import sys
import types
from typing import Any

from aimu.batch._api import BatchInterrupted, BatchRun, abatch, batch
from aimu.batch._progress import BatchStats, Progress, TextProgress, set_default_progress
from aimu.batch._ray import BatchSetupError
from aimu.batch._results import BatchItem, BatchResult
from aimu.batch._run import current_item

__all__ = [
    "BatchInterrupted",
    "BatchItem",
    "BatchResult",
    "BatchRun",
    "BatchSetupError",
    "BatchStats",
    "Progress",
    "TextProgress",
    "abatch",
    "batch",
    "current_item",
    "set_default_progress",
]


class _BatchPackage(types.ModuleType):
    """This package, callable as :func:`batch`: ``aimu.batch(...)`` runs a batch and
    ``aimu.batch.BatchResult`` (or ``from aimu.batch import BatchResult``) names its types,
    so neither the function nor the package hides the other."""

    def __call__(self, *args: Any, **kwargs: Any) -> BatchResult:
        return batch(*args, **kwargs)


sys.modules[__name__].__class__ = _BatchPackage
