"""``execute_python_in_process``, its factory, and the result layout both Python tools share.

The guard and the REPL-style runner live in :mod:`._guard`, which the ``execute_python``
subprocess child runs too: the two backends differ only in where the code runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext, redirect_stderr, redirect_stdout
from typing import NamedTuple

from aimu.tools._capture import HEAD, TAIL, CappedText
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


class PythonRun(NamedTuple):
    """One run's result: the text a model reads, the images shown, whether it raised."""

    text: str
    images: tuple[Image, ...]
    failed: bool

    def result(self) -> str | ToolResult:
        """As a tool returns it: plain text, or a :class:`ToolResult` when it has images."""
        return ToolResult(self.text, self.images) if self.images else self.text


class PythonRunner:
    """Runs code REPL-style in one namespace under the guard, one call at a time.

    ``namespace`` is the globals dict the code runs in (a fresh one when omitted).
    ``allowed_imports`` widens the import allowlist by top-level module names. The guard's
    builtins are swapped in only while code runs, so the namespace's own ``__builtins__``
    is left as it was. ``displays`` adds a source of images besides pyplot (the notebook's
    ``display()``).
    """

    def __init__(
        self,
        namespace: dict | None = None,
        allowed_imports: Iterable[str] = (),
        displays: Displays | None = None,
    ) -> None:
        self.allowed = allowed_modules(allowed_imports)
        self._table = restricted_builtins(self.allowed)
        self._globals = {"__name__": "__main__"} if namespace is None else namespace
        self._displays = displays or _no_displays
        self._lock = threading.Lock()

    def doc_fields(self) -> dict[str, str]:
        """What a tool docstring says of this runner: ``preloaded``, ``importable`` (the
        modules) and ``chars`` (the output cap)."""
        return describe_modules(self.allowed)

    def __call__(self, code: str) -> PythonRun:
        out, err, shown = CappedText(), CappedText(), Shown()
        with (
            self._lock,
            redirect_stdout(out),
            redirect_stderr(err),
            FigureCapture(shown.add),
            self._displays(shown.add),
        ):
            outcome = run(code, self._globals, self._table, shown.value_text)
        text = format_run(out.getvalue(), err.getvalue(), outcome)
        return PythonRun(text, tuple(shown.images), outcome.error is not None)


def make_python_in_process_tool(
    namespace: dict | None = None,
    *,
    allowed_imports: Iterable[str] = (),
    name: str = "execute_python_in_process",
) -> Callable[..., str | ToolResult]:
    """Build an in-process Python tool that runs code in ``namespace``.

    Pass a notebook's user namespace and the model's variables become the user's, and
    back; see :class:`PythonRunner` for ``allowed_imports``. What the code draws comes
    back as images (a :class:`ToolResult`; plain text when there are none).
    """
    runner = PythonRunner(namespace, allowed_imports)

    def execute_python_in_process(code: str) -> str | ToolResult:
        return runner(code).result()

    execute_python_in_process.__name__ = execute_python_in_process.__qualname__ = name
    execute_python_in_process.__doc__ = _IN_PROCESS_DOC.format(**runner.doc_fields())
    made = tool(name=name, read_only=False)(execute_python_in_process)
    made.__tool_code__ = {"code": "python"}
    return made


def _no_displays(_sink: Callable[[Image], None]) -> AbstractContextManager:
    return nullcontext()


execute_python_in_process = make_python_in_process_tool()
