"""What the loop does with the events only an outside agent sends (see :mod:`aimu.models.base`).

An outside agent (reached over ACP) runs its own tools: their progress becomes the same
``TOOL_CALL`` / ``TOOL_PROGRESS`` / ``TOOL_RESULT`` chunks as the loop's own calls, so they
render as cards and land in the run record, but nothing is dispatched and nothing enters the
transcript. When it asks permission, the question goes to the run's policy like any gated
call (``APPROVAL_REQUESTED`` / ``APPROVAL_DECIDED``), and the answer goes back to the agent.
When it calls one of the run's own tools, the loop dispatches that call at once.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from aimu.models.base import HostedToolCall, OutsideToolCall, PermissionRequest, PlanUpdate
from aimu.models.chunks import Phase, StreamChunk
from aimu.tools.approval import CHECK_FAILED, Decision, decide, decided, needs_asking
from aimu.tools.results import ToolResult

logger = logging.getLogger("aimu.agents")

OutsideEvent = OutsideToolCall | PlanUpdate | PermissionRequest | HostedToolCall
INTERRUPTED = "Not executed: the run was interrupted before this call ran."


def unified_diff(diff: dict[str, Any]) -> str:
    """One reported file edit as a unified diff (``old`` ``None``: a new file)."""
    path = str(diff.get("path", ""))
    old = diff.get("old")
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        str(diff.get("new", "")).splitlines(keepends=True),
        fromfile="/dev/null" if old is None else path,
        tofile=path,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


class OutsideTurn:
    """One model turn's outside events, turned into chunks.

    ``chunk(phase, content)`` makes a chunk of the running agent (and reports it to the
    run's sink); ``run_calls(calls, answered)`` dispatches calls of the run's own tools,
    putting results in ``answered`` (the loop's ``_run_calls``); ``policy`` is the run's.
    """

    def __init__(
        self,
        chunk: Callable[[Phase, Any], StreamChunk],
        run_calls: Callable[[list, dict[str, ToolResult]], AsyncIterator[StreamChunk]],
        policy: Any,
    ):
        self._chunk = chunk
        self._run_calls = run_calls
        self._policy = policy
        self._seen: dict[str, OutsideToolCall] = {}

    async def chunks(self, event: OutsideEvent) -> AsyncIterator[StreamChunk]:
        if isinstance(event, OutsideToolCall):
            for chunk in self._tool(event):
                yield chunk
        elif isinstance(event, PlanUpdate):
            yield self._chunk(Phase.PLAN, {"entries": [dict(e) for e in event.entries]})
        elif isinstance(event, PermissionRequest):
            async for chunk in self._permission(event):
                yield chunk
        elif isinstance(event, HostedToolCall):
            answered: dict[str, ToolResult] = {}
            async for chunk in self._run_calls([event.call], answered):
                yield chunk
            result = answered.get(event.call.id) or ToolResult.error(INTERRUPTED)
            event.answer(result.text, result.is_error)

    def _tool(self, call: OutsideToolCall) -> list[StreamChunk]:
        before = self._seen.get(call.id)
        self._seen[call.id] = call
        chunks = []
        identity = {"id": call.id, "name": call.name}
        if before is None or before.arguments != call.arguments:
            chunks.append(self._chunk(Phase.TOOL_CALL, {**identity, "arguments": call.arguments}))
        if call.finished and not (before is not None and before.finished):
            result = "\n\n".join(filter(None, [call.output, *map(unified_diff, call.diffs)]))
            failed = call.status == "failed"
            chunks.append(
                self._chunk(
                    Phase.TOOL_RESULT,
                    {
                        **identity,
                        "result": result or f"({call.status})",
                        "is_error": failed,
                        "images": [],
                        "images_unsent": [],
                        "diffs": [dict(d) for d in call.diffs],
                    },
                )
            )
        elif not call.finished and before is not None and before.status != call.status:
            progress = {**identity, "progress": call.status.replace("_", " ")}
            chunks.append(self._chunk(Phase.TOOL_PROGRESS, progress))
        return chunks

    async def _permission(self, request: PermissionRequest) -> AsyncIterator[StreamChunk]:
        """Put the agent's question to the run's policy; the answer goes back to the agent."""
        name, arguments, tool = request.name, dict(request.arguments), request.tool
        decision: Decision | None = None
        try:
            asking = await needs_asking(self._policy, name, arguments, tool)
        except Exception:
            logger.warning("requires_approval failed for %r; the call is refused", name,
                           exc_info=True)  # fmt: skip
            asking, decision = True, Decision(False, CHECK_FAILED)
        identity = {"id": request.id, "name": name}
        if isinstance(asking, Decision):
            decision = asking  # decided without asking: a standing "Always allow"
        elif not asking:
            request.answer(True, False, "")
            return
        else:
            yield self._chunk(Phase.APPROVAL_REQUESTED, {**identity, "arguments": arguments})
            if decision is None:
                decision = await decide(self._policy, name, arguments, tool)
        always = decision.approved and decision.by == "always"  # the policy's Decision says
        request.answer(decision.approved, always, decision.reason)
        yield self._chunk(Phase.APPROVAL_DECIDED, {**identity, **decided(decision)})
