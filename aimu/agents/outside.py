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
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from aimu.agents import events as ev
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

    ``chunk(phase, content)`` builds a chunk of the running agent; ``run_calls(calls,
    answered)`` dispatches calls of the run's own tools, putting results in ``answered``
    (the loop's ``_run_calls``); ``policy`` and ``emit`` are the run's.
    """

    def __init__(
        self,
        chunk: Callable[[Phase, Any], StreamChunk],
        run_calls: Callable[[list, dict[str, ToolResult]], AsyncIterator[StreamChunk]],
        policy: Any,
        emit: ev.Delivery | None,
        ids: tuple[str, str, str | None],
        iteration: int,
    ):
        self._chunk = chunk
        self._run_calls = run_calls
        self._policy = policy
        self._emit = emit
        self._ids = ids
        self._iteration = iteration
        self._seen: dict[str, OutsideToolCall] = {}
        self._started: dict[str, float] = {}
        #: Calls the agent ran itself this turn (counted with the run's tool calls).
        self.calls = 0

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
        if before is None:
            self.calls += 1
            self._started[call.id] = time.perf_counter()
            self._send(ev.ToolCallStarted, call_id=call.id, name=call.name,
                       arguments=call.arguments)  # fmt: skip
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
            self._send(
                ev.ToolCallFinished,
                call_id=call.id,
                name=call.name,
                duration_s=time.perf_counter() - self._started.get(call.id, time.perf_counter()),
                error=result if failed else None,
            )
        elif not call.finished and before is not None and before.status != call.status:
            progress = {**identity, "progress": call.status.replace("_", " ")}
            chunks.append(self._chunk(Phase.TOOL_PROGRESS, progress))
        return chunks

    async def _permission(self, request: PermissionRequest) -> AsyncIterator[StreamChunk]:
        """Put the agent's question to the run's policy; the answer goes back to the agent."""
        name, arguments, tool = request.name, dict(request.arguments), request.tool
        try:
            asking = await needs_asking(self._policy, name, arguments, tool)
        except Exception:
            logger.warning("requires_approval failed for %r; the call is refused", name,
                           exc_info=True)  # fmt: skip
            decision = Decision(False, CHECK_FAILED)
        else:
            if not asking:
                request.answer(True, False, "")
                return
            decision = None
        identity = {"id": request.id, "name": name}
        yield self._chunk(Phase.APPROVAL_REQUESTED, {**identity, "arguments": arguments})
        self._send(ev.ApprovalRequested, call_id=request.id, name=name, arguments=arguments)
        if decision is None:
            decision = await decide(self._policy, name, arguments, tool)
        always = decision.approved and decision.by == "always"  # the policy's Decision says
        request.answer(decision.approved, always, decision.reason)
        self._send(ev.ApprovalDecided, call_id=request.id, name=name,
                   approved=decision.approved, reason=decision.reason)  # fmt: skip
        yield self._chunk(
            Phase.APPROVAL_DECIDED,
            {**identity, **decided(decision)},
        )

    def _send(self, kind: type[ev.Event], **fields: Any) -> None:
        if self._emit:
            self._emit(kind(*self._ids, self._iteration, **fields))
