"""``ToolContext``: run information injected into tools that ask for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Deps = TypeVar("Deps")


@dataclass(frozen=True)
class ToolContext(Generic[Deps]):
    """What a tool knows about the run calling it.

    Annotate one parameter with ``ToolContext`` and the agent passes it at call time; the
    parameter never appears in the spec the model reads::

        @tool
        def lookup(key: str, ctx: ToolContext) -> str:
            \"\"\"Look a key up in the application's database.\"\"\"
            return ctx.deps.db[key]

    ``deps`` is the ``deps=`` object given to the agent; ``run_id`` identifies one
    ``Agent.run``; ``agent`` is the agent's name; ``tool_call_id`` the model's id for this call;
    ``approval`` the agent's approval policy (a tool that starts agents of its own, such as
    a sub-agent spawner, hands it on so delegation never escapes the gate).
    """

    deps: Deps | None = None
    run_id: str = ""
    agent: str = "agent"
    tool_call_id: str = ""
    approval: Callable[..., Any] | None = None
