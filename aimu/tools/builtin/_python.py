"""``execute_python_in_process``, its factory, and the result layout both Python tools share.

The guard and the REPL-style runner live in :mod:`._guard`, which the ``execute_python``
subprocess child runs too: the two backends differ only in where the code runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext, redirect_stderr, redirect_stdout

from aimu.tools.builtin._capture import HEAD, TAIL, CappedText
from aimu.tools.builtin._figures import FigureCapture
from aimu.tools.builtin._guard import PRELOADED, Outcome, allowed_modules, restricted_builtins, run
from aimu.tools.builtin._rich import Shown
from aimu.tools.decorator import tool
from aimu.tools.results import Image, ToolResult

#: Hook for where code may display things besides pyplot (a notebook's display()):
#: given the run's image sink, a context manager that routes displays to it.
Displays = Callable[[Callable[[Image], None]], AbstractContextManager]

_IN_PROCESS_DOC = """\
Execute Python code in this process and return its output. Explicit opt-in.

NOT A SECURITY BOUNDARY: this is isolation, not containment, and weaker isolation than
execute_python -- code here shares this process's memory, imports and environment variables
(including any API keys in os.environ), a hang blocks this process indefinitely, and a crash
takes it down too. Restricted builtins (no open, exec, eval, input) and an import allowlist
stop accidents, not a determined attempt. Gate it with tool approval for untrusted callers.

Runs like a REPL: returns what the code prints, then "Result:" with the repr of a final bare
expression (DataFrames as short tables), or "Error:" with a short traceback. Variables,
functions and imports persist between calls. Plots (plt.show() or figures left open) and
images (PIL, objects with _repr_png_) come back as images attached to the result.
Printed output beyond about {chars} characters per stream is cut in the middle.
Preloaded, no import needed: {preloaded}. Other importable modules: {importable}.

Args:
    code: Python source to run, e.g. "total = sum(range(10))\\ntotal * 2".
"""


def describe_modules(allowed: Iterable[str]) -> dict[str, str]:
    """The module lists as a tool docstring names them."""
    others = sorted(set(allowed) - set(PRELOADED))
    return {
        "preloaded": ", ".join(PRELOADED),
        "importable": ", ".join(others) or "none",
        "chars": f"{HEAD + TAIL:,}",
    }


def format_run(stdout: str, stderr: str, outcome: Outcome) -> str:
    """The text a model reads after a Python run, identical for both backends."""
    parts = []
    if stdout:
        parts.append(stdout.rstrip("\n"))
    if stderr:
        parts.append("stderr:\n" + stderr.rstrip("\n"))
    if outcome.value is not None:
        parts.append(f"Result: {outcome.value}")
    if outcome.error is not None:
        parts.append(f"Error:\n{outcome.error}")
    return "\n".join(parts) or "(no output)"


def make_python_in_process_tool(
    namespace: dict | None = None,
    *,
    allowed_imports: Iterable[str] = (),
    name: str = "execute_python_in_process",
    displays: Displays | None = None,
) -> Callable[..., str | ToolResult]:
    """Build an in-process Python tool that runs code in ``namespace``.

    ``namespace`` is the globals dict the code runs in (a fresh one when omitted); pass a
    notebook's user namespace and the model's variables become the user's, and back.
    ``allowed_imports`` widens the import allowlist by top-level module names. Calls on one
    tool run one at a time. The guard's builtins are swapped in only while code runs, so the
    namespace's own ``__builtins__`` is left as it was. What the code draws comes back as
    images (a :class:`ToolResult`; plain text when there are none); ``displays`` adds
    another source of them (the notebook's ``display()``).
    """
    allowed = allowed_modules(allowed_imports)
    table = restricted_builtins(allowed)
    globals_ = {"__name__": "__main__"} if namespace is None else namespace
    lock = threading.Lock()

    def execute_python_in_process(code: str) -> str | ToolResult:
        out, err, shown = CappedText(), CappedText(), Shown()
        with (
            lock,
            redirect_stdout(out),
            redirect_stderr(err),
            FigureCapture(shown.add),
            (displays or _no_displays)(shown.add),
        ):
            outcome = run(code, globals_, table, shown.value_text)
        text = format_run(out.getvalue(), err.getvalue(), outcome)
        return ToolResult(text, tuple(shown.images)) if shown.images else text

    execute_python_in_process.__name__ = execute_python_in_process.__qualname__ = name
    execute_python_in_process.__doc__ = _IN_PROCESS_DOC.format(**describe_modules(allowed))
    return tool(name=name)(execute_python_in_process)


def _no_displays(_sink: Callable[[Image], None]) -> AbstractContextManager:
    return nullcontext()


execute_python_in_process = make_python_in_process_tool()
