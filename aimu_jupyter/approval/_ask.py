"""Asking for approval on stdin, where someone is there but no widget can be drawn.

``jupyter console`` and terminal IPython allow stdin but draw no widgets: the question is a
line to answer, ``Approve write_file(path='a.txt')? [y]es / [n]o / [a]lways / or type a
reason to deny:``. The prompt blocks the kernel's event loop while it waits, so an interrupt
is taken as ``KeyboardInterrupt`` at the prompt and turned into a cancellation of the run.
"""

from __future__ import annotations

import asyncio
import builtins
from typing import Any

from aimu.text import visible_line
from aimu_jupyter.run._wake import sigint_raises

#: Each argument value is shown as its repr, cut to this many characters.
VALUE_CHARS = 80

CHOICES = "[y]es / [n]o / [a]lways / or type a reason to deny: "


def call_text(tool_name: str, arguments: dict[str, Any], limit: int | None = VALUE_CHARS) -> str:
    """``write_file(path='a.txt', content='hi')``: the call as the user would write it.

    Values are cut to ``limit`` characters; ``None`` shows them whole, as an approval
    question must (padding must not push the part that matters out of sight). Names and
    values are quoted alike: values as their repr, a name that is not an identifier too,
    and every control character or bidi override is shown, never acted on."""
    shown = []
    for key, value in arguments.items():
        text = repr(value)
        if limit is not None and len(text) > limit:
            text = text[: limit - 1] + "…"
        name = str(key)
        shown.append(f"{name if name.isidentifier() else repr(name)}={text}")
    return visible_line(f"{tool_name}({', '.join(shown)})")


def parse_answer(answer: str) -> tuple[str, str]:
    """``("approve" | "always" | "deny", reason)`` from a typed answer."""
    text = answer.strip()
    word = text.lower()
    if word in ("y", "yes"):
        return "approve", ""
    if word in ("a", "always"):
        return "always", ""
    if word in ("", "n", "no"):
        return "deny", ""
    return "deny", text


class StdinAsk:
    """The ``ask`` of a :class:`~aimu_jupyter.approval._policy.NotebookPolicy` that reads a line.

    It calls ``input`` as it is when asked: a kernel replaces it, cell by cell, with one
    that asks the frontend's stdin box. End of input denies the call.
    """

    async def __call__(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        agent: str | None = None,
        preview: dict[str, Any] | None = None,
    ) -> tuple[str, str]:
        for _ in range(3):  # let the chunks emitted before this call be shown first
            await asyncio.sleep(0)
        asker = f"Sub-agent {visible_line(agent)} asks: " if agent else ""
        question = f"{asker}Approve {call_text(tool_name, arguments, None)}? {CHOICES}"
        if preview is not None and isinstance(preview.get("text/plain"), str):
            question = f"{preview['text/plain'].rstrip()}\n{question}"
        try:
            with sigint_raises():
                answer = builtins.input(question)
        except KeyboardInterrupt:
            raise asyncio.CancelledError from None
        except EOFError:
            return "deny", "no answer: stdin was closed"
        return parse_answer(answer)
