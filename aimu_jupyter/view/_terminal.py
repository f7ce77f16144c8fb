"""A run printed as it happens, for terminal IPython (a display cannot change once shown).

The answer's text is written as it streams; each tool call is a line when it starts, its
approval and a few lines of its result follow. A sub-agent's lines are indented under the
call that started it. A ``--schema`` run's answer is printed once validated, as a table. The
run's footer (model, tokens, time) closes the output. Everything
is written through :func:`aimu.text.visible`: a model's or a server's escape sequences
are shown, never acted on by the terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from aimu.models.chunks import Phase, StreamChunk
from aimu.text import visible
from aimu_jupyter.approval._ask import call_text
from aimu_jupyter.view._record import (
    STOPPED,
    RunRecord,
    approval_line,
    image_line,
    plan_lines,
    progress_text,
    table_lines,
)

#: At most this many lines of a tool's result are printed.
RESULT_LINES = 6
INDENT = "    "


def _stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


class TextStream:
    """Prints ``record``'s run chunk by chunk; feed each chunk after the record took it."""

    def __init__(self, record: RunRecord, write: Callable[[str], None] = _stdout):
        self.record = record
        self._write = write
        self._line_start = True

    def feed(self, chunk: StreamChunk) -> None:
        indent = INDENT * self._depth(chunk.agent)
        content = chunk.content
        phase = chunk.phase
        if phase is Phase.TEXT and isinstance(content, str) and content:
            if self.record.structured and not indent:
                return  # the answer is shown once validated (close)
            if self._line_start:
                content = indent + content
            self._out(content.replace("\n", "\n" + indent) if indent else content)
        elif phase is Phase.TOOL_CALL:
            call = call_text(str(content.get("name", "")), content.get("arguments") or {})
            self._line(f"{indent}[tool {call}] running")
        elif phase is Phase.APPROVAL_DECIDED:
            card = self.record.pending_tool(str(content.get("id", "")))
            if card is not None and card["approval"]:
                self._line(f"{indent}  {approval_line(card['approval'])}")
        elif phase is Phase.TOOL_PROGRESS:
            self._line(f"{indent}  … {progress_text(content.get('progress'))}")
        elif phase is Phase.TOOL_RESULT:
            self._result(indent, str(content.get("id", "")))
        elif phase is Phase.PLAN:
            entries = [e for e in content.get("entries") or () if isinstance(e, dict)]
            self._line(f"{indent}[plan]")
            shown = [{"content": e.get("content", ""), "status": e.get("status")} for e in entries]
            for line in plan_lines(shown):
                self._line(f"{indent}  {line}")

    def close(self) -> None:
        """The run's end: its status when it did not finish, then the footer."""
        record = self.record
        answer = [e for e in record.events if e["type"] == "text"][-1:]
        if record.structured and answer:
            output = answer[0].get("output")
            lines = table_lines(output) if isinstance(output, dict) else [answer[0]["text"]]
            for line in lines:
                self._line(line)
        if record.status == "interrupted":
            self._line(f"[{STOPPED}] The conversation is kept.")
        elif record.status == "error":
            self._line(f"[error] {record.error or 'the run failed'}")
        self._line(f"-- {record.footer()}")

    def _result(self, indent: str, call_id: str) -> None:
        card = self.record.pending_tool(call_id)
        if card is None:
            return
        lines = (card["result"] or "").rstrip().split("\n")
        for line in lines[:RESULT_LINES]:
            self._line(f"{indent}  | {line}")
        if len(lines) > RESULT_LINES:
            self._line(f"{indent}  | … ({len(lines) - RESULT_LINES} more lines)")
        for image in card["images"]:
            self._line(f"{indent}  {image_line(image)}")

    def _depth(self, agent: str) -> int:
        root = self.record.agent
        return agent[len(root) :].count("/") if agent.startswith(root) else 0

    def _line(self, text: str) -> None:
        if not self._line_start:
            self._out("\n")
        self._out(text + "\n")

    def _out(self, text: str) -> None:
        self._write(visible(text))
        self._line_start = text.endswith("\n")
