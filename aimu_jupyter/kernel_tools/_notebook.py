"""The ``notebook`` tool group: the user's variables and recent cells, proposing a cell, and
editing and running the open notebook's cells.

``list_variables``, ``describe_variable``, ``read_cells`` and ``list_cells`` only read;
``add_cell`` writes the notebook (a new, unexecuted cell below the agent's cell), and
``edit_cell`` and ``run_cell`` (:mod:`.cell_tools`) change or run a cell, so they ask first.
Secrets (as :mod:`aimu.secrets` defines them: the values of variables and environment
variables named like ``api_key`` or ``token`` wherever they appear, a value written beside
such a name, token shapes, URL passwords) are shown as ``[hidden]``, so a notebook's
credentials never reach the model through these tools.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Literal

from aimu.secrets import is_secret_name, redact, secret_values
from aimu.tools.decorator import tool

MAX_CHARS = 4_000


def make_notebook_tools(
    shell: Any, bridge: Callable[[], Any] | None = None
) -> list[Callable[..., str]]:
    """Build ``list_variables``, ``describe_variable``, ``read_cells`` and ``add_cell``, and
    ``list_cells``, ``edit_cell`` and ``run_cell`` (:mod:`.cell_tools`), which reach the
    open notebook through ``bridge()`` (a :class:`~.notebook_bridge.NotebookBridge`, or
    ``None`` where there is none)."""

    def visible() -> dict[str, Any]:
        hidden = getattr(shell, "user_ns_hidden", {})
        return {
            name: value
            for name, value in shell.user_ns.items()
            if not name.startswith("_")
            and name not in hidden
            and name not in ("In", "Out", "get_ipython", "exit", "quit")
            and not isinstance(value, types.ModuleType)
        }

    @tool(read_only=True)
    def list_variables() -> str:
        """List the notebook's variables with their types and sizes.

        One line per variable: name, type, and the shape (arrays, DataFrames) or length
        (lists, dicts, strings). Values are not shown; use describe_variable for one.
        """
        lines = [
            f"{name}: {_type_name(value)}{_size(value)}"
            for name, value in sorted(visible().items())
        ]
        return "\n".join(lines) if lines else "The notebook has no variables yet."

    @tool(read_only=True)
    def describe_variable(name: str) -> str:
        """Describe one notebook variable in detail.

        A DataFrame: its shape, columns with dtypes, and first 5 rows. A Series or array:
        dtype, shape and first values. Anything else: its type, size and repr. Output is cut
        at 4,000 characters.

        Args:
            name: The variable's name, exactly as list_variables shows it.
        """
        variables = visible()
        if name not in variables:
            known = ", ".join(sorted(variables)) or "none"
            return f"No notebook variable named {name!r}. Variables: {known}."
        value = variables[name]
        if _looks_secret(name, value):
            return f"{name}: {_type_name(value)} [hidden: its name says it holds a secret]"
        text = f"{name}: {_type_name(value)}{_size(value)}\n{_details(value)}"
        return _cap(redact_secrets(text, shell.user_ns))

    @tool(read_only=True)
    def read_cells(count: int = 5) -> str:
        """Read the most recent notebook cells: each input and, when it had one, its output.

        Args:
            count: How many of the latest cells to show, 1 to 50.
        """
        count = max(1, min(50, count))
        inputs = list(shell.user_ns.get("In", []))
        outputs = shell.user_ns.get("Out", {})
        shown = []
        for number in range(max(1, len(inputs) - count), len(inputs)):
            block = f"In [{number}]:\n{inputs[number].rstrip()}"
            if number in outputs:
                block += f"\nOut[{number}]:\n{_safe_repr(outputs[number])}"
            shown.append(block)
        if not shown:
            return "No cells have run yet."
        return _cap(redact_secrets("\n\n".join(shown), shell.user_ns))

    @tool
    def add_cell(source: str, kind: Literal["code", "markdown"] = "code") -> str:
        """Propose a new notebook cell; it appears below the agent's cell, not run.

        Use it to leave the user code (or notes) they can read, edit and run themselves.

        Args:
            source: The cell's full text.
            kind: "code" for a Python cell, "markdown" for a text cell.
        """
        from aimu_jupyter.kernel_tools._new_cells import publish_cells

        publish_cells([{"cell_type": kind, "source": source}], origin="add_cell")
        return f"Added a {kind} cell below the agent's cell. It has not run; the user decides."

    for reading in (list_variables, describe_variable, read_cells):
        reading.__tool_read_only__ = True
    add_cell.__tool_read_only__ = False
    add_cell.__tool_code__ = {"source": "python"}
    from aimu_jupyter.kernel_tools._cells import make_cell_tools

    cell_tools = make_cell_tools(
        shell, bridge or (lambda: None), lambda text: redact_secrets(text, shell.user_ns)
    )
    return [list_variables, describe_variable, read_cells, add_cell, *cell_tools]


def _type_name(value: Any) -> str:
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module.split('.')[0]}.{kind.__name__}"


def _size(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return f", shape {shape}"
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        return f", length {len(value):,}"
    return ""


def _details(value: Any) -> str:
    columns = getattr(value, "dtypes", None)
    head = getattr(value, "head", None)
    if columns is not None and hasattr(columns, "items") and callable(head):
        dtypes = "\n".join(f"  {column}: {dtype}" for column, dtype in columns.items())
        return f"columns:\n{dtypes}\nfirst rows:\n{_safe_str(head(5))}"
    dtype = getattr(value, "dtype", None)
    if dtype is not None and callable(head):
        return f"dtype: {dtype}\nfirst values:\n{_safe_str(head(5))}"
    if dtype is not None:
        return f"dtype: {dtype}\n{_safe_repr(value)}"
    return _safe_repr(value)


def _looks_secret(name: str, value: Any) -> bool:
    return isinstance(value, str | bytes) and is_secret_name(name)


def redact_secrets(text: str, user_ns: dict[str, Any]) -> str:
    """``text`` with every secret hidden, the values of the notebook's secret-named
    variables among them."""
    return redact(text, secret_values(user_ns))


def _safe_repr(value: Any) -> str:
    try:
        return _cap(repr(value))
    except Exception as exc:
        return f"<repr failed: {type(exc).__name__}: {exc}>"


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception as exc:
        return f"<str failed: {type(exc).__name__}: {exc}>"


def _cap(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    return f"{text[:MAX_CHARS]}\n[cut at {MAX_CHARS:,} of {len(text):,} characters]"
