"""``await run_agent(prompt, ...)``: the ``%%agent`` run as a coroutine, for loops and scripts.

Magic-only tools leave users stuck when a prompt has to run per row or per file; this is the
same run (same conversations, live display, approval panels, settings) called from code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aimu.models.base import ModelClient
from aimu_jupyter.run import _runner as runner
from aimu_jupyter.run._session import Session

_standalone: Session | None = None


async def run_agent(
    prompt: str,
    *,
    model: str | ModelClient | None = None,
    tools: str | list[Any] | None = None,
    approve: str | Callable | None = None,
    name: str | None = None,
    new: bool = False,
    system: str | None = None,
    max_iterations: int | None = None,
    interpolate: bool = False,
    display: bool | None = None,
    thinking: str | bool | None = None,
    generate_kwargs: dict[str, Any] | None = None,
    compaction: str | Callable | None = None,
    schema: type | None = None,
    trust_mcp: str | list[Any] | None = None,
) -> Any:
    """Run ``prompt`` as a ``%%agent`` cell would and return the final answer.

    ``model``: ``"provider:model"`` or a ModelClient. ``tools``: the ``--tools`` comma list,
    or a list mixing such names with tool functions and MCP clients. ``approve``: ``"auto"``,
    ``"ask"``, ``"deny"`` or a policy callable. ``name``/``new``: which conversation, as
    ``--name``/``--new``. ``interpolate``: fill ``{var}`` from the notebook, off by default
    (Python has f-strings). ``display``: show the live record (default: inside IPython).
    ``thinking``, ``generate_kwargs``, ``compaction`` (a policy, or ``"last:20"``) and
    ``schema`` (the answer comes back as a validated instance) are ``--thinking``,
    ``--option``, ``--compact`` and ``--schema``. ``trust_mcp`` is ``--trust-mcp``: names
    of (or, from ``tools``, the) MCP clients whose servers' annotations decide.

    Raises ``AgentInterrupted`` (a ``KeyboardInterrupt``) when stopped, so a loop of calls
    stops too, and ``AgentFailed`` when the model cannot be used::

        for path in paths:
            summaries[path] = await aimu_jupyter.run_agent(f"Summarise {path}", tools="fs",
                                                           new=True)
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("run_agent: prompt must be a non-empty string")
    session = _session()
    if interpolate:
        prompt = runner.interpolate(prompt, session.user_ns)
    if display is None:
        display = session.shell is not None
    return await runner.run(
        session,
        prompt,
        model=model,
        tools=tools,
        approve=approve,
        name=name,
        new=new,
        system=system,
        max_iterations=max_iterations,
        display=display,
        thinking=thinking,
        generate_kwargs=generate_kwargs,
        compact=compaction,
        schema=schema,
        trust_mcp=trust_mcp,
    )


def _session() -> Session:
    """The notebook's session (loading the extension if needed), or one for plain Python."""
    global _standalone
    try:
        from IPython import get_ipython
    except ImportError:
        shell = None
    else:
        shell = get_ipython()
    if shell is not None:
        from aimu_jupyter.magics._agent import magics_of

        return magics_of(shell).session
    if _standalone is None:
        _standalone = Session(None)
    return _standalone
