"""``list_cells``, ``edit_cell`` and ``run_cell``: the open notebook's own cells, for agents.

They reach the notebook through the frontend (:mod:`.notebook_bridge`), never its file. An
edit asks first, with a diff of the cell's old and new source as what it approves (the lab
extension draws ``application/vnd.aimu.diff+json``; other frontends show the unified diff in
Markdown or text), and is applied to the frontend's notebook model with the source the diff
was made from as a guard: an edit made meanwhile is not overwritten. ``run_cell`` asks
(showing the code), runs the cell's source in the kernel's namespace, puts the outputs in
that cell and gives them to the agent. Where no frontend can change the notebook (headless,
a console, a frontend without the extension) each tool says so, and nothing is changed.
"""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Callable
from typing import Any

from aimu.tools.decorator import tool
from aimu.tools.results import ToolResult
from aimu_jupyter.kernel_tools._bridge import NoFrontend, NotebookBridge
from aimu_jupyter.kernel_tools._notebook import _cap as cap
from aimu_jupyter.view._record import fence

DIFF_MIME = "application/vnd.aimu.diff+json"
CANNOT = (
    "No frontend that can change the open notebook is connected (a headless run, a console, "
    "or a frontend without the aimu JupyterLab extension), so nothing was changed: the "
    "notebook file is never edited behind its frontend. Use add_cell to propose code instead."
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def make_cell_tools(
    shell: Any, bridge: Callable[[], NotebookBridge | None], redact: Callable[[str], str]
) -> list[Callable]:
    """The three tools, bound to ``shell`` and the bridge ``bridge()`` returns (if any);
    ``redact`` hides secrets in what goes back to the model."""
    shown: dict[tuple[str, str], str] = {}  # (cell id, new source) -> the source approved

    async def cells() -> list[dict[str, Any]] | str:
        connected = bridge()
        if connected is None:
            return CANNOT
        try:
            answer = await connected.request("cells")
        except NoFrontend:
            return CANNOT
        return [c for c in answer.get("cells") or () if isinstance(c, dict)]

    async def find(cell_id: str) -> dict[str, Any] | str:
        found = await cells()
        if isinstance(found, str):
            return found
        for cell in found:
            if cell.get("id") == cell_id:
                return cell
        return f"No cell has the id {cell_id!r}; list_cells shows the notebook's cells."

    @tool(read_only=True)
    async def list_cells() -> str:
        """List the open notebook's cells: position, id, type and source (up to 400
        characters each). Use a cell's id with edit_cell or run_cell."""
        found = await cells()
        if isinstance(found, str):
            return found
        if not found:
            return "The notebook has no cells."
        blocks = []
        for cell in found:
            source = str(cell.get("source", ""))
            if len(source) > 400:
                source = source[:400] + f"… ({len(source):,} characters)"
            head = f"[{int(cell.get('index', 0)) + 1}] id={cell.get('id')} {cell.get('cell_type')}"
            count = cell.get("execution_count")
            blocks.append(f"{head}{f' (ran as In [{count}])' if count else ''}\n{source}")
        return cap(redact("\n\n".join(blocks)))

    @tool(read_only=False)
    async def edit_cell(cell_id: str, source: str) -> str | ToolResult:
        """Replace the whole source of one notebook cell (the user approves a diff first).

        The cell is not run; use run_cell for that.

        Args:
            cell_id: The cell's id, as list_cells shows it.
            source: The cell's complete new source.
        """
        cell = await find(cell_id)
        if isinstance(cell, str):
            return ToolResult.error(cell)
        expect = shown.pop((cell_id, source), str(cell.get("source", "")))
        answer = await bridge().request("edit", cell_id=cell_id, source=source, expect=expect)
        if answer.get("error"):
            return ToolResult.error(f"The cell was not changed: {answer['error']}")
        where = int(cell.get("index", 0)) + 1
        return f"Cell {where} (id {cell_id}) now holds the new source. It has not run."

    async def preview_edit(arguments: dict[str, Any]) -> dict[str, Any] | None:
        cell = await find(str(arguments.get("cell_id", "")))
        if isinstance(cell, str):
            return None
        old, new = str(cell.get("source", "")), str(arguments.get("source", ""))
        shown[(cell["id"], new)] = old
        return diff_bundle(cell, old, new)

    @tool(read_only=False)
    async def run_cell(cell_id: str) -> str | ToolResult:
        """Run one notebook code cell (the user approves first) and read its output.

        The outputs also appear in that cell, as if the user had run it.

        Args:
            cell_id: The cell's id, as list_cells shows it.
        """
        cell = await find(cell_id)
        if isinstance(cell, str):
            return ToolResult.error(cell)
        if cell.get("cell_type") != "code":
            return ToolResult.error(f"Cell {cell_id} is a {cell.get('cell_type')} cell: not run.")
        text, outputs, failed = execute(shell, str(cell.get("source", "")))
        with contextlib.suppress(NoFrontend):  # the agent still reads what the cell showed
            await bridge().request(
                "outputs", cell_id=cell_id, outputs=outputs, execution_count=None
            )
        text = cap(redact(text)) or "(the cell ran and showed nothing)"
        return ToolResult.error(text) if failed else text

    async def preview_run(arguments: dict[str, Any]) -> dict[str, Any] | None:
        cell = await find(str(arguments.get("cell_id", "")))
        if isinstance(cell, str):
            return None
        source = str(cell.get("source", ""))
        title = f"Run cell {int(cell.get('index', 0)) + 1} (id {cell['id']})"
        return {"text/markdown": f"**{title}**\n\n{fence(source, 'python')}", "text/plain": source}

    edit_cell.__tool_preview__ = preview_edit
    run_cell.__tool_preview__ = preview_run
    list_cells.__tool_read_only__ = True
    edit_cell.__tool_read_only__ = run_cell.__tool_read_only__ = False
    return [list_cells, edit_cell, run_cell]


def diff_bundle(cell: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """The approval's view of an edit: the diff for the lab extension, Markdown, text."""
    where = int(cell.get("index", 0)) + 1
    title = f"Edit cell {where} (id {cell.get('id')})"
    diff = "".join(
        line if line.endswith("\n") else line + "\n"
        for line in difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"cell {where} now",
            tofile=f"cell {where} edited",
        )
    )
    record = {"version": 1, "title": title, "cell_id": cell.get("id"), "old": old, "new": new}
    return {
        DIFF_MIME: {**record, "diff": diff},
        "text/markdown": f"**{title}**\n\n{fence(diff or '(no change)', 'diff')}",
        "text/plain": f"{title}\n{diff or '(no change)'}",
    }


def execute(shell: Any, source: str) -> tuple[str, list[dict[str, Any]], bool]:
    """Run ``source`` as a cell, in the kernel's namespace, capturing what it shows.

    Returns ``(text for the model, nbformat outputs, failed)``; nothing reaches the running
    agent cell's own output.
    """
    from IPython.utils.capture import capture_output

    tracebacks: list[tuple[str, str, list[str]]] = []

    def keep(etype: Any, evalue: Any, stb: list[str]) -> None:
        tracebacks.append((getattr(etype, "__name__", str(etype)), str(evalue), list(stb)))

    shell._showtraceback = keep
    try:
        with capture_output() as captured:
            shell.run_cell(source, store_history=False)
    finally:
        del shell._showtraceback
    outputs: list[dict[str, Any]] = []
    texts: list[str] = []
    for name, text in (("stdout", captured.stdout), ("stderr", captured.stderr)):
        if text:
            outputs.append({"output_type": "stream", "name": name, "text": text})
            texts.append(text.rstrip())
    for rich in captured.outputs:
        data = {k: v for k, v in rich.data.items() if isinstance(v, str | dict | list)}
        outputs.append({"output_type": "display_data", "data": data, "metadata": rich.metadata})
        texts.append(str(data.get("text/plain", f"[{', '.join(data)}]")))
    for ename, evalue, stb in tracebacks:
        outputs.append({"output_type": "error", "ename": ename, "evalue": evalue,
                        "traceback": stb})  # fmt: skip
        lines = _ANSI.sub("", "\n".join(stb)).strip().splitlines()
        texts.append("Error:\n" + "\n".join(lines[-12:]))
    return "\n".join(texts), outputs, bool(tracebacks)
