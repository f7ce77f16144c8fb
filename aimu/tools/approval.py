"""Approval policies: the gate each tool call passes before it runs.

A policy is ``policy(tool_name, arguments)`` returning ``True`` (run it), ``False`` or a
:class:`Denied` (don't), or an awaitable of either. A policy may also have a
``requires_approval(tool_name, arguments) -> bool`` method: calls it answers ``False`` for run
without being put to the policy and without an approval record (the notebook uses this so
reading tools do not ask).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger("aimu.tools")

Policy = Callable[[str, dict[str, Any]], "bool | Denied | Awaitable[bool | Denied]"]


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


@dataclass(slots=True)
class Decision:
    """The outcome of asking a policy."""

    approved: bool
    reason: str = ""


def needs_asking(policy: Policy, tool_name: str, arguments: dict[str, Any]) -> bool:
    """Whether ``policy`` must be consulted (and the decision recorded) for this call."""
    if policy is approve_all:
        return False
    check = getattr(policy, "requires_approval", None)
    return True if check is None else bool(check(tool_name, arguments))


async def decide(policy: Policy, tool_name: str, arguments: dict[str, Any]) -> Decision:
    """Ask ``policy`` about one call. A policy that raises refuses; it never approves."""
    try:
        verdict = policy(tool_name, arguments)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception:
        logger.warning("approval policy failed for tool %r; the call is refused", tool_name,
                       exc_info=True)  # fmt: skip
        return Decision(False, "the approval check failed")
    if isinstance(verdict, Denied):
        return Decision(False, verdict.reason)
    return Decision(bool(verdict))


def refusal_message(tool_name: str, decision: Decision) -> str:
    """The tool message a model reads for a refused call."""
    if decision.reason:
        return f"Tool '{tool_name}' was not approved: {decision.reason}"
    return f"Tool '{tool_name}' was not approved."
