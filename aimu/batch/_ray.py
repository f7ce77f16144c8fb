"""``backend="ray"``: the same batch, with each run on an actor of a Ray cluster.

The driver (retries, rate limits, checkpoint, progress) stays in this process; only the agent
runs move. A small pool of async actors each unpickles the agent template once and keeps one
model client, so connections are reused on every worker. Everything the template holds must
pickle; what cannot is named before anything starts.
"""

from __future__ import annotations

import hashlib
import itertools
from typing import Any, ClassVar

from aimu.agents.loop import AgentCore
from aimu.batch._run import Attempt, dump_value, fresh_conversation, load_value, local_attempt

#: Actors started per batch at most; each runs several items at once on its own event loop.
MAX_ACTORS = 4


class BatchSetupError(ValueError):
    """The batch cannot start as configured (the message says what to change)."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BatchSetupError("backend='ray' needs Ray: pip install 'aimu-jupyter[ray]'") from None
    return ray


def check_portable(template: AgentCore, schema: Any) -> bytes:
    """Pickle the template for the workers, or say which part of it cannot leave here."""
    from ray import cloudpickle

    for name, fn in template.tools.items():
        reason = getattr(fn, "__tool_local_only__", None)
        if reason:
            raise BatchSetupError(
                f"the tool {name!r} cannot run on a Ray worker: {reason}; "
                "use backend='local', or leave the tool out of this batch"
            )
    parts = {
        "the model client": template.client,
        "the approval policy": template.tool_approval,
        "deps": template.deps,
        "schema": schema,
    }
    parts.update({f"the tool {name!r}": fn for name, fn in template.tools.items()})
    for label, part in parts.items():
        try:
            cloudpickle.dumps(part)
        except Exception as exc:
            raise BatchSetupError(
                f"{label} cannot be sent to Ray workers ({type(exc).__name__}: {exc}); "
                "use backend='local', or make it picklable"
            ) from None
    return cloudpickle.dumps((fresh_conversation(template), schema))


class _Worker:
    """One actor: the agent template, unpickled once, run on fresh conversations."""

    def __init__(self, payload: bytes):
        from ray import cloudpickle

        template, self.schema = cloudpickle.loads(payload)
        self.attempt = local_attempt(template, self.schema)

    async def run(self, prompt: str) -> tuple[str, Any, dict[str, int]]:
        answer, value, usage = await self.attempt(prompt)
        return answer, dump_value(self.schema, value), usage


class RayPool:
    """The actors running one template; kept for the next batch of the same template.

    Starting actors costs seconds, so a pool is reused by later batches with the same
    template and concurrency on the same cluster connection. :meth:`discard` kills its
    actors, ending any run still going (an interrupted or failed batch does this).
    """

    _pools: ClassVar[dict[tuple[str, str, int], RayPool]] = {}

    @classmethod
    def for_template(
        cls, template: AgentCore, schema: Any, *, concurrency: int, address: str | None
    ) -> RayPool:
        ray = import_ray()
        payload = check_portable(template, schema)
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, ignore_reinit_error=True)
        job = ray.get_runtime_context().get_job_id()
        key = (job, hashlib.sha256(payload).hexdigest(), concurrency)
        pool = cls._pools.get(key)
        if pool is None:
            pool = cls._pools[key] = cls(ray, payload, schema, concurrency, key)
        return pool

    def __init__(self, ray: Any, payload: bytes, schema: Any, concurrency: int, key: tuple):
        count = max(1, min(MAX_ACTORS, concurrency))
        actor = ray.remote(_Worker).options(num_cpus=0, max_concurrency=-(-concurrency // count))
        self._ray = ray
        self._schema = schema
        self._key = key
        self._actors = [actor.remote(payload) for _ in range(count)]
        self._next = itertools.cycle(self._actors)

    def attempt(self) -> Attempt:
        ray = self._ray

        async def attempt(prompt: str) -> tuple[str, Any, dict[str, int]]:
            try:
                answer, value, usage = await next(self._next).run.remote(prompt)
            except ray.exceptions.RayTaskError as exc:
                cause = getattr(exc, "cause", None)
                if isinstance(cause, Exception):
                    raise cause from None
                raise
            return answer, load_value(self._schema, value), usage

        return attempt

    def discard(self) -> None:
        self._pools.pop(self._key, None)
        for actor in self._actors:
            self._ray.kill(actor)
