"""``%agent_export`` and ``%agent_fix``: leave the agent's code in the notebook, fix a failure.

``%agent_export`` writes the code of a conversation's successful ``python`` calls as new
cells below (:mod:`aimu_jupyter.kernel_tools._new_cells`); ``%agent_fix`` runs the agent on
the last exception (:mod:`aimu_jupyter.magics._fix_prompt`) with the ``python`` and
``notebook`` tools, under the usual approval. ``%%agent --export`` and ``%%agent --fix`` do
the same from an agent cell.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from aimu_jupyter.magics._agent import APPROVE, MODEL, NAME, TOOLS, _parse, magics_of


@magics_class
class AgentCodeMagics(Magics):
    """``%agent_export`` and ``%agent_fix``."""

    @magic_arguments()
    @argument(
        "-n", "--name", help="The conversation to export (default: the notebook's default one)."
    )
    @line_magic
    def agent_export(self, line: str) -> None:
        """Write the code of the agent's successful python calls as new cells below.

        In JupyterLab and Notebook 7 the cells appear below this one, unexecuted, in the
        order the calls ran, each opening with a comment naming its run. Elsewhere the
        output shows the code to copy (terminal IPython: it becomes the next input).
        Re-running the cells in a fresh kernel recreates the agent's variables.

        Examples
        --------
        ::

            %agent_export
            %agent_export --name cleaning
        """
        args = _parse(self.agent_export, line, "%agent_export")
        export_conversation(self._session(), args.name)

    @magic_arguments()
    @MODEL
    @TOOLS
    @APPROVE
    @NAME
    @argument(
        "-e",
        "--error",
        metavar="VAR",
        help="Ask about the exception held by the notebook variable VAR (one your code "
        "caught) instead of the last cell's.",
    )
    @argument("question", nargs="*", help="What to ask about the failure (optional).")
    @line_magic
    def agent_fix(self, line: str) -> Any:
        """Ask the agent why the last cell failed and how to fix it.

        The prompt carries the last exception's traceback (trimmed) and the source of the
        cell that raised it; the python and notebook tools are available, and nothing runs
        without the usual approval. The agent proposes the fixed cell with add_cell. (End
        the question without "?": IPython reads a trailing "?" as a help request.) With
        --error VAR it asks about an exception your code caught and kept in VAR.

        Examples
        --------
        ::

            %agent_fix
            %agent_fix --model openai:gpt-4o-mini why is the column missing
            %agent_fix --error failure
        """
        from dataclasses import replace

        from aimu_jupyter.magics._fix_prompt import fix_prompt, with_fix_tools
        from aimu_jupyter.run import _runner as runner
        from aimu_jupyter.run._spec import RunSpec

        args = _parse(self.agent_fix, line, "%agent_fix")
        spec = RunSpec.from_arguments(args, self.agent_fix.parser)
        session = self._session()
        error = None
        if args.error is not None:
            error = self.shell.user_ns.get(args.error)
            if not isinstance(error, BaseException):
                raise UsageError(
                    f"%agent_fix --error {args.error}: no notebook variable of that name holds "
                    "an exception (catch one with: except Exception as failure: ...)"
                )
        prompt = fix_prompt(self.shell, " ".join(args.question), error)
        tools = spec.tools if spec.tools is not None else session.settings().tools
        spec = replace(spec, tools=with_fix_tools(tools))
        return _without_value(runner.run(session, prompt, spec))

    def _session(self) -> Any:
        return magics_of(self.shell).session


async def _without_value(run: Awaitable[Any]) -> None:
    """Await the run; the answer is in its output already, not repeated as the cell's value."""
    await run


def export_conversation(session: Any, name: str | None, only: Collection[str] | None = None) -> int:
    """Publish the conversation's successful python calls as cells; returns how many."""
    from aimu_jupyter.kernel_tools._new_cells import exported_cells, publish_cells
    from aimu_jupyter.run._session import DEFAULT_CONVERSATION

    key = name or DEFAULT_CONVERSATION
    conversation = session.conversations.get(key)
    if conversation is None:
        known = ", ".join(session.conversations) or "none yet"
        raise UsageError(f"%agent_export: no conversation named {key!r} (conversations: {known})")
    cells = exported_cells(conversation.messages, conversation.code_log, only)
    if not cells:
        print(f"Nothing to export: conversation {key!r} has no successful python tool calls.")
        return 0
    publish_cells(cells, origin="export")
    return len(cells)


def load(shell: Any) -> None:
    """Register the magics; loading twice changes nothing."""
    if shell.magics_manager.registry.get("AgentCodeMagics") is None:
        shell.register_magics(AgentCodeMagics)


def unload(shell: Any) -> None:
    """Remove the magics."""
    if shell.magics_manager.registry.pop("AgentCodeMagics", None) is not None:
        for name in ("agent_export", "agent_fix"):
            shell.magics_manager.magics["line"].pop(name, None)
