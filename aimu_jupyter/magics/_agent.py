"""``%%agent`` and ``%tool``, their settings, and the input transformer that awaits them.

Loading must stay cheap (``%load_ext aimu`` runs at the top of notebooks): this module
imports only IPython and traitlets; the agent machinery is imported when a magic first runs.
"""

from __future__ import annotations

import json
import keyword
import shlex
from collections.abc import Awaitable, Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import MagicArgumentParser, argument, magic_arguments
from traitlets import Bool, CaselessStrEnum, Float, Int, List, Unicode, Union

_AGENT_CALL = "get_ipython().run_cell_magic('agent',"
_FIX_CALL = "get_ipython().run_line_magic('agent_fix',"


# The options of a run that %%agent shares with %agent_fix: declared once, read by
# RunSpec.from_arguments (each ``dest`` is the RunSpec field it sets).
MODEL = argument(
    "-m",
    "--model",
    help="'provider:model' (e.g. openai:gpt-4o-mini, ollama:qwen3:8b), or the name of a "
    "notebook variable holding a ModelClient. Default: %%config AimuMagics.model, "
    "then $AIMU_MODEL.",
)
TOOLS = argument(
    "-t",
    "--tools",
    help="Comma list: web, fs, compute, time, misc, all, python (code in this "
    "notebook's namespace), notebook (variables and cells), %%tool names, or notebook "
    "variables holding an MCPClient, a tool or a list of tools.",
)
APPROVE = argument(
    "-a",
    "--approve",
    dest="tool_approval",
    metavar="POLICY",
    help="auto (run every call), ask (ask for every call), deny (refuse calls that "
    "would ask), or a notebook variable holding a policy(name, arguments). Default: "
    "reading tools run, tools that write/execute/submit/spawn ask. With --each, "
    "sample:K asks for the first K rows' calls, then approves the rest like them.",
)
NAME = argument(
    "-n",
    "--name",
    help="Continue (or start) the named conversation instead of the notebook's default.",
)


def await_agent_cells(lines: list[str]) -> list[str]:
    """Input transformer: make a ``%%agent`` cell a top-level-await cell.

    IPython has already turned the cell into one ``run_cell_magic('agent', ...)`` line;
    prefixing ``await`` makes the kernel run the cell as a coroutine, so the cell stays busy
    until the agent finishes, Run All waits, and an interrupt cancels the run. A
    ``%agent_fix`` line is awaited the same way. A body that another magic transforms while
    a cell runs (``%%time``, ``%%capture``) is left alone: it is run synchronously, and the
    magic then runs the agent to completion itself.
    """
    if not lines or not lines[0].startswith((_AGENT_CALL, _FIX_CALL)):
        return lines
    magics = _loaded()
    if magics is not None:
        if magics.cells_running:
            return lines
        magics.awaited = lines[0].startswith(_AGENT_CALL)
    return ["await " + lines[0], *lines[1:]]


def _loaded() -> AimuMagics | None:
    from IPython import get_ipython

    shell = get_ipython()
    return shell.magics_manager.registry.get("AimuMagics") if shell is not None else None


@magics_class
class AimuMagics(Magics):
    """LLM agents in notebook cells: ``%%agent`` runs one, ``%tool`` lends it functions."""

    model = Unicode(
        "",
        help="Model for %%agent when --model is not given, as 'provider:model' "
        "(e.g. 'openai:gpt-4o-mini'). Empty: $AIMU_MODEL, then the library's default.",
    ).tag(config=True)
    tools = Unicode(
        "",
        help="Tools for %%agent when --tools is not given: a comma list of groups "
        "(web, fs, compute, time, misc, all, python, notebook) or notebook variables. "
        "%tool-registered functions are always included.",
    ).tag(config=True)
    approval = CaselessStrEnum(
        ["", "auto", "ask", "deny"],
        default_value="",
        help="Approval when --approve is not given. Empty: reading tools and %tool "
        "functions run, tools that write, execute, submit or spawn ask. auto: run every "
        "call. ask: ask for every call. deny: refuse every call that would ask.",
    ).tag(config=True)
    approval_timeout = Float(
        300.0,
        min=1.0,
        help="Seconds an approval panel waits for a click before the headless policy "
        "decides ($AIMU_APPROVAL=auto approves, anything else denies).",
    ).tag(config=True)
    max_iterations = Int(
        10, min=1, help="Most model turns that may call tools in one %%agent run."
    ).tag(config=True)
    system = Unicode("", help="System message for new conversations.").tag(config=True)
    concurrent_tool_calls = Bool(
        False,
        help="Run the tool calls of one model turn concurrently (approvals still ask one "
        "at a time, in order).",
    ).tag(config=True)
    allowed_imports = List(
        Unicode(),
        help="Modules the python tool may import beyond its allowlist, e.g. ['sympy'].",
    ).tag(config=True)
    cache = Union(
        [Bool(), Unicode()],
        default_value=False,
        help="Keep the model's answers and replay them when a cell asks the same again "
        "(Run All costs nothing twice; tools still run): True for $AIMU_CACHE, else the "
        "per-user cache file, or a file path. --fresh asks the model anyway for one cell.",
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any):
        super().__init__(shell=shell, **kwargs)
        self._session: Any = None
        #: Cells executing now (``%%capture`` runs one inside another).
        self.cells_running = 0
        #: The running cell's ``%%agent`` call was transformed into an awaited one.
        self.awaited = False

    def cell_started(self, *_: Any) -> None:
        self.cells_running += 1

    def cell_ended(self, *_: Any) -> None:
        self.cells_running = max(0, self.cells_running - 1)
        if not self.cells_running:
            self.awaited = False

    @property
    def session(self) -> Any:
        """The notebook's :class:`~aimu_jupyter.run._session.Session` (created on first use)."""
        if self._session is None:
            from aimu_jupyter.run._session import Session

            self._session = Session(self.shell, self.settings)
        return self._session

    def settings(self) -> Any:
        """The current ``%config AimuMagics.*`` values as a Settings snapshot."""
        from aimu_jupyter.run._session import Settings

        return Settings(
            model=self.model,
            tools=self.tools,
            approval=self.approval.lower(),
            approval_timeout=self.approval_timeout,
            max_iterations=self.max_iterations,
            system=self.system,
            concurrent_tool_calls=self.concurrent_tool_calls,
            allowed_imports=tuple(self.allowed_imports),
            cache=self.cache,
        )

    @magic_arguments("%agent")
    @MODEL
    @TOOLS
    @APPROVE
    @argument(
        "--trust-mcp",
        metavar="NAMES",
        help="Comma list of --tools variables holding MCP clients whose servers you trust: "
        "their tools' annotations (readOnlyHint) decide whether a call asks. Otherwise "
        "every MCP tool asks, since annotations are the server's own claims.",
    )
    @argument("--new", action="store_true", help="Start a fresh conversation.")
    @NAME
    @argument(
        "-s",
        "--system",
        dest="system_message",
        metavar="TEXT",
        help="System message for this conversation.",
    )
    @argument(
        "--max-iterations",
        type=int,
        help="Most model turns that may call tools (default 10).",
    )
    @argument(
        "-o",
        "--out",
        metavar="VAR",
        help="Store the final answer in the notebook variable VAR.",
    )
    @argument(
        "--no-interpolate",
        action="store_true",
        help="Send the prompt as written; {name} is not replaced by the variable's value.",
    )
    @argument(
        "--export",
        action="store_true",
        help="After the run, write the code of its successful python calls as cells below.",
    )
    @argument(
        "--fix",
        action="store_true",
        help="Ask about the last exception: its traceback and cell go into the prompt (the "
        "cell body, if any, is the question); python and notebook tools are added.",
    )
    @argument(
        "--each",
        dest="rows",
        metavar="ROWS",
        help="Run the cell once per row of the notebook variable ROWS (a DataFrame or a list "
        "of dicts/strings), each in a fresh conversation: {column} fills from the row, "
        "{item} is the whole row. The results come back as a DataFrame (--out VAR keeps it).",
    )
    @argument(
        "--concurrency",
        type=int,
        help="With --each: how many runs at once (default 8; with a batch --backend, all).",
    )
    @argument(
        "--backend",
        default="local",
        help="With --each: local (default), openai-batch or anthropic-batch (the provider's "
        "batch API: half price, results within 24 h, one batch per model turn), or ray.",
    )
    @argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="With --each: start no new row once the money spent and in flight would pass "
        "USD (needs the model's price, see aimu.prices).",
    )
    @argument(
        "--poll-interval",
        type=float,
        metavar="SECONDS",
        help="With a batch --backend: how often to ask the provider how it goes (default 30).",
    )
    @argument(
        "--checkpoint",
        metavar="PATH",
        help="With --each: append each finished row to PATH (.jsonl or a folder); running "
        "the cell again skips the rows that succeeded.",
    )
    @argument(
        "--thinking",
        help="How hard the model reasons before answering: off, on, low, medium or high "
        "(default: the provider's). A model that cannot reason says so.",
    )
    @argument(
        "--option",
        dest="generate_kwargs",
        action="append",
        metavar="NAME=VALUE",
        help="A generation option for every request, e.g. temperature=0.2, max_tokens=500, "
        "seed=7. Repeat for more.",
    )
    @argument(
        "--compact",
        dest="compaction",
        metavar="POLICY",
        help="Shorten the conversation before each model turn: last:N keeps the last N "
        "turns, tokens:N drops old tool results over about N tokens, or a notebook "
        "variable holding a messages -> messages function.",
    )
    @argument(
        "--schema",
        metavar="MODEL",
        help="A notebook variable holding a pydantic model, dataclass or TypedDict: the "
        "answer is validated against it and --out stores the instance.",
    )
    @argument(
        "--cache",
        nargs="?",
        const=True,
        metavar="PATH",
        help="Answer from the response cache what the model was asked before (PATH: the "
        "store's file; default %%config AimuMagics.cache, then $AIMU_CACHE, then the "
        "per-user cache). Tools still run; the record says which turns were replayed.",
    )
    @argument(
        "--fresh",
        action="store_true",
        help="Ask the model even if the cache holds an answer; the new answer replaces it.",
    )
    @cell_magic
    def agent(self, line: str, cell: str) -> Any:
        """Run an LLM agent on the cell's text; the answer streams into the cell.

        The cell body is the prompt. ``{name}`` is replaced by the notebook variable's value
        (``{{`` for a literal brace, or --no-interpolate). Cells continue one conversation
        unless --new or --name says otherwise. Tool calls show as cards; a call that
        writes, executes or submits waits for Approve / Deny. In a headless run (nbclient,
        papermill) no one can click: --approve, else $AIMU_APPROVAL (auto or deny), else
        deny decides, and the output records each decision. Frontends that draw no widgets
        (jupyter console, terminal IPython) ask on stdin instead. Inside %%time or %%capture
        the declared policy decides.

        Examples
        --------
        ::

            %load_ext aimu

            %%agent --model openai:gpt-4o-mini --tools web,python
            Load sales.csv into a DataFrame called df and tell me which month grew fastest.

            %%agent --out summary
            Summarise {df.shape[0]} rows of {topic} in two sentences.

            %%agent --tools notebook --no-interpolate
            What does {"a": 1} mean in the cell above?

            %%agent --thinking high --option temperature=0.2 --compact last:20
            Plan the analysis of df step by step.

            %%agent --schema City --out city
            Name the largest city of France and its population.

            %%agent --cache
            Summarise the report in three bullet points.

        While the cell runs, the box below its output ("tell the agent…") sends a message
        the agent reads before its next model turn.

        From Python, for loops and scripts: ``await aimu_jupyter.run_agent(prompt, ...)``.
        """
        args = _parse(self.agent, line, "%%agent")
        if args.out is not None and (not args.out.isidentifier() or keyword.iskeyword(args.out)):
            raise UsageError(f"--out {args.out}: not a valid variable name")
        prompt = cell.strip()
        if not prompt and not args.fix:
            raise UsageError("%%agent: the cell is empty; write the prompt below the first line")
        from dataclasses import replace

        from aimu_jupyter.run._prompt import interpolate
        from aimu_jupyter.run._spec import RunSpec

        spec = RunSpec.from_arguments(args, self.agent.parser)
        if spec.each is not None:
            _refuse_with_each(args)
            return self._start(lambda nested: self._run_each(spec, prompt, args.out))
        if not args.no_interpolate:
            prompt = interpolate(prompt, self.shell.user_ns)
        if args.fix:
            from aimu_jupyter.magics._fix_prompt import fix_prompt, with_fix_tools

            prompt = fix_prompt(self.shell, prompt)
            spec = replace(spec, tools=with_fix_tools(spec.tools or self.tools))
        return self._start(
            lambda nested: self._run(replace(spec, nested=nested), prompt, args.out, args.export)
        )

    def _start(self, run: Callable[[bool], Awaitable[Any]]) -> Any:
        """The run as the cell's awaited coroutine, or driven to completion here when another
        magic (``%%time``, ``%%capture``) runs the body without awaiting it."""
        awaited, self.awaited = self.awaited, False
        if awaited:
            return run(False)
        from aimu_jupyter.magics._nested import run_to_completion

        return run_to_completion(lambda: run(True))

    async def _run_each(self, spec: Any, template: str, out: str | None) -> Any:
        from aimu_jupyter.run._each import run_each
        from aimu_jupyter.run._kernel_status import kernel_busy

        with kernel_busy(getattr(self.shell, "kernel", None)):
            return await run_each(self.session, template, spec, out)

    async def _run(self, spec: Any, prompt: str, out: str | None, export: bool) -> None:
        from aimu_jupyter.run import _runner as runner
        from aimu_jupyter.run._session import DEFAULT_CONVERSATION

        if export:
            key = spec.name or DEFAULT_CONVERSATION
            before = None if spec.new else self.session.conversations.get(key)
            done_before = set(before.code_log.calls) if before is not None else set()
        answer = await runner.run(self.session, prompt, spec)
        if out is not None:
            self.shell.user_ns[out] = answer
        if export:
            from aimu_jupyter.magics._code import export_conversation

            log = self.session.conversation(spec.name).code_log
            export_conversation(self.session, spec.name, set(log.calls) - done_before)

    @line_magic
    def agent_usage(self, line: str) -> None:
        """Show tokens, model calls, tool calls and time per conversation of this notebook.

        Examples
        --------
        ::

            %agent_usage
        """
        if line.strip():
            raise UsageError("%agent_usage takes no arguments")
        from IPython.display import display

        display(self.session.usage.bundle(), raw=True)

    @line_magic
    def agent_cache(self, line: str) -> None:
        """Show the response cache (file, size, answers, hits) or clear some of it.

        The store is ``%config AimuMagics.cache`` when that names a file, else
        ``$AIMU_CACHE``, else the per-user cache; ``--path`` names another. The same
        arguments as the ``aimu cache`` command line.

        Examples
        --------
        ::

            %agent_cache
            %agent_cache clear --older-than 30
            %agent_cache clear --model openai:gpt-4o-mini
            %agent_cache clear --all
        """
        from aimu.cli import CommandError, add_cache_arguments, cache_command

        parser = MagicArgumentParser(prog="%agent_cache", add_help=False)
        add_cache_arguments(parser)
        try:
            args = parser.parse_args(shlex.split(line))
        except ValueError as exc:
            raise UsageError(f"%agent_cache: {exc}") from None
        if args.path is None and isinstance(self.cache, str) and self.cache.strip():
            args.path = self.cache
        try:
            print(cache_command(args))
        except CommandError as exc:
            raise UsageError(f"%agent_cache: {exc}") from None

    @magic_arguments()
    @argument("names", nargs="*", help="Notebook functions to register as tools.")
    @argument(
        "--ask",
        action="store_true",
        help="Ask for approval before each call of these functions.",
    )
    @argument("-l", "--list", action="store_true", help="Show the registered tools.")
    @argument("-r", "--remove", action="store_true", help="Unregister the named functions.")
    @line_magic
    def tool(self, line: str) -> None:
        """Lend notebook functions to %%agent as tools.

        Registered functions are offered to the model in every %%agent cell and run without
        asking, unless registered with --ask. A function without @aimu.tool is decorated on
        the spot (its type hints and docstring become the spec the model reads). The name is
        looked up again at each run, so redefining the function updates the tool.

        Examples
        --------
        ::

            def letter_counter(word: str, letter: str) -> int:
                "Count how often a letter occurs in a word."
                return word.lower().count(letter.lower())

            %tool letter_counter
            %tool --ask send_email
            %tool --list
            %tool --remove letter_counter
        """
        args = _parse(self.tool, line, "%tool")
        registry = self.session.registry
        if args.remove:
            if not args.names:
                raise UsageError("%tool --remove: name the functions to unregister")
            registry.remove(args.names)
            return
        if args.names:
            tools = registry.register(self.shell.user_ns, args.names, ask=args.ask)
            names = ", ".join(t.__tool_spec__["function"]["name"] for t in tools)
            note = " (each call asks first)" if args.ask else ""
            print(f"Registered tool{'s' if len(tools) > 1 else ''}: {names}{note}")
        elif args.ask:
            raise UsageError("%tool --ask: name the functions to register")
        if args.list or not args.names:
            print(_describe(registry.resolve(self.shell.user_ns)))


def _parse(magic: Any, line: str, label: str) -> Any:
    """Parse a magic's options with shell quoting (``--system "Be brief."``)."""
    try:
        return magic.parser.parse_args(shlex.split(line))
    except ValueError as exc:
        raise UsageError(f"{label}: {exc} in the options") from None
    except UsageError as exc:
        raise UsageError(f"{label}: {exc}") from None


def _refuse_with_each(args: Any) -> None:
    """``--each`` runs every row in a fresh conversation: options about one are refused."""
    unused = [flag for flag, given in (("--new", args.new), ("--name", args.name),
              ("--export", args.export), ("--fix", args.fix),
              ("--no-interpolate", args.no_interpolate)) if given]  # fmt: skip
    if unused:
        raise UsageError(
            f"--each runs every row in a fresh conversation of its own; {', '.join(unused)} "
            "does not apply to it"
        )


def _describe(tools: list[tuple[Any, bool]]) -> str:
    if not tools:
        return "No tools registered. Register a notebook function with: %tool my_function"
    blocks = []
    for fn, ask in tools:
        spec = fn.__tool_spec__["function"]
        gate = "asks before each call" if ask else "runs without asking"
        parameters = json.dumps(spec.get("parameters", {}), indent=2)
        blocks.append(f"{spec['name']} ({gate})\n  {spec.get('description', '')}\n{parameters}")
    return "\n\n".join(blocks)


def load(shell: Any) -> None:
    """Register the magics and the transformer; loading twice changes nothing."""
    if shell.magics_manager.registry.get("AimuMagics") is None:
        shell.register_magics(AimuMagics)
    if await_agent_cells not in shell.input_transformers_post:
        shell.input_transformers_post.append(await_agent_cells)
        magics = shell.magics_manager.registry["AimuMagics"]
        shell.events.register("pre_execute", magics.cell_started)
        shell.events.register("post_execute", magics.cell_ended)
    from aimu_jupyter.magics import _code as code_magics

    code_magics.load(shell)


def unload(shell: Any) -> None:
    """Remove the magics, their settings entry and the transformer."""
    magics = shell.magics_manager.registry.pop("AimuMagics", None)
    if magics is not None:
        for event, callback in (
            ("pre_execute", magics.cell_started),
            ("post_execute", magics.cell_ended),
        ):
            if callback in shell.events.callbacks[event]:
                shell.events.unregister(event, callback)
        for kind, names in (
            ("cell", ("agent",)),
            ("line", ("tool", "agent_usage", "agent_cache")),
        ):
            for name in names:
                shell.magics_manager.magics[kind].pop(name, None)
        if magics in shell.configurables:
            shell.configurables.remove(magics)
    if await_agent_cells in shell.input_transformers_post:
        shell.input_transformers_post.remove(await_agent_cells)
    from aimu_jupyter.magics import _code as code_magics

    code_magics.unload(shell)


def magics_of(shell: Any) -> AimuMagics:
    """The loaded :class:`AimuMagics` of ``shell``, loading the extension if needed."""
    load(shell)
    return shell.magics_manager.registry["AimuMagics"]
