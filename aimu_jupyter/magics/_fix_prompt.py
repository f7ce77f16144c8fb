"""The prompt of ``%agent_fix``: the last exception and the source of the cell that raised it.

Read from what IPython keeps: ``sys.last_value`` (set when a cell's traceback is shown) and
``In`` (the cells' sources, by execution count). The traceback is trimmed to the frames of
the notebook's own cells and the libraries they called, and secrets are hidden as in the
``notebook`` tools. The model gets the whole trimmed traceback; the run's record shows the
person the question, the cell and the error, as they read them (:func:`shown_fix`).
"""

from __future__ import annotations

import re
import sys
import traceback
from typing import Any

from IPython.core.error import UsageError

from aimu.text import inline_code, markdown_text
from aimu_jupyter.kernel_tools._notebook import redact_secrets
from aimu_jupyter.view._record import ShownPrompt, fence

#: Frames kept from the end of the traceback, and characters kept of it in all.
FRAMES = 12
TRACEBACK_CHARS = 6_000
SOURCE_CHARS = 6_000
DEFAULT_QUESTION = "Why did this fail, and how do I fix it?"
FIX_TOOLS = ("python", "notebook")


def fix_prompt(shell: Any, question: str = "", error: BaseException | None = None) -> ShownPrompt:
    """The prompt that asks the agent to explain and fix ``error``, by default the notebook's
    last exception; the record shows it as :func:`shown_fix` writes it."""
    if error is None:
        error = getattr(sys, "last_value", None)
    if error is None:
        raise UsageError("%agent_fix: no cell has raised an exception yet in this session")
    cells = failing_cells(shell, error)
    shown = []
    for index, (number, source) in enumerate(cells):
        where = f"In [{number}]" if number is not None else "The cell"
        role = "the cell that raised it" if index == 0 else "code the traceback passes through"
        shown.append(f"{where} ({role}):\n{fence(_cap(source, SOURCE_CHARS), 'python')}")
    asked = question.strip() or DEFAULT_QUESTION
    text = (
        "A notebook cell raised an exception.\n\n" + "\n\n".join(shown) + "\n\n"
        f"Traceback (trimmed):\n{fence(trimmed_traceback(error))}\n\n"
        f"{asked}\n\n"
        "The python tool runs code in this notebook's namespace (to inspect the variables); "
        "the notebook tools read variables and cells. Propose the corrected cell with "
        "add_cell rather than only describing it."
    )
    shown_text = shown_fix(asked, cells[0], error, shell)
    return ShownPrompt(
        redact_secrets(text, shell.user_ns), redact_secrets(shown_text, shell.user_ns)
    )


def shown_fix(question: str, cell: tuple[int | None, str], error: BaseException, shell: Any) -> str:
    """What the person reads of a fix's prompt (Markdown): their question, the cell that
    raised, and the error with the line of the cell it came from; the traceback only folded,
    its cells named as IPython names them (``Cell In[3]``), without its ``^^^^`` markers."""
    number, source = cell
    names = getattr(getattr(shell, "compile", None), "_filename_map", {})
    frames = traceback.extract_tb(error.__traceback__)
    line = next((f for f in reversed(frames) if names.get(f.filename) == number), None)
    where = f"In [{number}]" if number is not None else "The cell"
    at = f" at line {line.lineno}: {inline_code(line.line.strip())}" if line and line.line else ""
    message = "".join(traceback.format_exception_only(type(error), error)).strip()
    readable = trimmed_traceback(error)
    for filename, cell_number in names.items():
        readable = readable.replace(f'File "{filename}"', f"Cell In[{cell_number}]")
    readable = "\n".join(line for line in readable.split("\n") if not _MARKERS.match(line))
    return "\n\n".join(
        [
            f"**You asked:** {markdown_text(question)}",
            f"**{where}:**\n\n{fence(_cap(source, SOURCE_CHARS), 'python')}",
            f"**Error:** {inline_code(message.split(chr(10))[-1])}{at}",
            f"<details><summary>Traceback</summary>\n\n{fence(readable)}\n\n</details>",
        ]
    )


#: The lines of ``^`` and ``~`` a traceback points at the failing part with.
_MARKERS = re.compile(r"^\s*[~^]+\s*$")


def failing_cells(shell: Any, error: BaseException) -> list[tuple[int | None, str]]:
    """``(execution count, source)`` of the cells the exception came through.

    The cell that ran comes first (the outermost traceback frame in a cell), then cells
    whose functions the traceback passes through; a SyntaxError names its cell by filename.
    Failing those, the last cell before the current one.
    """
    names = getattr(getattr(shell, "compile", None), "_filename_map", {})
    inputs = shell.user_ns.get("In") or []
    filenames = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    if isinstance(error, SyntaxError) and error.filename:
        filenames.append(error.filename)
    numbers = [names[name] for name in filenames if name in names]
    found = [(n, inputs[n]) for n in dict.fromkeys(numbers) if n < len(inputs)]
    if found:
        return found
    if len(inputs) >= 2:
        return [(len(inputs) - 2, inputs[-2])]
    return [(None, "(the cell's source is not available)")]


def trimmed_traceback(error: BaseException) -> str:
    """The traceback without IPython's own frames, its last :data:`FRAMES` frames kept."""
    summary = traceback.TracebackException.from_exception(error, capture_locals=False)
    frames = [f for f in summary.stack if "/IPython/core/" not in f.filename]
    dropped = max(0, len(frames) - FRAMES)
    summary.stack = traceback.StackSummary.from_list(frames[dropped:])
    text = "".join(summary.format()).rstrip()
    if dropped:
        text = f"[{dropped} outer frames omitted]\n{text}"
    return _cap(text, TRACEBACK_CHARS)


def with_fix_tools(tools: str | None) -> str:
    """``--tools`` plus the python and notebook tools a fix needs."""
    items = [item.strip() for item in (tools or "").split(",") if item.strip()]
    return ",".join([*items, *(name for name in FIX_TOOLS if name not in items)])


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit:,} characters omitted ...]\n{text[-half:]}"
