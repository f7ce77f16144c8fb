"""What the sub-agents of a spawn tool are made of, checked once when the tool is built.

:func:`profiles` turns ``make_subagent_tool``'s arguments (one generic sub-agent, or typed
specialists over the factory's tier) into :class:`Profile` values, raising ``TypeError`` or
``ValueError`` for anything a sub-agent could not be built from, so nothing fails later.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aimu._checks import positive_number, whole_number
from aimu.agents.compaction import Compaction
from aimu.agents.inbox import Inbox
from aimu.agents.loop import (
    check_compaction,
    check_generate_kwargs,
    check_inbox,
    check_policy,
    check_thinking,
    index_tools,
)
from aimu.models.base import ModelClient
from aimu.models.registry import providers
from aimu.tools.approval import Policy, approve_all
from aimu.tools.groups import ToolGroup, check_groups

SPEC_KEYS = frozenset(
    {
        "system_message",
        "description",
        "tools",
        "model",
        "model_options",
        "thinking",
        "generate_kwargs",
        "max_iterations",
        "compaction",
        "inbox",
        "tool_groups",
        "tool_approval",
    }
)
MIN_TIMEOUT, MAX_TIMEOUT = 1, 900


@dataclass(frozen=True)
class Profile:
    """What one kind of sub-agent is made of."""

    label: str
    system_message: str
    description: str
    tools: dict[str, Callable]
    model: str | ModelClient
    model_options: dict[str, Any]
    max_iterations: int
    tool_approval: Policy | None
    compaction: Compaction | None = None
    inbox: Inbox | None = None
    thinking: bool | str | None = None
    generate_kwargs: dict[str, Any] | None = None
    tool_groups: tuple[ToolGroup, ...] = ()


@dataclass(frozen=True)
class Factory:
    """The factory-level tier a typed spec falls back on; its objects are checked here."""

    model: str | ModelClient
    max_iterations: int
    tool_approval: Policy | None
    compaction: Compaction | None
    inbox: Inbox | None

    def __post_init__(self) -> None:
        check_policy(self.tool_approval, "tool_approval")
        _check_model(self.model, {}, "model")
        check_compaction(self.compaction, "compaction")
        check_inbox(self.inbox, "inbox")


def check_timeout(timeout: Any) -> float:
    """``timeout`` as a float of seconds, refused outside ``MIN_TIMEOUT``-``MAX_TIMEOUT``."""
    positive_number(timeout, "timeout", unit="seconds")
    if not MIN_TIMEOUT <= timeout <= MAX_TIMEOUT:
        raise ValueError(
            f"timeout must be between {MIN_TIMEOUT} and {MAX_TIMEOUT} seconds, not {timeout!r}"
        )
    return float(timeout)


def profiles(
    factory: Factory,
    system_message: Any,
    tools: Iterable[Callable] | None,
    agent_types: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, Profile]:
    """The generic sub-agent (``agent_types=None``), or each typed specialist by name."""
    allowlist = index_tools(tools or (), "tools")
    if agent_types is None:
        if not isinstance(system_message, str):
            raise TypeError("system_message must be a string")
        generic = Profile(
            label="subagent",
            system_message=system_message,
            description="",
            tools=allowlist,
            model=factory.model,
            model_options={},
            max_iterations=factory.max_iterations,
            tool_approval=factory.tool_approval,
            compaction=factory.compaction,
            inbox=factory.inbox,
        )
        return {"subagent": generic}
    if not isinstance(agent_types, Mapping) or not agent_types:
        raise ValueError("agent_types must be a non-empty dict of name -> spec")
    return {name: _typed_profile(name, spec, factory) for name, spec in agent_types.items()}


def _typed_profile(name: Any, spec: Any, factory: Factory) -> Profile:
    """One specialist, its keys taken with the precedence ``aimu.agents.subagent`` gives."""
    label = _spec_label(name, spec)
    system_message = spec.get("system_message")
    if not isinstance(system_message, str) or not system_message.strip():
        raise ValueError(f"{label} needs a 'system_message' string")
    description = spec.get("description", "")
    if not isinstance(description, str):
        raise TypeError(f"{label}['description'] must be a string")
    model = spec.get("model", factory.model)
    options = spec.get("model_options") or {}
    if not isinstance(options, Mapping):
        raise TypeError(f"{label}['model_options'] must be a dict")
    _check_model(model, options, f"{label}['model']")
    iterations = spec.get("max_iterations", factory.max_iterations)
    whole_number(iterations, f"{label}['max_iterations']")
    if "tool_approval" in spec:
        policy = spec["tool_approval"]
        check_policy(policy, f"{label}['tool_approval']")
        policy = approve_all if policy is None else policy
    else:
        policy = factory.tool_approval
    compaction = spec.get("compaction", factory.compaction)  # membership: None turns it off
    check_compaction(compaction, f"{label}['compaction']")
    inbox = spec.get("inbox", factory.inbox)
    check_inbox(inbox, f"{label}['inbox']")
    try:
        thinking = check_thinking(spec.get("thinking"))
        generate_kwargs = spec.get("generate_kwargs")
        if generate_kwargs is not None:
            generate_kwargs = check_generate_kwargs(generate_kwargs)
        groups = tuple(check_groups(spec.get("tool_groups"), f"{label}['tool_groups']"))
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{label}: {exc}") from None
    tools = index_tools(spec.get("tools") or (), f"{label}['tools']")
    return Profile(
        name,
        system_message,
        description,
        tools,
        model,
        dict(options),
        iterations,
        policy,
        compaction=compaction,
        inbox=inbox,
        thinking=thinking,
        generate_kwargs=generate_kwargs,
        tool_groups=groups,
    )


def _spec_label(name: Any, spec: Any) -> str:
    """``agent_types[name]``, once the name, the spec's type and its keys are checked."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"agent_types names must be non-empty strings, not {name!r}")
    if not isinstance(spec, Mapping):
        raise TypeError(f"agent_types[{name!r}] must be a dict, not {type(spec).__name__}")
    label = f"agent_types[{name!r}]"
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        raise ValueError(
            f"{label} has unknown keys: {', '.join(map(str, unknown))}; "
            f"allowed keys are {', '.join(sorted(SPEC_KEYS))}"
        )
    return label


def _check_model(model: Any, options: Mapping[str, Any], label: str) -> None:
    if isinstance(model, ModelClient):
        if type(model).clone is ModelClient.clone:
            raise TypeError(
                f"{label}: {type(model).__name__} cannot be cloned, and every sub-agent needs "
                "its own client; pass a 'provider:model' string instead"
            )
        if options:
            raise ValueError(f"{label}: model_options need a 'provider:model' string")
    elif not isinstance(model, str) or not model.strip():
        raise TypeError(f"{label} must be a 'provider:model' string or a ModelClient")
    elif (provider := model.strip().partition(":")[0]) not in providers():
        raise ValueError(
            f"{label}: unknown model provider {provider!r}; use one of: {', '.join(providers())}"
        )
