"""The events an agent run speaks in: :class:`StreamChunk` and its :class:`Phase`.

Renderers, tests and the notebook layer consume nothing but these chunks, so every
``content`` is plain JSON-compatible data (strings, numbers, lists, dicts).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Phase(StrEnum):
    """What a :class:`StreamChunk` reports. The value is the wire name.

    ============================  ==========================================================
    phase                         ``content``
    ============================  ==========================================================
    ``TEXT``                      a piece of the model's answer (``str``)
    ``THINKING``                  a piece of the model's reasoning (``str``)
    ``TOOL_CALL``                 a call about to run: ``{"id", "name", "arguments",
                                  "code"}`` (``code``: the tool's ``__tool_code__``)
    ``TOOL_PROGRESS``             what a streaming tool yielded: ``{"id", "name", "progress"}``
    ``TOOL_RESULT``               ``{"id", "name", "result", "is_error", "images"}``
    ``APPROVAL_REQUESTED``        ``{"id", "name", "arguments"}``
    ``APPROVAL_DECIDED``          ``{"id", "name", "approved", "reason"}``
    ``USER_MESSAGE``              an inbox message delivered before a model turn: ``{"text"}``
    ``DONE``                      ``{"text", "usage", "stop_reason"}``
    ============================  ==========================================================

    ``stop_reason`` is ``"complete"``, ``"max_iterations"`` or ``"interrupted"``; ``usage``
    is ``{"input_tokens", "output_tokens"}`` summed over the run's model calls.
    """

    TEXT = "text"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_PROGRESS = "tool_progress"
    TOOL_RESULT = "tool_result"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_DECIDED = "approval_decided"
    USER_MESSAGE = "user_message"
    DONE = "done"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """One event of an agent run.

    ``agent`` names the agent that produced it (sub-agents' chunks are forwarded into their
    parent's stream with their own name); ``iteration`` counts model calls from 1.
    """

    phase: Phase
    content: Any
    agent: str = "agent"
    iteration: int = 0

    def to_json(self) -> dict[str, Any]:
        """The chunk as a JSON-ready dict (``phase`` as its wire name)."""
        return {
            "phase": self.phase.value,
            "content": self.content,
            "agent": self.agent,
            "iteration": self.iteration,
        }
