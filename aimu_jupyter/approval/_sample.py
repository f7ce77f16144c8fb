"""``%%agent --each rows --approve sample:K``: approve a batch by its first K rows.

The calls that would ask in rows 1..K are asked in the cell's approval panel, one at a time,
with the row they belong to shown above the question. The other rows wait. When the sample
rows have finished, the cell asks once more: "Approve the rest like these" lets the remaining
rows' calls of the tools approved in the sample run without asking (calls of any other tool
are refused, and the model reads why); "Stop the batch" starts no more rows, keeping what
finished. No answer within the approval timeout stops the batch.
"""

from __future__ import annotations

import asyncio
import html
from collections import Counter
from collections.abc import Callable
from typing import Any

from aimu.batch import current_item
from aimu.tools.approval import Decision, Denied
from aimu_jupyter.approval._panel import SLICE, WIDGET_VIEW, ApprovalPanels
from aimu_jupyter.approval._policy import NotebookPolicy, allowance

APPROVE_REST = "Approve the rest like these"
STOP = "Stop the batch"
PREFIX = "sample:"


def sample_size(approve: Any, label: str = "--approve") -> int | None:
    """K of ``--approve sample:K``, ``None`` for any other ``--approve``."""
    if not isinstance(approve, str) or not approve.strip().lower().startswith(PREFIX):
        return None
    text = approve.strip()[len(PREFIX) :]
    if not text.isdigit() or int(text) < 1:
        from IPython.core.error import UsageError

        raise UsageError(f"{label} {approve}: write sample:K with a whole number K >= 1")
    return int(text)


class SampleApproval:
    """The sample's questions, the decision about the rest, and the policy of every row."""

    def __init__(self, size: int, timeout: float):
        from IPython.display import display

        self.size = size
        self.prompts: list[str] = []
        self.timeout = timeout
        self.asked_rows: list[int] = []
        self.approved: set[str] = set()
        self.verdicts: Counter[str] = Counter()
        self._names: dict[str, str] = {}
        self._lock = asyncio.Lock()
        self._finished: set[int] = set()
        self._all_finished = asyncio.Event()
        self._decision: asyncio.Task[bool] | None = None
        self._handle = display({"text/plain": ""}, raw=True, display_id=True)
        self._row: int | None = None
        self._panels = ApprovalPanels(timeout, self._show, _RowContext(self._context))
        self.inner = NotebookPolicy(ask=self._ask)

    def attach(self, prompts: list[str], finished: list[int]) -> None:
        """The batch's prompts in row order, and the rows a checkpoint already holds."""
        self.prompts = prompts
        self.size = min(self.size, len(prompts))
        if self.size == 0:
            self._all_finished.set()
        for index in finished:
            self.row_finished(index)

    def close(self) -> None:
        if self._decision is not None and not self._decision.done():
            self._decision.cancel()

    # -- the policy ---------------------------------------------------------------------

    def requires_approval(
        self, tool_name: str, arguments: dict[str, Any], tool: Any
    ) -> bool | Decision:
        return self.inner.requires_approval(tool_name, arguments, tool)

    def for_agent(self, agent_name: str) -> SampleApproval:
        return self

    async def __call__(
        self, tool_name: str, arguments: dict[str, Any], tool: Any = None
    ) -> bool | Denied:
        row = current_item()
        key = allowance(tool_name, tool)
        if row is not None and row < self.size:
            async with self._lock:
                self._row = row
                if row not in self.asked_rows:
                    self.asked_rows.append(row)
                verdict = await self.inner.decide(tool_name, arguments, tool=tool)
            self.verdicts["approved" if verdict else "denied"] += 1
            if verdict:
                self.approved.add(key)
                self._names[key] = tool_name
            return verdict
        if key in self.approved:
            return True
        return Denied(
            f"{tool_name} was not approved for the sample rows, so the rest of the batch may "
            "not call it"
        )

    # -- the sample and the decision ------------------------------------------------------

    def row_finished(self, index: int) -> None:
        if index < self.size:
            self._finished.add(index)
            if len(self._finished) >= self.size:
                self._all_finished.set()

    async def admit(self, index: int) -> bool:
        """Whether row ``index`` may start: sample rows at once, the rest once approved."""
        if index < self.size:
            return True
        if self._decision is None:
            self._decision = asyncio.ensure_future(self._decide())
        return await asyncio.shield(self._decision)

    async def _decide(self) -> bool:
        await self._all_finished.wait()
        import ipywidgets as widgets

        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bool] = loop.create_future()

        def resolve(verdict: bool) -> None:
            loop.call_soon_threadsafe(lambda: answer.done() or answer.set_result(verdict))

        rest = len(self.prompts) - self.size
        tools = sorted(set(self._names.values()))
        allowed = ", ".join(f"<code>{html.escape(n)}</code>" for n in tools) or "no tool"
        text = widgets.HTML(
            f"<b>The first {self.size} rows ran.</b> Approve the other {rest} like these? "
            f"Their calls of {allowed} will run without asking; calls of any other tool that "
            "would ask are refused."
        )
        approve = widgets.Button(description=APPROVE_REST, button_style="success",
                                 layout=widgets.Layout(width="auto"))  # fmt: skip
        stop = widgets.Button(description=STOP, button_style="danger")
        approve.on_click(lambda _: resolve(True))
        stop.on_click(lambda _: resolve(False))
        box = widgets.VBox([text, widgets.HBox([approve, stop])])
        box.add_class("aimu-approval")
        view = {"version_major": 2, "version_minor": 0, "model_id": box.model_id}
        self._handle.update({"text/plain": self._summary(), WIDGET_VIEW: view}, raw=True)
        try:
            deadline = loop.time() + self.timeout
            while not answer.done() and loop.time() < deadline:
                await asyncio.wait({answer}, timeout=SLICE)
            go_on = answer.result() if answer.done() else False
        finally:
            for widget in (text, approve, stop, box.children[1], box):
                widget.close()
        ending = "the rest were approved like these" if go_on else "the batch was stopped"
        self._handle.update(
            {
                "text/plain": f"{self._summary()}; {ending}",
                "text/markdown": f"{self._summary()}; {ending}",
            },
            raw=True,
        )
        return go_on

    def _summary(self) -> str:
        asked = ", ".join(str(row + 1) for row in sorted(self.asked_rows)) or "none"
        counts = ", ".join(f"{n} {verdict}" for verdict, n in sorted(self.verdicts.items()))
        return f"approval sample: rows asked {asked} ({counts or 'no calls asked'})"

    async def _ask(self, tool_name: str, arguments: dict[str, Any], agent: str | None):
        return await self._panels.ask(tool_name, arguments, agent)

    def _show(self, extra: dict[str, Any] | None) -> None:
        self._handle.update({**self._context(), **(extra or {})}, raw=True)

    def _context(self) -> dict[str, Any]:
        row = self._row if self._row is not None else 0
        prompt = self.prompts[row] if row < len(self.prompts) else ""
        shown = prompt if len(prompt) <= 300 else prompt[:300] + "…"
        text = f"Row {row + 1} of {len(self.prompts)} (approval sample of {self.size}): {shown}"
        return {"text/plain": text, "text/markdown": html.escape(text)}


class _RowContext:
    """What the sample's panel shows above its question: the row it asks about (no cards)."""

    def __init__(self, bundle: Callable[[], dict[str, Any]]):
        self.bundle = bundle

    def tool_cards(self) -> tuple[()]:
        return ()
