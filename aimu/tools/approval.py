"""Approval policies: the gate each tool call passes before it runs.

A policy is ``policy(tool_name, arguments)`` returning ``True`` (run it), ``False`` or a
:class:`Denied` (don't), a :class:`Decision` (when it also says who decided), or an awaitable
of any of these. ``arguments`` are the values the tool will
receive, already coerced to its declared types. A policy may also have a
``requires_approval(tool_name, arguments)`` method: calls it answers ``False`` for run
without being put to the policy and without an approval record; a :class:`Decision` it
returns decides the call without asking (a standing "Always allow"), recorded as decided
and never as awaiting approval. If that method also takes a
``tool`` parameter, it is given the tool function itself, so it can decide from what the tool
is (:func:`read_only`) rather than from its name; the notebook's policy works this way.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger("aimu.tools")

Policy = Callable[
    [str, dict[str, Any]], "bool | Denied | Decision | Awaitable[bool | Denied | Decision]"
]


@dataclass(frozen=True)
class Denied:
    """A refusal that says why; returned by a policy instead of ``False``.

    The reason is written for the model, which reads it in the refusal and can correct its
    call rather than retry it ("only paths under ./data may be written"). It lands in the
    conversation, so keep it free of anything the model should not see. ``Denied`` is falsy,
    so code that tests a verdict with ``if verdict:`` treats it as the refusal it is.
    """

    reason: str = ""

    def __bool__(self) -> bool:
        return False


def approve_all(tool_name: str, arguments: dict[str, Any]) -> bool:
    """The default policy: every call runs."""
    return True


def deny_all(tool_name: str, arguments: dict[str, Any]) -> Denied:
    """Refuse every call, telling the model that tools are not available."""
    return Denied("tool calls are disabled for this run; answer without tools")


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of asking a policy; a policy may return one to say who decided.

    ``by`` names the decider (``"policy"`` unless the policy says otherwise, e.g.
    ``"always"`` for a standing "Always allow"), ``chosen_at`` where that choice was made
    (free text, ``""`` when there is none). Both travel in the ``APPROVAL_DECIDED`` chunk.
    A refusal is falsy, like :class:`Denied`.
    """

    approved: bool
    reason: str = ""
    by: str = "policy"
    chosen_at: str = ""

    def __bool__(self) -> bool:
        return self.approved


CHECK_FAILED = "the approval check failed"


def read_only(tool: Any) -> bool | None:
    """A tool's own classification, ``__tool_read_only__``: ``True`` (it only reads),
    ``False`` (it writes, executes, submits or spawns) or ``None`` (undeclared).

    Anything other than ``True`` or ``None`` counts as ``False``, so a mistyped flag asks.
    """
    value = getattr(tool, "__tool_read_only__", None)
    return value if value is None or value is True else False


def asks_because(tool: Any) -> str:
    """Why a call of ``tool`` is put to the policy, as the tool itself says
    (``__tool_asks_because__``, e.g. an MCP tool of an untrusted server); ``""`` when the
    tool says nothing."""
    why = getattr(tool, "__tool_asks_because__", "")
    return why if isinstance(why, str) else ""


async def needs_asking(
    policy: Policy, tool_name: str, arguments: dict[str, Any], tool: Any = None
) -> bool | Decision:
    """Whether ``policy`` must be consulted (and the decision recorded) for this call, or
    the :class:`Decision` its ``requires_approval`` made without asking (check it first:
    a refusal is falsy).

    Raises whatever the policy's ``requires_approval`` raises; the caller refuses the call.
    """
    if policy is approve_all:
        return False
    check = getattr(policy, "requires_approval", None)
    if check is None:
        return True
    if _takes_tool(getattr(check, "__func__", check)):
        answer = check(tool_name, arguments, tool=tool)
    else:
        answer = check(tool_name, arguments)
    if inspect.isawaitable(answer):
        answer = await answer
    return _checked(answer) if isinstance(answer, Decision) else bool(answer)


def _takes_tool(check: Callable) -> bool:
    """Whether ``requires_approval`` accepts ``tool=`` (asked once per function)."""
    try:
        return _signature_takes_tool(check)
    except TypeError:  # an unhashable callable: not cached
        return _signature_takes_tool.__wrapped__(check)


@functools.lru_cache(maxsize=256)
def _signature_takes_tool(check: Callable) -> bool:
    try:
        parameters = inspect.signature(check).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "tool" or p.kind is p.VAR_KEYWORD for p in parameters)


async def decide(
    policy: Policy, tool_name: str, arguments: dict[str, Any], tool: Any = None
) -> Decision:
    """Ask ``policy`` about one call (with ``tool=`` when it takes one, as for
    ``requires_approval``). A policy that raises refuses; it never approves."""
    try:
        if tool is not None and _takes_tool(policy):
            verdict = policy(tool_name, arguments, tool=tool)
        else:
            verdict = policy(tool_name, arguments)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if isinstance(verdict, Decision):
            return _checked(verdict)
        if isinstance(verdict, Denied):
            return Decision(False, verdict.reason)
        return Decision(bool(verdict))
    except Exception:
        logger.warning("approval policy failed for tool %r; the call is refused", tool_name,
                       exc_info=True)  # fmt: skip
        return Decision(False, CHECK_FAILED)


def _checked(decision: Decision) -> Decision:
    """A policy's own :class:`Decision`, with its fields made the types the chunk promises."""
    return Decision(
        decision.approved is True,
        decision.reason if isinstance(decision.reason, str) else str(decision.reason),
        decision.by if isinstance(decision.by, str) and decision.by else "policy",
        decision.chosen_at if isinstance(decision.chosen_at, str) else str(decision.chosen_at),
    )


def decided(decision: Decision) -> dict[str, Any]:
    """What an ``APPROVAL_DECIDED`` chunk says of ``decision``: ``approved``, ``reason``,
    ``by`` and, when the policy gave one, ``chosen_at``."""
    said = {"approved": decision.approved, "reason": decision.reason, "by": decision.by}
    return {**said, "chosen_at": decision.chosen_at} if decision.chosen_at else said


def refusal_message(tool_name: str, decision: Decision) -> str:
    """The tool message a model reads for a refused call."""
    if decision.reason:
        return f"Tool '{tool_name}' was not approved: {decision.reason}"
    return f"Tool '{tool_name}' was not approved."
