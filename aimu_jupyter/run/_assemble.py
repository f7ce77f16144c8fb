"""From a :class:`~aimu_jupyter.run._spec.RunSpec` to the agent that runs it.

:func:`assemble` resolves what the spec names in the notebook (a model or policy held by a
variable, the ``--tools`` items, the ``%config AimuMagics.*`` defaults), and
:meth:`Assembly.agent` is the one place a notebook run's :class:`aimu.aio.Agent` is built,
for a cell, each ``--each`` row and ``run_agent``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from aimu.aio import Agent
from aimu.models.base import ModelClient
from aimu.models.errors import ModelError, NoDefaultModelError
from aimu_jupyter.approval._policy import MODES, NotebookPolicy
from aimu_jupyter.run import _options as readers
from aimu_jupyter.run._errors import AgentFailed
from aimu_jupyter.run._options import said
from aimu_jupyter.run._session import Session, Settings
from aimu_jupyter.run._spec import RunSpec
from aimu_jupyter.run._toolbox import Toolset, resolve_tools

NO_MODEL = (
    "No model chosen for the agent. Pick one with --model provider:model "
    "(e.g. --model openai:gpt-4o-mini or --model ollama:qwen3:8b), "
    "%config AimuMagics.model = 'provider:model', or the AIMU_MODEL environment variable."
)


@dataclass
class Assembly:
    """A spec resolved in a session: everything its agent is built from."""

    spec: RunSpec
    settings: Settings
    client: ModelClient
    toolset: Toolset
    #: ``auto``, ``ask``, ``deny`` or ``None`` (the notebook's default rule).
    mode: str | None
    #: The user's own policy (``--approve my_policy``), which then decides alone.
    custom: Callable | None
    max_iterations: int
    compaction: Callable | None
    #: The answer's type (``--schema``), or ``None`` for text.
    answer_type: Any

    def policy(self, **panel: Any) -> Any:
        """The run's approval: the user's own policy, else the notebook's for ``mode``
        (``panel``: who is asked, and the conversation's "Always allow" memory)."""
        return self.custom or NotebookPolicy(mode=self.mode, **panel)

    def agent(
        self,
        tool_approval: Any,
        settle: Callable[[], Awaitable[None]],
        stop: asyncio.Event,
        **run: Any,
    ) -> Agent:
        """The agent of this run: its tools run in the kernel (``settle`` lets the view catch
        up before a tool blocks, ``stop`` is the stop button); ``run`` adds what only one
        kind of run has (a name, an inbox, an event sink)."""
        system = self.spec.system_message
        return Agent(
            self.client,
            system_message=system if system is not None else self.settings.system or None,
            tools=self.toolset.for_kernel(settle, stop),
            tool_approval=tool_approval,
            max_iterations=self.max_iterations,
            concurrent_tool_calls=self.settings.concurrent_tool_calls,
            thinking=self.spec.thinking,
            generate_kwargs=self.spec.generate_kwargs,
            compaction=self.compaction,
            **run,
        )


async def assemble(session: Session, spec: RunSpec) -> Assembly:
    """Resolve ``spec`` in ``session``, each option falling back on the notebook's
    ``%config`` settings. Raises :class:`UsageError` for an option the user got wrong and
    :class:`~aimu_jupyter.run._errors.AgentFailed` when the model cannot be used."""
    settings = session.settings()
    user_ns = session.user_ns
    client = resolve_model(spec.model, settings, user_ns, spec.label("model"))
    toolset = await resolve_tools(
        _tool_items(spec.tools if spec.tools is not None else settings.tools),
        user_ns,
        session.registry,
        lambda: session.python_tool(settings.allowed_imports),
        session.notebook_tools,
        _tool_items(spec.trust_mcp or []),
    )
    approval = spec.tool_approval if spec.tool_approval is not None else settings.approval
    mode, custom = _approval(approval, user_ns, spec.label("tool_approval"))
    cache = readers.response_cache(
        client, spec.cache, settings.cache, spec.fresh, spec.label("cache")
    )
    return Assembly(
        spec=spec,
        settings=settings,
        client=cache,
        toolset=toolset,
        mode=mode,
        custom=custom,
        max_iterations=spec.max_iterations or settings.max_iterations,
        compaction=readers.compaction(spec.compaction, user_ns, spec.label("compaction")),
        answer_type=readers.schema(spec.schema, user_ns, spec.label("schema")),
    )


def resolve_model(
    model: str | ModelClient | None,
    settings: Settings,
    user_ns: Mapping[str, Any],
    label: str = "--model",
) -> ModelClient:
    """The client for ``--model``: a notebook variable holding a ``ModelClient``, a
    ``"provider:model"`` string, or the configured default."""
    if isinstance(model, ModelClient):
        return model
    if model is not None and not isinstance(model, str):
        raise UsageError(
            f"{label} takes 'provider:model' or a ModelClient, not {type(model).__name__}"
        )
    spec = (model or "").strip() or settings.model_spec()
    if spec.isidentifier() and spec in user_ns:
        value = user_ns[spec]
        if isinstance(value, ModelClient):
            return value
        if not isinstance(value, str):
            raise UsageError(
                f"{said(label, spec)}: the notebook variable {spec!r} holds a "
                f"{type(value).__name__}, not a ModelClient (e.g. aimu.client('openai:gpt-4o'))"
            )
        spec = value.strip()
    from aimu.models import registry

    try:
        return registry.client(spec or registry.default_model())
    except NoDefaultModelError:
        raise UsageError(f"{NO_MODEL} To work offline: pip install 'aimu-jupyter[local]'") from None
    except ModelError as exc:
        raise AgentFailed(str(exc)) from None
    except TypeError as exc:
        raise UsageError(f"{label}: {exc}") from None


def _tool_items(tools: str | list[Any]) -> list[Any]:
    """``--tools`` as a list of item names (and, from Python, tool objects)."""
    if isinstance(tools, str):
        return [item.strip() for item in tools.split(",") if item.strip()]
    items: list[Any] = []
    for item in tools:
        items.extend(_tool_items(item) if isinstance(item, str) else [item])
    return items


def _approval(
    value: str | Callable, user_ns: Mapping[str, Any], label: str
) -> tuple[str | None, Any]:
    """``(mode, custom policy)`` from ``--approve``: a mode name, a callable, or the name of
    a notebook variable holding a policy."""
    if callable(value):
        return None, value
    if not isinstance(value, str):
        raise UsageError(f"{said(label, value)}: use auto, ask, deny or a policy")
    text = value.strip().lower()
    if not text:
        return None, None
    if text in MODES:
        return text, None
    if value.strip() in user_ns and callable(user_ns[value.strip()]):
        return None, user_ns[value.strip()]
    raise UsageError(
        f"{said(label, value)}: use auto (run every call), ask (ask for every call), deny "
        "(refuse calls that would ask), or the name of a notebook variable holding a policy"
    )
