"""What outlives a cell: conversations, ``%tool`` registrations, settings, notices shown.

One :class:`Session` per IPython shell (the ``AimuMagics`` instance owns it); the Python API
:func:`aimu_jupyter.run_agent` uses the same one, so magics and code share conversations.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aimu.models.base import ModelClient
from aimu_jupyter.kernel_tools._bridge import NotebookBridge
from aimu_jupyter.kernel_tools._new_cells import CodeLog
from aimu_jupyter.magics._usage import UsageLog
from aimu_jupyter.run._toolbox import ToolRegistry, make_kernel_python_tool
from aimu_jupyter.view._inbox_field import InboxFields

DEFAULT_CONVERSATION = "default"


@dataclass(frozen=True)
class Settings:
    """The defaults a run falls back on; ``%config AimuMagics.*`` sets them in a notebook."""

    model: str = ""
    tools: str = ""
    approval: str = ""
    approval_timeout: float = 300.0
    max_iterations: int = 10
    system: str = ""
    concurrent_tool_calls: bool = False
    allowed_imports: tuple[str, ...] = ()
    cache: bool | str = False

    def model_spec(self) -> str:
        """The configured model: ``AimuMagics.model``, else ``$AIMU_MODEL``, else ``""``."""
        return self.model.strip() or os.environ.get("AIMU_MODEL", "").strip()


@dataclass
class Conversation:
    """One conversation's messages, the tools its user chose to "Always allow", the code of
    its ``python`` calls (what ``%agent_export`` writes), and the client whose own session it
    continues (an outside agent's), if any."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    always_allowed: set[Any] = field(default_factory=set)
    """Tool identities (:func:`aimu_jupyter.approval._policy.allowance`)."""
    code_log: CodeLog = field(default_factory=CodeLog)
    #: Where each "Always allow" was chosen (a call's one-line label), by tool identity.
    always_chosen: dict[Any, str] = field(default_factory=dict)
    client: ModelClient | None = None

    def keep(self, client: ModelClient) -> ModelClient:
        """The client this run uses: a client holding a session of its own is kept, so the
        next cell on the same model continues that session; another model replaces it."""
        if not client.holds_session:
            return client
        kept = self.client
        if kept is not None and kept is not client and kept.name == client.name:
            return kept
        if kept is not None and kept is not client:
            kept.close()
        self.client = client
        return client

    def close(self) -> None:
        """End the kept client's session (``--new`` replaced this conversation)."""
        if self.client is not None:
            self.client.close()
            self.client = None


class Session:
    """The notebook's agent state, shared by ``%%agent``, ``%tool`` and ``run_agent``."""

    def __init__(self, shell: Any, settings: Callable[[], Settings] = Settings):
        self.shell = shell
        self.settings = settings
        self.conversations: dict[str, Conversation] = {}
        self.registry = ToolRegistry()
        self.usage = UsageLog()
        self._notices: set[str] = set()
        #: Whether each client session's frontend draws widgets, once its probe answered.
        self.frontends: dict[str, bool] = {}
        self._python: dict[tuple[str, ...], Callable] = {}
        self._notebook: list[Callable] | None = None
        self._inbox_fields: InboxFields | None = None
        self._bridge: NotebookBridge | None = None

    @property
    def user_ns(self) -> dict[str, Any]:
        return self.shell.user_ns if self.shell is not None else {}

    def conversation(self, name: str | None, new: bool = False) -> Conversation:
        """The named conversation (the notebook's default one when ``name`` is None)."""
        key = name or DEFAULT_CONVERSATION
        if new or key not in self.conversations:
            old = self.conversations.get(key)
            if old is not None:
                old.close()
            self.conversations[key] = Conversation()
        return self.conversations[key]

    @property
    def inbox_fields(self) -> InboxFields | None:
        """Where the lab extension claims a run's inbox; ``None`` outside a kernel."""
        kernel = getattr(self.shell, "kernel", None)
        if self._inbox_fields is None and getattr(kernel, "comm_manager", None) is not None:
            self._inbox_fields = InboxFields(kernel)
        return self._inbox_fields

    def notebook_bridge(self) -> NotebookBridge | None:
        """Where the lab extension lets the kernel reach the open notebook (registered on
        first use, before a run is shown); ``None`` outside a kernel."""
        kernel = getattr(self.shell, "kernel", None)
        if self._bridge is None and getattr(kernel, "comm_manager", None) is not None:
            self._bridge = NotebookBridge(kernel)
        return self._bridge

    def python_tool(self, allowed_imports: tuple[str, ...]) -> Callable:
        """The in-kernel ``python`` tool for this notebook (one per import allowlist)."""
        if allowed_imports not in self._python:
            self._python[allowed_imports] = make_kernel_python_tool(
                self.user_ns, list(allowed_imports)
            )
        return self._python[allowed_imports]

    def notebook_tools(self) -> list[Callable]:
        """The ``notebook`` group bound to this shell."""
        if self._notebook is None:
            from aimu_jupyter.kernel_tools._notebook import make_notebook_tools

            self._notebook = make_notebook_tools(self.shell, self.notebook_bridge)
        return self._notebook

    def notice_once(self, key: str, text: str) -> None:
        """Print ``text`` to the cell's stderr the first time ``key`` comes up."""
        if key not in self._notices:
            self._notices.add(key)
            print(text, file=sys.stderr)
