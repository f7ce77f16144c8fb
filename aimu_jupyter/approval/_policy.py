"""The notebook's approval policy: which calls ask, who answers, and what is recorded.

Whether a call asks is decided from the tool itself (``__tool_read_only__``, see
:func:`aimu.tools.approval.read_only`), never from its name or the route it took into
``--tools``: tools that write, execute, submit or spawn (``False``, which ``%tool --ask``
also records) ask; reading tools and undeclared functions run freely. The same gate serves
the run's agent and every sub-agent it spawns, at any depth. Interactively the question is
an inline panel (:mod:`.panel`); headless (nbclient, papermill, CI) or when no answer comes
in time, the declared policy decides: ``--approve``, else ``AIMU_APPROVAL`` (``auto`` or
``deny``), else deny.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aimu.tools.approval import Decision, read_only
from aimu.tools.identity import ToolIdentity, tool_identity
from aimu_jupyter.view._record import call_label

logger = logging.getLogger("aimu_jupyter")

MODES = ("auto", "ask", "deny")

HEADLESS_REASON = "no one is there to approve it (headless run)"
DENY_REASON = "the notebook refuses this kind of call (--approve deny)"

#: ``ask(tool_name, arguments, agent)``: ``agent`` names the sub-agent asking, else ``None``.
#: A tool with a preview (``__tool_preview__``) is asked about with ``preview=`` too: a MIME
#: bundle showing what the call would do (an edit's diff), shown instead of the arguments.
Ask = Callable[[str, dict[str, Any], str | None], Awaitable[tuple[str, str]]]


def headless_verdict(mode: str | None) -> str:
    """``"approve"`` or ``"deny"`` for a gated call no one can answer."""
    if mode == "auto":
        return "approve"
    if mode == "deny":
        return "deny"
    return "approve" if _environment_mode() == "auto" else "deny"


def _environment_mode() -> str:
    """``$AIMU_APPROVAL``: what decides a call no one can answer, when ``--approve`` did not."""
    return os.environ.get("AIMU_APPROVAL", "").strip().lower()


def allowance(tool_name: str, tool: Any) -> ToolIdentity | str:
    """What "Always allow" remembers: the tool's identity (:mod:`aimu.tools.identity`: the
    server it comes from, the factory's configuration, the function object), so a different
    tool that merely shares the name (a sub-agent's, another server's, a redefined
    function) still asks. Decided without the tool (a caller of the two-argument policy),
    the name alone is remembered, and covers every tool of that name."""
    return tool_name if tool is None else tool_identity(tool_name, tool)


class NotebookPolicy:
    """An approval policy (``policy(name, arguments)``) for one ``%%agent`` run.

    ``mode`` is ``None`` (the notebook default: tools declared as writing ask), ``"auto"``,
    ``"ask"`` (every call asks) or ``"deny"``; ``ask`` shows the panel and returns
    ``("approve" | "deny" | "always" | "timeout", reason)``, or is ``None`` when no one can
    answer (headless). ``always_allowed`` is the conversation's "Always allow" set (of
    :func:`allowance` keys), shared across its runs. Each answer is a
    :class:`~aimu.tools.approval.Decision` naming who decided (``"user"``, ``"policy"``,
    ``"timeout"`` or ``"always"``, with ``chosen_at``), which the ``APPROVAL_DECIDED``
    chunk carries to the record.
    """

    def __init__(
        self,
        *,
        mode: str | None = None,
        ask: Ask | None = None,
        always_allowed: set[ToolIdentity | str] | None = None,
        always_chosen: dict[Any, str] | None = None,
    ):
        if mode is not None and mode not in MODES:
            raise ValueError(f"approval mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.ask = ask
        self.always_allowed = always_allowed if always_allowed is not None else set()
        #: Where "Always allow" was chosen, by allowance key (shown on the calls it covers).
        self.always_chosen = always_chosen if always_chosen is not None else {}

    def requires_approval(
        self, tool_name: str, arguments: dict[str, Any], tool: Any
    ) -> bool | Decision:
        """Whether this call of ``tool`` is put to the policy (and its decision recorded); a
        call "Always allow" covers is decided at once, without asking: the decision."""
        chosen = self._standing(tool_name, tool)
        if chosen is not None:
            return Decision(True, by="always", chosen_at=chosen)
        return self._asks(tool)

    def unanswered(self, tools: Iterable[Callable]) -> list[Callable]:
        """The ``tools`` whose calls would ask and, with no one there to answer, fall to the
        default denial rather than to a declared decision (``--approve auto|deny``,
        ``$AIMU_APPROVAL``): a batch refuses to start with them."""
        if self.mode in ("auto", "deny") or _environment_mode() in ("auto", "deny"):
            return []
        return [tool for tool in tools if self._asks(tool)]

    def _asks(self, tool: Any) -> bool:
        return self.mode == "ask" or read_only(tool) is False

    def _standing(self, tool_name: str, tool: Any) -> str | None:
        """Where "Always allow" was chosen for this tool (``""`` if unknown), else ``None``."""
        for key in (tool_name, allowance(tool_name, tool)):
            if key in self.always_allowed:
                return self.always_chosen.get(key, "")
        return None

    async def __call__(
        self, tool_name: str, arguments: dict[str, Any], tool: Any = None
    ) -> Decision:
        return await self.decide(tool_name, arguments, tool=tool)

    def for_agent(self, agent_name: str) -> AgentPolicy:
        """This policy for a sub-agent's calls: same rules, and the panel names the asker."""
        return AgentPolicy(self, agent_name)

    async def decide(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        agent: str | None = None,
        tool: Any = None,
    ) -> Decision:
        """Decide one call; ``agent`` is the sub-agent asking, shown on the panel. "Always
        allow" is remembered for ``tool`` itself (:func:`allowance`)."""
        chosen = self._standing(tool_name, tool)
        if chosen is not None:
            return Decision(True, by="always", chosen_at=chosen)
        if self.mode == "auto":
            return Decision(True)
        if self.mode == "deny":
            return Decision(False, DENY_REASON)
        if self.ask is None:
            return _fallback("policy")
        preview = await _preview(tool, arguments)
        if preview is None:
            answer, reason = await self.ask(tool_name, arguments, agent)
        else:
            answer, reason = await self.ask(tool_name, arguments, agent, preview=preview)
        if answer == "timeout":
            return _fallback("timeout")
        if answer == "always":
            key = allowance(tool_name, tool)
            self.always_allowed.add(key)
            self.always_chosen[key] = call_label(tool_name, arguments)
            return Decision(True, by="always")
        if answer == "approve":
            return Decision(True, by="user")
        return Decision(False, reason.strip(), by="user")


def _fallback(source: str) -> Decision:
    """The declared decision for a call no one answered (headless, or not in time)."""
    if headless_verdict(None) == "approve":
        return Decision(True, by=source)
    reason = "no answer came in time" if source == "timeout" else HEADLESS_REASON
    return Decision(False, reason, by=source)


async def _preview(tool: Any, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The tool's own view of what the call would do, or ``None`` (none, or it failed)."""
    preview = getattr(tool, "__tool_preview__", None)
    if preview is None:
        return None
    try:
        bundle = await preview(dict(arguments))
    except Exception:
        logger.warning("the approval preview of %r failed", tool, exc_info=True)
        return None
    return bundle if isinstance(bundle, dict) and bundle else None


class AgentPolicy:
    """A :class:`NotebookPolicy` bound to one sub-agent: the same gate, and its panel says
    which sub-agent asks."""

    def __init__(self, policy: NotebookPolicy, agent_name: str):
        self.policy = policy
        self.agent_name = agent_name

    def requires_approval(
        self, tool_name: str, arguments: dict[str, Any], tool: Any
    ) -> bool | Decision:
        return self.policy.requires_approval(tool_name, arguments, tool)

    def for_agent(self, agent_name: str) -> AgentPolicy:
        """The gate for a sub-agent this sub-agent spawns."""
        return self.policy.for_agent(agent_name)

    async def __call__(
        self, tool_name: str, arguments: dict[str, Any], tool: Any = None
    ) -> Decision:
        return await self.policy.decide(tool_name, arguments, self.agent_name, tool=tool)
