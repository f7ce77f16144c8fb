"""A tool's identity for approval: what "Always allow" remembers, so it covers one tool.

Two tools can share a name, a spec and even their code: every MCP wrapper runs the same
function body, every notebook twin too, and a factory's tools are closures over one code
object. What tells them apart is where each comes from, so that is the identity:

- a tool that declares ``__tool_identity__`` (set where it is made): an MCP tool names its
  client's connection and the server's tool name; ``make_command_tool`` names its
  configuration; a wrapper that only changes how a tool runs passes on the identity of the
  tool it wraps;
- any other tool is the function object the user gave, held (not its ``id``), so a
  redefined function is another tool even when it lands at the same address.

The spec is part of the identity too: a server that changes a tool's description or
schema mid-session gets asked about again.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolIdentity:
    """One tool, as an approval remembers it: its ``name``, its spec, and its ``origin``."""

    name: str
    spec: str
    origin: Hashable

    def __repr__(self) -> str:
        return f"ToolIdentity({self.name!r})"


def tool_identity(tool_name: str, tool: Any) -> ToolIdentity:
    """The identity of ``tool`` as it is called by ``tool_name``."""
    spec = json.dumps(getattr(tool, "__tool_spec__", None), sort_keys=True, default=str)
    return ToolIdentity(tool_name, spec, origin_of(tool))


def origin_of(tool: Any) -> Hashable:
    """What ``tool`` is: its declared ``__tool_identity__``, else the object itself."""
    declared = getattr(tool, "__tool_identity__", None)
    if declared is not None:
        try:
            hash(declared)
        except TypeError:
            return _Unhashable(tool)
        return declared
    try:
        hash(tool)
    except TypeError:
        return _Unhashable(tool)
    return tool


class _Unhashable:
    """An origin for an object that cannot be hashed: equal only to itself, and holding the
    object so its address is not reused while remembered."""

    def __init__(self, tool: Any):
        self.tool = tool
