"""What ``--tools`` names, turned into tool functions, and the ``%tool`` registry.

An item of ``--tools`` is a built-in group (``web``, ``fs``, ``compute``, ``time``, ``misc``,
``all``), ``python`` (code in the notebook's own namespace), ``notebook`` (variables and
cells), a ``%tool``-registered name, or a notebook variable holding an MCP client, a tool,
or a list of tools. Whether a tool asks before it runs is the tool's own flag
(``__tool_read_only__``), read by the notebook's policy; ``%tool --ask`` records ``False``
on the function. Nothing here decides it from a name or from where a tool came from.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import signal
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from IPython.core.error import UsageError

from aimu.tools.approval import read_only
from aimu.tools.context import ToolContext
from aimu.tools.identity import origin_of
from aimu.tools.results import ToolResult
from aimu.tools.stopping import run_in_thread

BUILTIN_GROUPS = ("web", "fs", "compute", "time", "misc", "all")
NOTEBOOK_GROUPS = ("python", "notebook")

_PYTHON_DOC = """\
Run Python code inside the user's Jupyter notebook, in the notebook's own namespace.

The user's variables (DataFrames, lists, models...) are readable by name, and variables you
assign stay in the notebook for the user's next cells. Runs like a REPL: returns what the
code prints, then "Result:" with the repr of a final bare expression, or "Error:" with a
short traceback. Plots (plt.show() or figures left open), display() of images and PIL
images come back to you as images; DataFrames as short tables. Printed output beyond about
{chars} characters is cut in the middle.
Restricted builtins (no open, exec, eval, input) and an import allowlist apply.
Preloaded, no import needed: {preloaded}. Other importable modules: {importable}.

Args:
    code: Python source to run, e.g. "df.groupby('month')['sales'].sum()".
"""


@dataclass
class Toolset:
    """The tools of one run, and the names of those whose synchronous calls run in a worker
    thread (built-in and MCP tools) rather than inline."""

    tools: list[Callable] = field(default_factory=list)
    threaded: set[str] = field(default_factory=set)

    def add(self, fn: Callable, threaded: bool = False) -> None:
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
    """An async tool with ``fn``'s spec and parameters that runs ``fn`` through ``call``;
    for approval it is ``fn`` itself (:mod:`aimu.tools.identity`)."""

    @functools.wraps(fn)
    async def twin(**kwargs: Any) -> Any:
        return await call(fn, kwargs)

    twin.__tool_is_async__ = True
    twin.__tool_identity__ = origin_of(fn)
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
    the agent use the new ``f``. ``names`` maps each name to whether it was registered with
    ``--ask``; such a function gets ``__tool_read_only__ = False`` (it asks), and so does
    each redefinition of it.
    """

    def __init__(self) -> None:
        self.names: dict[str, bool] = {}

    def register(self, user_ns: dict[str, Any], names: list[str], ask: bool) -> list[Callable]:
        tools = [self._tool(user_ns, name, ask) for name in names]
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
        """``(tool, asks)`` for every registered name, as currently defined."""
        tools = [self._tool(user_ns, name, ask) for name, ask in self.names.items()]
        return [(fn, read_only(fn) is False) for fn in tools]

    def _tool(self, user_ns: dict[str, Any], name: str, ask: bool) -> Callable:
        if name not in user_ns:
            raise UsageError(
                f"%tool: no notebook variable named {name!r}"
                + (f"; define it or run %tool --remove {name}" if name in self.names else "")
            )
        fn = as_tool(user_ns[name], name)
        if ask:
            fn.__tool_read_only__ = False
        return fn


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
    trusted: Sequence[Any] = (),
) -> Toolset:
    """Turn ``--tools`` items (names, or tool objects from Python) and every ``%tool``
    registration into a :class:`Toolset`. ``trusted`` (``--trust-mcp``) names the MCP
    clients of ``items`` (or holds them, from Python) whose servers' annotations decide."""
    toolset = Toolset()
    for fn, _asks in registry.resolve(user_ns):
        toolset.add(fn)
    _check_trusted(items, trusted, user_ns)
    for item in items:
        if not isinstance(item, str):
            trust = any(item is t for t in trusted)
            for fn, threaded in await _from_variable(type(item).__name__, item, trust=trust):
                toolset.add(fn, threaded=threaded)
        elif item in registry.names:
            continue
        elif item == "python":
            toolset.add(make_python())
        elif item == "notebook":
            for fn in make_notebook():
                toolset.add(fn)
        elif item in BUILTIN_GROUPS:
            for fn in _builtin_group(item):
                toolset.add(fn, threaded=True)
        elif (variable := item.partition(":")[0].strip()) in user_ns:
            await _add_variable(toolset, item, user_ns, variable in trusted)
        else:
            choices = ", ".join((*BUILTIN_GROUPS, *NOTEBOOK_GROUPS))
            raise UsageError(
                f"--tools: unknown item {item!r}. Use {choices}, a %tool function, or a "
                "notebook variable holding an MCP client, a tool or a list of tools"
            )
    return toolset


def _check_trusted(items: list[Any], trusted: Sequence[Any], user_ns: dict[str, Any]) -> None:
    """Every ``--trust-mcp`` entry names (or is) an MCP client given in ``--tools``."""
    clients = {item.partition(":")[0].strip() for item in items if isinstance(item, str)}
    for entry in trusted:
        if isinstance(entry, str):
            value = user_ns.get(entry) if entry in clients else None
        else:
            value = entry if any(entry is item for item in items) else None
        if not callable(getattr(value, "as_tools", None)):
            label = entry if isinstance(entry, str) else type(entry).__name__
            raise UsageError(
                f"--trust-mcp {label}: name a notebook variable holding an MCP client that "
                "--tools also names, e.g. --tools shop --trust-mcp shop"
            )


async def _add_variable(
    toolset: Toolset, item: str, user_ns: dict[str, Any], trust: bool = False
) -> None:
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
    found = await _from_variable(name, value, prefix=f"{short}_" if colon else None, trust=trust)
    try:
        for fn, threaded in found:
            toolset.add(fn, threaded=threaded)
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
    name: str, value: Any, prefix: str | None = None, trust: bool = False
) -> list[tuple[Callable, bool]]:
    """``(tool, threaded)`` held by a notebook variable: an MCP client's (run in a thread;
    ``prefix`` goes to its ``as_tools``, and ``trust`` as ``trust_annotations=True``) or
    tools (run inline)."""
    as_tools = getattr(value, "as_tools", None)
    if callable(as_tools):
        options: dict[str, Any] = {"prefix": prefix} if prefix else {}
        if trust:
            if "trust_annotations" not in _parameters(as_tools):
                raise UsageError(
                    f"--trust-mcp {name}: its as_tools() takes no trust_annotations; use an "
                    "aimu MCPClient"
                )
            options["trust_annotations"] = True
        tools = as_tools(**options)
        if inspect.isawaitable(tools):
            tools = await tools
        return [(fn, True) for fn in tools]
    if getattr(value, "__tool_spec__", None) is not None:
        return [(value, False)]
    if isinstance(value, list | tuple) and all(hasattr(v, "__tool_spec__") for v in value):
        return [(fn, False) for fn in value]
    raise UsageError(
        f"--tools: the variable {name!r} holds a {type(value).__name__}; expected an MCP "
        "client (with as_tools()), a tool, or a list of tools"
    )


def _parameters(fn: Callable) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def make_kernel_python_tool(user_ns: dict[str, Any], allowed_imports: list[str]) -> Callable:
    """The ``python`` tool: code runs in the notebook's own namespace.

    What the code displays (plots, ``display()`` of images, PIL images) comes back as
    images; each call's code is kept in the running conversation's code log, for
    ``%agent_export``.
    """
    from aimu.tools.builtin import PythonRunner
    from aimu.tools.decorator import tool
    from aimu_jupyter.kernel_tools._displays import inline_plots_after, notebook_displays
    from aimu_jupyter.kernel_tools._new_cells import running_code_log

    runner = PythonRunner(user_ns, allowed_imports, displays=notebook_displays)

    def python(code: str, ctx: ToolContext) -> str | ToolResult:
        with inline_plots_after():
            outcome = runner(code)
        log = running_code_log()
        if log is not None:
            log.add(ctx.tool_call_id, code, ok=not outcome.failed)
        return outcome.result()

    python.__doc__ = _PYTHON_DOC.format(**runner.doc_fields())
    made = tool(name="python", read_only=False)(python)
    made.__tool_code__ = {"code": "python"}
    return made
