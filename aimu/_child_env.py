"""The environment a child process of ours sees: an allowlist, so secrets stay here.

API keys and tokens in this process's environment never reach a tool's program, an MCP
server's or the embedded model's process unless they are named one by one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

ENV_ALLOWLIST = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
)


def child_env(passthrough: Iterable[str] = (), extra: Mapping[str, str] | None = None) -> dict:
    """The environment a child sees: the allowlist, ``LC_*``, the named passthrough
    variables that are set here, then ``extra``."""
    names = set(ENV_ALLOWLIST).union(passthrough)
    env = {k: v for k, v in os.environ.items() if k in names or k.startswith("LC_")}
    env.update(extra or {})
    return env


__all__ = ["ENV_ALLOWLIST", "child_env"]
