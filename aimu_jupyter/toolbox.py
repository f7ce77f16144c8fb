"""What ``--tools`` names, turned into tool functions, and the ``%tool`` registry.

An item of ``--tools`` is a built-in group (``web``, ``fs``, ``compute``, ``time``, ``misc``,
``all``), ``python`` (code in the notebook's own namespace), ``notebook`` (variables and
cells), a ``%tool``-registered name, or a notebook variable holding an MCP client, a tool,
or a list of tools. Each resolved tool is tagged free (runs without asking) or gated.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import signal
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from IPython.core.error import UsageError

from aimu.tools.cancel import run_in_thread
from aimu.tools.results import ToolResult
from aimu_jupyter.approval import READING_BUILTINS

BUILTIN_GROUPS = ("web", "fs", "compute", "time", "misc", "all")
NOTEBOOK_GROUPS = ("python", "notebook")

_PYTHON_DOC = """\
Run Python code inside the user's Jupyter notebook, in the notebook's own namespace.

The user's variables (DataFrames, lists, models...) are readable by name, and variables you
assign stay in the notebook for the user's next cells. Runs like a REPL: returns what the
code prints, then "Result:" with the repr of a final bare expression, or "Error:" with a
short traceback. Printed output beyond about {chars} characters is cut in the middle.
Restricted builtins (no open, exec, eval, input) and an import allowlist apply.
Preloaded, no import needed: {preloaded}. Other importable modules: {importable}.

Args:
    code: Python source to run, e.g. "df.groupby('month')['sales'].sum()".
"""


@dataclass
class Toolset:
    """The tools of one run, the names among them that run without asking, and those whose
    synchronous calls run in a worker thread (built-in and MCP tools) rather than inline."""

    tools: list[Callable] = field(default_factory=list)
    free: set[str] = field(default_factory=set)
    threaded: set[str] = field(default_factory=set)

    def add(self, fn: Callable, free: bool, threaded: bool = False) -> None:
        name = tool_name(fn)
        for existing in self.tools:
            if tool_name(existing) == name:
                if existing is fn:
                    return
                raise UsageError(
                    f"two different tools are named {name!r}; remove one from --tools "
                    "or rename it with @aimu.tool(name=...)"
                )
        self.tools.append(fn)
        if free:
            self.free.add(name)
        if threaded:
            self.threaded.add(name)

    def for_kernel(
        self, settle: Callable[[], Awaitable[None]], stop: asyncio.Event
    ) -> list[Callable]:
        """The tools as the kernel should run them, keeping its event loop responsive.

        A synchronous tool called inline blocks the loop: no display update, no interrupt
        until it returns. Built-in and MCP tools run in a worker thread instead; the user's
        own functions and ``python`` run inline (they touch the notebook's state), after
        ``settle()`` has shown their card as running; the stop button interrupts them and
        sets ``stop`` (see :class:`_SigintGate`).
        """
        adapted = []
        for fn in self.tools:
            if getattr(fn, "__tool_is_async__", False) or getattr(
                fn, "__tool_is_streaming__", False
            ):
                adapted.append(fn)
            elif tool_name(fn) in self.threaded:
                adapted.append(_async_twin(fn, lambda f, kw: run_in_thread(f, **kw)))
            else:
                adapted.append(_async_twin(fn, _after(settle, stop)))
        return adapted


def tool_name(fn: Callable) -> str:
    return fn.__tool_spec__["function"]["name"]


def _async_twin(fn: Callable, call: Callable[[Callable, dict], Awaitable[Any]]) -> Callable:
    """An async tool with ``fn``'s spec and parameters that runs ``fn`` through ``call``."""

    @functools.wraps(fn)
    async def twin(**kwargs: Any) -> Any:
        return await call(fn, kwargs)

    twin.__tool_is_async__ = True
    return twin


def _after(
    settle: Callable[[], Awaitable[None]], stop: asyncio.Event
) -> Callable[[Callable, dict], Awaitable[Any]]:
    async def call(fn: Callable, kwargs: dict) -> Any:
        with _SigintGate(stop) as gate:
            await settle()
            return gate.run(fn, kwargs)

    return call


class _SigintGate:
    """Make the stop button stop a synchronous tool running inline in the kernel.

    While an async cell runs, ipykernel turns SIGINT into a cancellation that the event loop
    only sees once synchronous code returns, so an endless loop in a tool would never end.
    While the tool runs, SIGINT raises ``KeyboardInterrupt`` inside it instead, the call
    returns an error result, and ``stop`` is set: the run ends as interrupted once that
    result is recorded. A SIGINT that lands while the call waits to start goes to the kernel
    as usual (which cancels the cell) and the call is skipped.
    """

    def __init__(self, stop: asyncio.Event) -> None:
        self.stop = stop
        self.fired = False
        self.raising = False
        self._previous: Any = None
        self._active = threading.current_thread() is threading.main_thread()

    def __enter__(self) -> _SigintGate:
        if self._active:
            self._previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._active and signal.getsignal(signal.SIGINT) == self._handle:
            signal.signal(signal.SIGINT, self._previous)

    def run(self, fn: Callable, kwargs: dict) -> Any:
        if self.fired:
            return ToolResult.error("Not run: the user interrupted the run before it started.")
        self.raising = True
        try:
            return fn(**kwargs)
        except KeyboardInterrupt:
            self.stop.set()
            return ToolResult.error("KeyboardInterrupt: the user interrupted this call.")
        finally:
            self.raising = False

    def _handle(self, signum: int, frame: Any) -> None:
        if self.raising:
            raise KeyboardInterrupt
        self.fired = True
        if callable(self._previous):
            self._previous(signum, frame)


class ToolRegistry:
    """The notebook functions registered with ``%tool``, by variable name.

    Functions are looked up again at every run, so redefining ``f`` in a later cell makes
    the agent use the new ``f``; ``asks`` holds the names registered with ``--ask``.
    """

    def __init__(self) -> None:
        self.names: dict[str, bool] = {}

    def register(self, user_ns: dict[str, Any], names: list[str], ask: bool) -> list[Callable]:
        tools = [self._tool(user_ns, name) for name in names]
        for name in names:
            self.names[name] = ask
        return tools

    def remove(self, names: list[str]) -> None:
        unknown = [name for name in names if name not in self.names]
        if unknown:
            raise UsageError(
                f"%tool --remove: {', '.join(unknown)} not registered; "
                f"registered: {', '.join(self.names) or 'none'}"
            )
        for name in names:
            del self.names[name]

    def resolve(self, user_ns: dict[str, Any]) -> list[tuple[Callable, bool]]:
        """``(tool, ask)`` for every registered name, as currently defined."""
        return [(self._tool(user_ns, name), ask) for name, ask in self.names.items()]

    def _tool(self, user_ns: dict[str, Any], name: str) -> Callable:
        if name not in user_ns:
            raise UsageError(
                f"%tool: no notebook variable named {name!r}"
                + (f"; define it or run %tool --remove {name}" if name in self.names else "")
            )
        return as_tool(user_ns[name], name)


def as_tool(value: Any, label: str) -> Callable:
    """``value`` as a tool: returned as is when it already is one, else decorated."""
    if getattr(value, "__tool_spec__", None) is not None:
        return value
    if not callable(value) or inspect.isclass(value):
        raise UsageError(f"%tool: {label} is a {type(value).__name__}, not a function")
    from aimu.tools.decorator import tool
    from aimu.tools.errors import ToolSignatureError

    try:
        return tool(value)
    except (ToolSignatureError, TypeError, ValueError) as exc:
        raise UsageError(f"%tool: {label} cannot be a tool: {exc}") from None


async def resolve_tools(
    items: list[Any],
    user_ns: dict[str, Any],
    registry: ToolRegistry,
    make_python: Callable[[], Callable],
    make_notebook: Callable[[], list[Callable]],
) -> Toolset:
    """Turn ``--tools`` items (names, or tool objects from Python) and every ``%tool``
    registration into a :class:`Toolset`."""
    toolset = Toolset()
    for fn, ask in registry.resolve(user_ns):
        toolset.add(fn, free=not ask)
    for item in items:
        if not isinstance(item, str):
            for fn, free, threaded in await _from_variable(type(item).__name__, item):
                toolset.add(fn, free=free, threaded=threaded)
        elif item in registry.names:
            continue
        elif item == "python":
            toolset.add(make_python(), free=False)
        elif item == "notebook":
            for fn in make_notebook():
                toolset.add(fn, free=True)
        elif item in BUILTIN_GROUPS:
            for fn in _builtin_group(item):
                toolset.add(fn, free=tool_name(fn) in READING_BUILTINS, threaded=True)
        elif item.partition(":")[0].strip() in user_ns:
            await _add_variable(toolset, item, user_ns)
        else:
            choices = ", ".join((*BUILTIN_GROUPS, *NOTEBOOK_GROUPS))
            raise UsageError(
                f"--tools: unknown item {item!r}. Use {choices}, a %tool function, or a "
                "notebook variable holding an MCP client, a tool or a list of tools"
            )
    return toolset


async def _add_variable(toolset: Toolset, item: str, user_ns: dict[str, Any]) -> None:
    """A notebook variable's tools; ``client:tc`` names an MCP client's tools ``tc_...``,
    the way out when two servers (or a server and a built-in) share a tool name."""
    name, colon, short = (part.strip() for part in item.partition(":"))
    value = user_ns[name]
    is_client = callable(getattr(value, "as_tools", None))
    if colon and not (is_client and short.isidentifier()):
        raise UsageError(
            f"--tools {item}: a prefix (name:prefix) applies to a notebook variable holding "
            f"an MCP client, and is letters, digits or _, e.g. --tools {name}:tc"
        )
    found = await _from_variable(name, value, prefix=f"{short}_" if colon else None)
    try:
        for fn, free, threaded in found:
            toolset.add(fn, free=free, threaded=threaded)
    except UsageError as exc:
        if not is_client or colon:
            raise
        hint = name[:2].lower() if name[:2].isidentifier() else "mcp"
        raise UsageError(
            f"{exc}; or give {name}'s tools a prefix: --tools {name}:{hint} "
            f"(its tools are then named {hint}_...)"
        ) from None


def _builtin_group(name: str) -> list[Callable]:
    from aimu.tools import builtin

    return list(builtin.ALL_TOOLS if name == "all" else getattr(builtin, name))


async def _from_variable(
    name: str, value: Any, prefix: str | None = None
) -> list[tuple[Callable, bool, bool]]:
    """``(tool, free, threaded)`` held by a notebook variable: an MCP client's (gated, in a
    thread; ``prefix`` goes to its ``as_tools``) or the user's own (free, inline)."""
    as_tools = getattr(value, "as_tools", None)
    if callable(as_tools):
        tools = as_tools(prefix=prefix) if prefix else as_tools()
        if inspect.isawaitable(tools):
            tools = await tools
        return [(fn, False, True) for fn in tools]
    if getattr(value, "__tool_spec__", None) is not None:
        return [(value, True, False)]
    if isinstance(value, list | tuple) and all(hasattr(v, "__tool_spec__") for v in value):
        return [(fn, True, False) for fn in value]
    raise UsageError(
        f"--tools: the variable {name!r} holds a {type(value).__name__}; expected an MCP "
        "client (with as_tools()), a tool, or a list of tools"
    )


def make_kernel_python_tool(user_ns: dict[str, Any], allowed_imports: list[str]) -> Callable:
    """The ``python`` tool: code runs in the notebook's own namespace."""
    from aimu.tools.builtin._guard import allowed_modules
    from aimu.tools.builtin._python import describe_modules, make_python_in_process_tool
    from aimu.tools.decorator import tool

    inner = make_python_in_process_tool(user_ns, allowed_imports=allowed_imports, name="python")

    def python(code: str) -> str:
        return inner(code)

    python.__doc__ = _PYTHON_DOC.format(**describe_modules(allowed_modules(allowed_imports)))
    return tool(name="python")(python)
