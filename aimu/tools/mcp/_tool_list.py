"""A server's tool list as an agent holds it: the tools of one ``as_tools()`` call, and
whether the server said since that its list changed (``notifications/tools/list_changed``).

Each tool function carries its list as ``__tool_source__``; before each model turn the agent
loop asks every list it holds whether it ``changed`` and, if so, takes its ``reload()``ed
tools in place of the old ones, so the next turn offers what the server offers now.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable


class ToolList:
    """The tools one ``as_tools()`` call made; ``load()`` makes them again from the server."""

    def __init__(self, version: Callable[[], int], load: Callable[[], Awaitable[list[Callable]]]):
        self._version = version
        self._load = load
        self._seen = version()

    @property
    def changed(self) -> bool:
        """Whether the server announced a new tool list since these tools were made."""
        return self._version() != self._seen

    def attach(self, tools: list[Callable]) -> list[Callable]:
        for fn in tools:
            fn.__tool_source__ = self
        return tools

    async def reload(self) -> list[Callable]:
        """The server's tools as they are now (raises what listing them raises)."""
        self._seen = self._version()
        return self.attach(await self._load())
