"""``%%agent --each rows``: the cell as a template, one fresh agent run per row.

``{column}`` fills from each row (a DataFrame's columns, a dict's keys; ``{item}`` is the
whole row), other ``{name}`` placeholders from the notebook's variables. The runs share the
cell's model, tools and options; the results come back as a DataFrame in row order.

No one can click Approve for hundreds of runs, so a batch whose tools would ask must be
given a declared policy (``--approve auto|deny|policy`` or ``$AIMU_APPROVAL``) and is
refused before it starts otherwise, or, where the cell can show buttons, be approved by a
sample (``--approve sample:K``, :mod:`.sample_approval`): the first K rows ask, then "approve
the rest like these" or stop. Headless runs keep the rule above.

``--backend openai-batch|anthropic-batch`` sends the turns through the provider's batch API
at half price (one batch per model turn; see :func:`aimu.batch`), ``--max-cost USD`` stops
starting rows once the money spent and in flight would pass it.
"""

from __future__ import annotations

import asyncio
import os
import string
from collections import ChainMap
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError

from aimu.aio import Agent
from aimu.batch import BatchRun, BatchSetupError
from aimu.models.errors import ModelError
from aimu.tools.approval import read_only
from aimu_jupyter.approval._policy import NotebookPolicy
from aimu_jupyter.approval._sample import SampleApproval, sample_size
from aimu_jupyter.magics import _options as run_options
from aimu_jupyter.run._errors import AgentFailed, AgentInterrupted
from aimu_jupyter.run._runner import _Names, resolve_options
from aimu_jupyter.run._session import Session
from aimu_jupyter.run._toolbox import tool_name
from aimu_jupyter.view._choose import can_click


async def run_each(
    session: Session,
    template: str,
    rows_name: str,
    *,
    out: str | None = None,
    concurrency: int | None = None,
    checkpoint: str | None = None,
    model: Any = None,
    tools: Any = None,
    approve: Any = None,
    system: str | None = None,
    max_iterations: int | None = None,
    thinking: str | bool | None = None,
    generate_kwargs: Any = None,
    compact: Any = None,
    schema: Any = None,
    trust_mcp: Any = None,
    cache: bool | str | None = None,
    fresh: bool = False,
    backend: str = "local",
    max_cost: float | None = None,
    poll_interval: float | None = None,
) -> Any:
    """Run the batch; its results as a DataFrame go to ``user_ns[out]``, else are returned.

    When the batch is interrupted, what finished is still stored in ``out``. With a
    response cache (``cache``, ``%config AimuMagics.cache``, ``$AIMU_CACHE``) a re-run asks
    the model only about the rows it has not answered before.
    """
    user_ns = session.user_ns
    if rows_name not in user_ns:
        raise UsageError(f"--each {rows_name}: no notebook variable is named {rows_name!r}")
    settings = session.settings()
    sample_k = sample_size(approve)
    if sample_k is not None:
        approve = None
    options = await resolve_options(
        session, settings, model, tools, approve, max_iterations, trust_mcp
    )
    client, toolset, mode, custom, iterations = options
    client = run_options.response_cache(client, cache, settings.cache, fresh)
    sample = None
    if sample_k is not None and can_click(session):
        sample = SampleApproval(sample_k, settings.approval_timeout)
    else:
        _refuse_undeclared_approval(toolset.tools, mode, custom)
    answer_type = run_options.schema(schema, user_ns)
    agent = Agent(
        client,
        system_message=system if system is not None else settings.system or None,
        tools=toolset.for_kernel(_yield, asyncio.Event()),
        tool_approval=sample or custom or NotebookPolicy(mode=mode),
        max_iterations=iterations,
        concurrent_tool_calls=settings.concurrent_tool_calls,
        thinking=run_options.thinking(thinking),
        generate_kwargs=run_options.generate_kwargs(generate_kwargs),
        compaction=run_options.compaction(compact, user_ns),
    )
    render = _renderer(template, user_ns)
    batching = {"backend": backend, "max_cost": max_cost}
    if poll_interval is not None:
        batching["poll_interval"] = poll_interval
    try:
        run = BatchRun(render, user_ns[rows_name], agent=agent, concurrency=concurrency,
                       checkpoint=checkpoint, schema=answer_type,
                       admit=sample.admit if sample else None, **batching)  # fmt: skip
    except (TypeError, ValueError) as exc:
        raise UsageError(f"%%agent --each {rows_name}: {exc}") from None
    if sample is not None:
        rows = sorted([*run.jobs, *run.resumed], key=lambda row: row.index)
        sample.attach([row.prompt for row in rows], [item.index for item in run.resumed])
    try:
        async for item in run:
            if sample is not None:
                sample.row_finished(item.index)
    except (asyncio.CancelledError, KeyboardInterrupt):
        partial = run.result()
        kept = [f"in {out}"] if out else []
        kept += [f"in {checkpoint}"] if checkpoint else []
        if out:
            user_ns[out] = partial.to_pandas()
        raise AgentInterrupted(
            f"batch interrupted: {len(partial)} of {partial.total} rows finished"
            + (f"; they are kept {' and '.join(kept)}" if kept else "")
        ) from None
    except (ModelError, BatchSetupError) as exc:
        raise AgentFailed(str(exc)) from None
    finally:
        if sample is not None:
            sample.close()
    frame = run.result().to_pandas()
    if out is None:
        return frame
    user_ns[out] = frame
    return None


def _refuse_undeclared_approval(tools: list[Callable], mode: str | None, custom: Any) -> None:
    """A batch cannot show approval panels: tools that would ask need a declared policy."""
    if custom is not None or mode in ("auto", "deny"):
        return
    if os.environ.get("AIMU_APPROVAL", "").strip().lower() in ("auto", "deny"):
        return
    asking = [tool_name(fn) for fn in tools if mode == "ask" or read_only(fn) is False]
    if asking:
        raise UsageError(
            "%%agent --each runs many agents at once, and no one can click Approve for each: "
            f"these tools would ask ({', '.join(asking)}). Declare the decision: --approve auto "
            "(run them), --approve deny (refuse them, reading tools still run), --approve "
            "my_policy (a notebook variable holding policy(name, arguments)), or, where the "
            "cell can show buttons, --approve sample:5 (approve the first 5 rows' calls, then "
            "the rest like them)"
        )


def _renderer(template: str, user_ns: dict[str, Any]) -> Callable[[Any], str]:
    """Row fields first, then notebook variables, for each ``{name}``."""
    names = _Names(user_ns)

    def render(row: Any) -> str:
        fields = {str(k): v for k, v in row.items()} if isinstance(row, dict) else {}
        try:
            return string.Formatter().vformat(template, (), ChainMap({"item": row}, fields, names))
        except KeyError as exc:
            raise ValueError(
                f"{{{exc.args[0]}}} is neither a field of the rows ({', '.join(fields)}) nor a "
                "notebook variable"
            ) from None

    return render


async def _yield() -> None:
    await asyncio.sleep(0)
