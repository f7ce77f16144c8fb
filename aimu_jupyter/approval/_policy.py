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
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aimu.tools.approval import Denied, read_only
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
    :func:`allowance` keys), shared across its runs. Who decided each call is kept for the
    record (:meth:`decided_by`).
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
        self._sources: deque[tuple[str, str]] = deque()
        #: Where "Always allow" was chosen, by allowance key (shown on the calls it covers).
        self.always_chosen = always_chosen if always_chosen is not None else {}
        self._let_through: deque[tuple[str, str]] = deque()

    def requires_approval(self, tool_name: str, arguments: dict[str, Any], tool: Any) -> bool:
        """Whether this call of ``tool`` is put to the policy (and its decision recorded)."""
        allowed = self.always_allowed
        for key in (tool_name, allowance(tool_name, tool)):
            if key in allowed:
                self._let_through.append((tool_name, self.always_chosen.get(key, "")))
                return False
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

    async def __call__(
        self, tool_name: str, arguments: dict[str, Any], tool: Any = None
    ) -> bool | Denied:
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
    ) -> bool | Denied:
        """Decide one call; ``agent`` is the sub-agent asking, shown on the panel. "Always
        allow" is remembered for ``tool`` itself (:func:`allowance`)."""
        if self.mode == "auto":
            return self._decided(tool_name, "policy", True)
        if self.mode == "deny":
            return self._decided(tool_name, "policy", Denied(DENY_REASON))
        if self.ask is None:
            return self._fallback(tool_name, "policy")
        preview = await _preview(tool, arguments)
        if preview is None:
            answer, reason = await self.ask(tool_name, arguments, agent)
        else:
            answer, reason = await self.ask(tool_name, arguments, agent, preview=preview)
        if answer == "timeout":
            return self._fallback(tool_name, "timeout")
        if answer == "always":
            key = allowance(tool_name, tool)
            self.always_allowed.add(key)
            self.always_chosen[key] = call_label(tool_name, arguments)
            return self._decided(tool_name, "always", True)
        if answer == "approve":
            return self._decided(tool_name, "user", True)
        return self._decided(tool_name, "user", Denied(reason.strip()))

    def decided_by(self, tool_name: str) -> str:
        """Who answered the oldest unreported decision about ``tool_name``."""
        for index, (name, source) in enumerate(self._sources):
            if name == tool_name:
                del self._sources[index]
                return source
        return "policy"

    def allowed_always(self, tool_name: str) -> str | None:
        """For the oldest unreported call of ``tool_name`` that "Always allow" let through,
        the call where it was chosen (``""`` if unknown); ``None`` if there is none."""
        for index, (name, chosen) in enumerate(self._let_through):
            if name == tool_name:
                del self._let_through[index]
                return chosen
        return None

    def _fallback(self, tool_name: str, source: str) -> bool | Denied:
        if headless_verdict(None) == "approve":
            return self._decided(tool_name, source, True)
        reason = HEADLESS_REASON
        if source == "timeout":
            reason = "no answer came in time"
        return self._decided(tool_name, source, Denied(reason))

    def _decided(self, tool_name: str, source: str, verdict: bool | Denied) -> bool | Denied:
        self._sources.append((tool_name, source))
        return verdict


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

    def requires_approval(self, tool_name: str, arguments: dict[str, Any], tool: Any) -> bool:
        return self.policy.requires_approval(tool_name, arguments, tool)

    def for_agent(self, agent_name: str) -> AgentPolicy:
        """The gate for a sub-agent this sub-agent spawns."""
        return self.policy.for_agent(agent_name)

    async def __call__(
        self, tool_name: str, arguments: dict[str, Any], tool: Any = None
    ) -> bool | Denied:
        return await self.policy.decide(tool_name, arguments, self.agent_name, tool=tool)
