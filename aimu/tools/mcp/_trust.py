"""Which MCP servers the user trusts to describe their own tools.

The MCP specification has clients treat a tool's annotations (``readOnlyHint``,
``destructiveHint``) as untrusted unless they come from a trusted server: any server can
call a file-wiping tool read-only. So annotations decide only for a server the user marked
trusted, with ``MCPClient(..., trust_annotations=True)`` (every server of the client), a
``"trust_annotations": true`` key in a server's entry of an ``mcpServers`` config (that
server), or ``%%agent --trust-mcp NAME`` in a notebook (that run).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from aimu._checks import flag

TRUST_KEY = "trust_annotations"


def check_trust(value: Any, where: str) -> bool:
    """``value`` as a trust flag: ``True`` or ``False`` only."""
    return flag(value, where)


def split_config(config: Any) -> tuple[Any, frozenset[str]]:
    """``config`` without the :data:`TRUST_KEY` of its server entries (FastMCP does not
    know it), and the names of the servers that set it to true.

    Anything that is not an ``mcpServers`` config is returned unchanged, for the config
    check to refuse.
    """
    if not isinstance(config, Mapping):
        return config, frozenset()
    wrapped = "mcpServers" in config
    servers = config.get("mcpServers", config)
    if not isinstance(servers, Mapping):
        return config, frozenset()
    trusted: set[str] = set()
    entries: dict[Any, Any] = {}
    for name, entry in servers.items():
        if isinstance(entry, Mapping) and TRUST_KEY in entry:
            entry = dict(entry)
            if check_trust(entry.pop(TRUST_KEY), f"config server {name!r}: {TRUST_KEY}"):
                trusted.add(str(name))
        entries[name] = entry
    stripped = {**copy.copy(dict(config)), "mcpServers": entries} if wrapped else entries
    return stripped, frozenset(trusted)


class Trust:
    """Whether the server a tool comes from is trusted, from the tool's name on the
    connection.

    ``everything`` trusts every server. Otherwise ``trusted`` names servers of a config;
    with one server its tools keep their names, with several FastMCP names them
    ``{server}_{tool}``, and a name that several servers' prefixes fit (``a`` and ``a_b``
    both fit ``a_b_x``) is trusted only when all of them are.
    """

    def __init__(
        self,
        everything: bool = False,
        trusted: frozenset[str] = frozenset(),
        servers: tuple[str, ...] = (),
    ):
        self.everything = everything
        self.trusted = trusted
        self.servers = servers

    def __call__(self, tool_name: str) -> bool:
        if self.everything:
            return True
        if len(self.servers) == 1:
            return self.servers[0] in self.trusted
        fitting = [name for name in self.servers if tool_name.startswith(f"{name}_")]
        return bool(fitting) and all(name in self.trusted for name in fitting)

    def overridden(self, everything: bool | None) -> Trust:
        """This trust, or trust in every server (``True``) or none (``False``)."""
        if everything is None:
            return self
        return Trust(everything, self.trusted if everything else frozenset(), self.servers)
