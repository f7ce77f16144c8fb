"""New cells below the agent's cell: proposed by the agent, or exported from its code.

A block of cells is published as ``application/vnd.aimu.cells+json`` in the running cell's
output; the lab extension (JupyterLab, Notebook 7) inserts them below that cell, unexecuted,
once. Other frontends show the Markdown fallback: each cell's source in a fenced block to
copy. A terminal IPython (no kernel) gets the code as its next input instead.
"""

from __future__ import annotations

import contextlib
import contextvars
import uuid
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aimu_jupyter.view._record import fence

MIME_TYPE = "application/vnd.aimu.cells+json"
VERSION = 1
KINDS = ("code", "markdown")


@dataclass
class CodeLog:
    """The code of one conversation's ``python`` tool calls, by tool-call id, and whether each
    ran cleanly. Ids are the model's and repeat across conversations, so each conversation
    keeps its own log (:func:`logging_code_to`)."""

    calls: dict[str, tuple[str, bool]] = field(default_factory=dict)

    def add(self, call_id: str | None, code: str, ok: bool) -> None:
        if call_id:
            self.calls[call_id] = (code, ok)

    def successful(self, call_id: str) -> str | None:
        code, ok = self.calls.get(call_id, ("", False))
        return code if ok else None


_running_log: contextvars.ContextVar[CodeLog | None] = contextvars.ContextVar(
    "aimu_code_log", default=None
)


@contextlib.contextmanager
def logging_code_to(log: CodeLog) -> Iterator[None]:
    """While a run of a conversation goes on, its ``python`` calls are kept in ``log``."""
    token = _running_log.set(log)
    try:
        yield
    finally:
        _running_log.reset(token)


def running_code_log() -> CodeLog | None:
    """The log of the conversation whose run is calling (``None`` outside a run)."""
    return _running_log.get()


def exported_cells(
    messages: list[dict[str, Any]], log: CodeLog, only: Collection[str] | None = None
) -> list[dict[str, str]]:
    """The conversation's successful ``python`` calls as code cells, in the order they ran.

    Each cell opens with a comment naming the run (the prompt that led to it) and the
    call's place in the export, so the notebook says where the code came from. ``only``
    limits the export to those tool-call ids (the calls of one run).
    """
    prompt = ""
    found: list[tuple[str, str]] = []
    for message in messages:
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            prompt = message["content"]
        for call in message.get("tool_calls") or ():
            if call["function"]["name"] != "python" or (
                only is not None and call["id"] not in only
            ):
                continue
            code = log.successful(call["id"])
            if code is not None:
                found.append((prompt, code))
    cells = []
    for number, (prompt, code) in enumerate(found, 1):
        header = f"# From the agent run {_quoted(prompt)}: python call {number} of {len(found)}"
        cells.append({"cell_type": "code", "source": f"{header}\n{code.strip()}\n"})
    return cells


def publish_cells(cells: Iterable[dict[str, str]], origin: str) -> dict[str, Any]:
    """Show ``cells`` for insertion below the running cell; returns the published record."""
    cells = [{"cell_type": c["cell_type"], "source": c["source"]} for c in cells]
    record = {"version": VERSION, "id": uuid.uuid4().hex, "origin": origin, "cells": cells}
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance() if InteractiveShell.initialized() else None
    if shell is not None and getattr(shell, "kernel", None) is None:
        shell.set_next_input("\n\n".join(c["source"].rstrip() for c in cells))
        return record
    from IPython.display import display

    bundle = {MIME_TYPE: record, "text/markdown": _markdown(cells), "text/plain": _plain(cells)}
    display(bundle, raw=True)
    return record


def _markdown(cells: list[dict[str, str]]) -> str:
    count = f"{len(cells)} cell{'s' if len(cells) != 1 else ''}"
    blocks = [f"**New {count} to add below** (copy each into a cell):"]
    for cell in cells:
        source = cell["source"].rstrip()
        if cell["cell_type"] == "code":
            blocks.append(fence(source, "python"))
        else:
            blocks.append("\n".join("> " + line for line in source.split("\n")))
    return "\n\n".join(blocks)


def _plain(cells: list[dict[str, str]]) -> str:
    return "\n\n".join(
        f"# --- new {c['cell_type']} cell ---\n{c['source'].rstrip()}" for c in cells
    )


def _quoted(prompt: str) -> str:
    line = " ".join(prompt.split())
    return repr(line if len(line) <= 60 else line[:59] + "…")
