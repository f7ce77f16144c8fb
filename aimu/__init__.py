"""aimu: LLM agents with tools, as a plain Python library.

    import aimu

    @aimu.tool
    def letter_counter(word: str, letter: str) -> int:
        \"\"\"Count how often a letter occurs in a word.\"\"\"
        return word.lower().count(letter.lower())

    agent = aimu.Agent(aimu.client("openai:gpt-4o-mini"), tools=[letter_counter])
    print(agent.run("How many r's are in strawberry?"))

The notebook layer lives in :mod:`aimu_jupyter`; ``%load_ext aimu`` loads it.
"""

from typing import Any

from aimu import aio, batch
from aimu.agents import Agent
from aimu.models import ModelClient, Phase, StreamChunk, client
from aimu.models.prices import prices
from aimu.tools import (
    Denied,
    ToolArgumentError,
    ToolContext,
    ToolResult,
    ToolSignatureError,
    approve_all,
    coerce_tool_arguments,
    tool,
)

__version__ = "0.1.0"


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext aimu``: load the notebook layer."""
    import aimu_jupyter

    aimu_jupyter.load_ipython_extension(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext aimu``."""
    import aimu_jupyter

    aimu_jupyter.unload_ipython_extension(ipython)


__all__ = [
    "Agent",
    "Denied",
    "ModelClient",
    "Phase",
    "StreamChunk",
    "ToolArgumentError",
    "ToolContext",
    "ToolResult",
    "ToolSignatureError",
    "aio",
    "approve_all",
    "batch",
    "client",
    "coerce_tool_arguments",
    "load_ipython_extension",
    "prices",
    "tool",
    "unload_ipython_extension",
]
