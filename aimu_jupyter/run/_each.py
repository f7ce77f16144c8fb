"""``%%agent --each rows``: the cell as a template, one fresh agent run per row.

``{column}`` fills from each row (a DataFrame's columns, a dict's keys; ``{item}`` is the
whole row), other ``{name}`` placeholders from the notebook's variables. The runs share the
cell's model, tools and options; the results come back as a DataFrame in row order.

No one can click Approve for hundreds of runs, so a batch whose tools would ask must be
given a declared policy (``--approve auto|deny|policy`` or ``$AIMU_APPROVAL``) and is
refused before it starts otherwise (the notebook's policy says which calls would ask:
:meth:`~aimu_jupyter.approval._policy.NotebookPolicy.unanswered`), or, where the cell can
show buttons, be approved by a sample (``--approve sample:K``,
:mod:`aimu_jupyter.approval._sample`): the first K rows ask, then "approve the rest like
these" or stop. Headless runs keep the rule above.

``--backend openai-batch|anthropic-batch`` sends the turns through the provider's batch API
at half price (one batch per model turn; see :func:`aimu.batch`), ``--max-cost USD`` stops
starting rows once the money spent and in flight would pass it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from IPython.core.error import UsageError

from aimu.batch import BatchRun, BatchSetupError
from aimu.models.errors import ModelError
from aimu_jupyter.approval._policy import NotebookPolicy
from aimu_jupyter.approval._sample import SampleApproval, sample_size
from aimu_jupyter.run._assemble import assemble
from aimu_jupyter.run._errors import AgentFailed, AgentInterrupted
from aimu_jupyter.run._prompt import row_renderer
from aimu_jupyter.run._session import Session
from aimu_jupyter.run._spec import RunSpec
from aimu_jupyter.run._toolbox import tool_name
from aimu_jupyter.view._choose import can_click


async def run_each(session: Session, template: str, spec: RunSpec, out: str | None = None) -> Any:
    """Run the batch ``spec.each`` describes; its results as a DataFrame go to
    ``user_ns[out]``, else are returned.

    When the batch is interrupted, what finished is still stored in ``out``. With a
    response cache (``cache``, ``%config AimuMagics.cache``, ``$AIMU_CACHE``) a re-run asks
    the model only about the rows it has not answered before.
    """
    each = spec.each
    assert each is not None
    user_ns = session.user_ns
    if each.rows not in user_ns:
        raise UsageError(
            f"{each.label('rows')} {each.rows}: no notebook variable is named {each.rows!r}"
        )
    sample_k = sample_size(spec.tool_approval, spec.label("tool_approval"))
    parts = await assemble(session, replace(spec, tool_approval=None) if sample_k else spec)
    sample = None
    if sample_k is not None and can_click(session):
        sample = SampleApproval(sample_k, parts.settings.approval_timeout)
    policy = sample or parts.policy()
    if isinstance(policy, NotebookPolicy):
        _refuse_unanswered(policy.unanswered(parts.toolset.tools))
    agent = parts.agent(policy, _yield, asyncio.Event())
    try:
        run = BatchRun(
            row_renderer(template, user_ns),
            user_ns[each.rows],
            agent=agent,
            schema=parts.answer_type,
            admit=sample.admit if sample else None,
            **each.batching(),
        )
    except (TypeError, ValueError) as exc:
        raise UsageError(f"%%agent {each.label('rows')} {each.rows}: {exc}") from None
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
        kept += [f"in {each.checkpoint}"] if each.checkpoint else []
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


def _refuse_unanswered(tools: list[Callable]) -> None:
    """A batch cannot show approval panels: tools that would ask need a declared policy."""
    asking = [tool_name(fn) for fn in tools]
    if asking:
        raise UsageError(
            "%%agent --each runs many agents at once, and no one can click Approve for each: "
            f"these tools would ask ({', '.join(asking)}). Declare the decision: --approve auto "
            "(run them), --approve deny (refuse them, reading tools still run), --approve "
            "my_policy (a notebook variable holding policy(name, arguments)), or, where the "
            "cell can show buttons, --approve sample:5 (approve the first 5 rows' calls, then "
            "the rest like them)"
        )


async def _yield() -> None:
    await asyncio.sleep(0)
