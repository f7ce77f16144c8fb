"""Tool groups: tools an agent holds but does not advertise until it loads them.

Every tool's schema is sent on every model call. A :class:`ToolGroup` costs one line instead:
an agent given groups carries a ``load_tools`` tool whose description lists each group's name
and description; once the model loads a group, its tools are offered from the next turn on.
A 50-tool MCP server is one line of context until the model needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from aimu.tools.decorator import tool

LOAD_TOOLS = "load_tools"


class ToolGroup:
    """A named set of tools an agent can load on demand.

    ``description`` is the one line the model chooses by; ``build`` returns the group's tools
    (``@tool``-decorated, factory-made or MCP wrappers, e.g. ``client.as_tools``) and is
    called once, when the group is first loaded, so an unused group costs nothing to set up.
    ``build=None`` marks a resident group: its tools are always present (the agent holds them
    itself) and the listing only describes them. ``guidance`` is what ``load_tools`` answers
    besides the tool names (how to use them); ``note`` joins the group's line in the listing.
    ``tools=[...]`` gives the tools themselves instead of ``build``.
    """

    def __init__(
        self,
        name: str,
        description: str,
        build: Callable[[], Sequence[Callable]] | None = None,
        guidance: str = "",
        note: str = "",
        *,
        tools: Sequence[Callable] | None = None,
    ):
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise ValueError(f"a ToolGroup needs a non-empty name without padding, not {name!r}")
        self.name = name
        for label, text in (("description", description), ("guidance", guidance), ("note", note)):
            if not isinstance(text, str):
                raise TypeError(f"ToolGroup {name!r}: {label} must be a string")
        if isinstance(build, list | tuple) and tools is None:
            build, tools = None, build  # the tools themselves, as before build= existed
        if build is not None and tools is not None:
            raise TypeError(f"ToolGroup {name!r}: give build= or tools=, not both")
        if build is not None and not callable(build):
            raise TypeError(f"ToolGroup {name!r}: build must be a callable returning the tools")
        self.description, self.guidance, self.note = description, guidance, note
        self.build = build
        self._tools = None if tools is None else self._checked(tools)
        self.resident = build is None and tools is None
        """Whether the group's tools are always present (nothing to load)."""

    @property
    def tools(self) -> tuple[Callable, ...]:
        """The group's tools, built on first use; none for a resident group."""
        if self._tools is None:
            self._tools = () if self.build is None else self._checked(self.build())
        return self._tools

    @property
    def tool_names(self) -> list[str]:
        return [fn.__tool_spec__["function"]["name"] for fn in self.tools]

    @property
    def line(self) -> str:
        """The group's line in the ``load_tools`` listing."""
        return " ".join(part for part in (f"- {self.name}: {self.description}", self.note) if part)

    def __repr__(self) -> str:
        return f"ToolGroup({self.name!r}, {self.description!r})"

    def _checked(self, tools: Any) -> tuple[Callable, ...]:
        if callable(tools) or isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
            raise TypeError(f"ToolGroup {self.name!r}: tools must be a list of tools")
        tools = tuple(tools)
        for fn in tools:
            if getattr(fn, "__tool_spec__", None) is None:
                raise TypeError(
                    f"ToolGroup {self.name!r}: {getattr(fn, '__name__', fn)!r} is not a tool; "
                    "decorate it with @aimu.tool"
                )
        return tools


def check_groups(groups: Iterable[ToolGroup] | None, label: str = "tool_groups") -> list[ToolGroup]:
    """``groups`` as a list, refusing anything that is not a list of uniquely named groups."""
    if groups is None:
        return []
    if isinstance(groups, ToolGroup) or not isinstance(groups, list | tuple):
        raise TypeError(f"{label} must be a list of ToolGroup")
    seen: set[str] = set()
    for group in groups:
        if not isinstance(group, ToolGroup):
            raise TypeError(f"{label} must contain only ToolGroup values, not {group!r}")
        if group.name in seen:
            raise ValueError(f"{label} names the group {group.name!r} twice")
        seen.add(group.name)
    return list(groups)


class GroupLoader:
    """One agent's groups and what it has loaded; never shared between agents.

    :attr:`tool` is the ``load_tools`` tool to offer; :attr:`loaded` maps the names of the
    tools loaded so far to the tools. A loaded tool whose name is already taken (by the
    agent's own tools or an earlier group) is skipped and reported, never shadowing.
    """

    def __init__(self, groups: Sequence[ToolGroup], taken: Callable[[], Iterable[str]]):
        self.groups = {group.name: group for group in groups}
        self.loaded: dict[str, Callable] = {}
        self._done: set[str] = set()
        self._taken = taken
        self.tool = self._make_tool()

    def fresh(self) -> GroupLoader:
        """The same groups with nothing loaded, for a new conversation."""
        return GroupLoader(list(self.groups.values()), self._taken)

    def load(self, group: str) -> str:
        """Load ``group``; the text the model reads."""
        chosen = self.groups.get(group)
        if chosen is None:
            return f"Unknown tool group {group!r}. Groups: {', '.join(self.groups)}."
        if chosen.resident:
            return _with_guidance(f"The tools of group {group!r} are already yours.", chosen)
        if group in self._done:
            return f"Tool group {group!r} is already loaded: {', '.join(chosen.tool_names)}."
        taken = set(self._taken()) | set(self.loaded) | {LOAD_TOOLS}
        added, skipped = [], []
        for fn, name in zip(chosen.tools, chosen.tool_names, strict=True):
            if name in taken:
                skipped.append(name)
            else:
                self.loaded[name] = fn
                added.append(name)
        self._done.add(group)
        text = (
            f"Loaded tool group {group!r}: {', '.join(added) or 'no new tools'}. "
            "They are available from your next turn."
        )
        if skipped:
            text += f" Skipped (a tool of that name already exists): {', '.join(skipped)}."
        return _with_guidance(text, chosen)

    def _make_tool(self) -> Callable:
        names = tuple(self.groups)
        listing = "\n".join(group.line for group in self.groups.values())

        def load_tools(group: str) -> str:
            return self.load(group)

        load_tools.__annotations__ = {"group": Literal[names], "return": str}

        load_tools.__doc__ = (
            "Load a group of tools you do not have yet; its tools are offered to you from your "
            f"next turn on. Groups:\n{listing}\n\nArgs:\n    group: The name of the group to load."
        )
        fn = tool(name=LOAD_TOOLS)(load_tools)
        fn.__tool_read_only__ = True
        return fn


def _with_guidance(text: str, group: ToolGroup) -> str:
    return f"{text}\n\n{group.guidance}" if group.guidance else text
