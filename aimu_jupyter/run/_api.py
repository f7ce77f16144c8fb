"""``await run_agent(prompt, ...)``: the ``%%agent`` run as a coroutine, for loops and scripts.

Magic-only tools leave users stuck when a prompt has to run per row or per file; this is the
same run (same conversations, live display, approval panels, settings) called from code.
"""

from __future__ import annotations

import inspect
from typing import Any

from aimu_jupyter.run import _runner as runner
from aimu_jupyter.run._prompt import interpolate as fill
from aimu_jupyter.run._session import Session
from aimu_jupyter.run._spec import RunSpec, keywords

_standalone: Session | None = None


async def run_agent(prompt: str, *, interpolate: bool = False, **options: Any) -> Any:
    """Run ``prompt`` as a ``%%agent`` cell would and return the final answer.

    The options are :class:`aimu.Agent`'s names for the cell's flags: ``model``
    (``"provider:model"`` or a ModelClient), ``tools`` (the ``--tools`` comma list, or a list
    mixing such names with tool functions and MCP clients), ``tool_approval`` (``"auto"``,
    ``"ask"``, ``"deny"`` or a policy callable), ``system_message``, ``max_iterations``,
    ``thinking``, ``generate_kwargs`` (a dict), ``compaction`` (a policy, or ``"last:20"``),
    ``schema`` (the answer comes back as a validated instance), ``trust_mcp`` (names of, or
    from ``tools``, the MCP clients whose servers' annotations decide), ``cache`` and
    ``fresh``; ``name``/``new`` pick the conversation as ``--name``/``--new``.
    ``interpolate`` fills ``{var}`` from the notebook, off by default (Python has
    f-strings). ``display`` shows the live record (default: inside IPython). The older
    spellings ``approve=`` and ``system=`` still work, with a ``DeprecationWarning``.

    Raises ``AgentInterrupted`` (a ``KeyboardInterrupt``) when stopped, so a loop of calls
    stops too, and ``AgentFailed`` when the model cannot be used::

        for path in paths:
            summaries[path] = await aimu_jupyter.run_agent(f"Summarise {path}", tools="fs",
                                                           new=True)
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("run_agent: prompt must be a non-empty string")
    session = _session()
    if options.get("display") is None:
        options["display"] = session.shell is not None
    spec = RunSpec.from_keywords(options)
    if interpolate:
        prompt = fill(prompt, session.user_ns)
    return await runner.run(session, prompt, spec)


def _signature() -> inspect.Signature:
    """``run_agent``'s signature as ``help`` shows it: the prompt, then every option."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    defaults = RunSpec.__dataclass_fields__
    return inspect.Signature(
        [
            inspect.Parameter("prompt", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str),
            inspect.Parameter("interpolate", keyword, default=False, annotation=bool),
            *(
                inspect.Parameter(
                    name, keyword, default=None if name == "display" else defaults[name].default
                )
                for name in keywords()
            ),
        ],
        return_annotation=Any,
    )


run_agent.__signature__ = _signature()  # type: ignore[attr-defined]


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
