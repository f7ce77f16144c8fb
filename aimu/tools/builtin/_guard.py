"""The accident guard shared by both Python backends, and the code runner they both use.

Restricted builtins (no ``open``, ``exec``, ``eval``, ``compile``, ``input``, ``exit``...) and an
import allowlist. It stops accidents, not a determined attempt: an allowed module's attributes
and the type hierarchy still reach everything. The in-process tool imports this module; the
``execute_python`` child runs this very file as its program (``python -I _guard.py``), so
switching backends changes where code runs, never what it may do. Standard library only: the
child must start fast and must not import ``aimu``.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import itertools
import json
import linecache
import sys
import traceback
from collections import namedtuple
from collections.abc import Callable, Iterable
from types import CodeType

PRELOADED = (
    "math",
    "statistics",
    "json",
    "re",
    "itertools",
    "functools",
    "datetime",
    "zoneinfo",
    "collections",
    "random",
)
OPTIONAL = ("numpy", "pandas", "scipy", "matplotlib")
VALUE_CHARS = 10_000
_REMOVED = frozenset(
    {"open", "exec", "eval", "compile", "input", "breakpoint", "exit", "quit", "help"}
    | {"copyright", "credits", "license", "__loader__", "__spec__"}
)
_USER_CODE = "<code"
_TRACEBACK_FRAMES = 8


def allowed_modules(extra: Iterable[str] = ()) -> frozenset[str]:
    """The import allowlist: the preloaded stdlib modules, the optional ones that are
    installed, and ``extra`` (top-level names, e.g. ``("sympy",)``)."""
    if isinstance(extra, str | bytes):
        raise TypeError(
            f"allowed_imports takes a list of module names, e.g. ({extra!r},), not a string"
        )
    extra = tuple(extra)
    for name in extra:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"allowed_imports: {name!r} is not a top-level module name")
    installed = (m for m in OPTIONAL if importlib.util.find_spec(m) is not None)
    return frozenset(PRELOADED).union(installed, extra)


def restricted_builtins(allowed: Iterable[str]) -> dict:
    """A builtins mapping for exec'd code: the usual builtins minus the removed ones, an
    ``__import__`` that refuses modules outside ``allowed``, and the preloaded modules (as
    builtins, so they never clutter or overwrite a caller's namespace)."""
    allowed = frozenset(allowed)
    shown = ", ".join(sorted(allowed))
    real_import = builtins.__import__

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level:
            raise ImportError("relative imports are not available here")
        if name.partition(".")[0] not in allowed:
            raise ImportError(
                f"import of '{name}' is blocked by this tool's guard; allowed modules: {shown}"
            )
        return real_import(name, globals, locals, fromlist, level)

    table = {k: v for k, v in vars(builtins).items() if k not in _REMOVED}
    table["__import__"] = guarded_import
    for module in PRELOADED:
        table[module] = real_import(module)
    return table


class Outcome(namedtuple("Outcome", "value error", defaults=(None, None))):
    """What running a snippet produced besides its output streams: the ``repr`` of a final
    expression's value, or a short traceback. (A namedtuple: ``dataclasses`` would pull
    ``inspect`` into every child's startup.)"""

    __slots__ = ()


_counter = itertools.count(1)


def run(
    code: str,
    namespace: dict,
    builtins_table: dict,
    describe: Callable[[object], str | None] | None = None,
) -> Outcome:
    """Execute ``code`` in ``namespace`` under ``builtins_table``, REPL-style.

    A trailing expression is evaluated and its ``repr`` returned (``None`` is not shown);
    ``describe(value)``, when given, may return other text for it (a table, an image note).
    Exceptions, ``SystemExit`` included, become a short traceback of the user's own frames.
    ``namespace['__builtins__']`` is swapped in for the run and restored afterwards, so a
    caller's namespace (a notebook's, say) keeps its own builtins for its own code.
    """
    filename = f"{_USER_CODE}-{next(_counter)}>"
    try:
        body, last = _compile(code, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return Outcome(error="".join(traceback.format_exception_only(exc)).rstrip())
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)

    missing = object()
    saved = namespace.get("__builtins__", missing)
    namespace["__builtins__"] = builtins_table
    try:
        exec(body, namespace)
        value = eval(last, namespace) if last is not None else None
    except (Exception, SystemExit) as exc:
        return Outcome(error=_short_traceback(exc))
    finally:
        if saved is missing:
            namespace.pop("__builtins__", None)
        else:
            namespace["__builtins__"] = saved
    if value is None:
        return Outcome()
    return Outcome(value=(describe and describe(value)) or _safe_repr(value))


def _compile(code: str, filename: str) -> tuple[CodeType, CodeType | None]:
    tree = ast.parse(code, filename, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
        last = compile(last, filename, "eval")
    return compile(tree, filename, "exec"), last


def _short_traceback(exc: BaseException) -> str:
    te = traceback.TracebackException.from_exception(exc, capture_locals=False)
    frames = [f for f in te.stack if f.filename.startswith(_USER_CODE)]
    te.stack = traceback.StackSummary.from_list(frames[-_TRACEBACK_FRAMES:])
    if not frames:
        return "".join(te.format_exception_only()).rstrip()
    return "".join(te.format(chain=False)).rstrip()


def _safe_repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception as exc:
        return f"<repr failed: {type(exc).__name__}: {exc}>"
    if len(text) > VALUE_CHARS:
        return f"{text[:VALUE_CHARS]}... [value cut at {VALUE_CHARS} characters]"
    return text


def _child_main(config: dict, result_fd: int) -> None:
    """The ``execute_python`` child: apply the memory cap, run stdin's code, report on
    ``result_fd`` as JSON (value, error, whether the cap was applied)."""
    capped = _limit_memory(config["memory_bytes"])
    code = sys.stdin.read()
    sys.stdin.close()
    sys.stdout.reconfigure(line_buffering=True)
    table = restricted_builtins(config["allowed"])
    outcome = run(code, {"__name__": "__main__"}, table)
    sys.stdout.flush()
    with builtins.open(result_fd, "w", encoding="utf-8") as out:
        json.dump({**outcome._asdict(), "memory_capped": capped}, out)


def _limit_memory(limit: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        return False
    return True


if __name__ == "__main__":
    _child_main(json.loads(sys.argv[1]), int(sys.argv[2]))
