"""The misc group: ``echo``, a tool that does nothing but answer, for wiring checks."""

from __future__ import annotations

from aimu.tools.decorator import tool


@tool(read_only=True)
def echo(echo_string: str) -> str:
    """Returns echo_string unchanged.

    Args:
        echo_string: The text to send back.
    """
    return echo_string
