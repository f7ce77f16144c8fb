"""Errors of the tools layer."""

from __future__ import annotations


class ToolSignatureError(TypeError):
    """``@tool`` cannot turn a function's signature into a spec; the message names the
    function and the parameter, and says how to fix it."""


class ToolArgumentError(ValueError):
    """Arguments a model supplied fail validation. Raised by
    :func:`~aimu.tools.coerce_tool_arguments`; at dispatch it becomes a tool message the
    model reads and corrects from, listing every problem at once."""
