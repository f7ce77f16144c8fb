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
    ``TOOL_RESULT``               ``{"id", "name", "result", "is_error", "images",
                                  "images_unsent"}``
    ``APPROVAL_REQUESTED``        ``{"id", "name", "arguments", "why"}``
    ``APPROVAL_DECIDED``          ``{"id", "name", "approved", "reason", "why", "by"}``
                                  and, when the policy gave one, ``"chosen_at"``
    ``USER_MESSAGE``              an inbox message delivered before a model turn: ``{"text"}``
    ``PLAN``                      an outside agent's whole plan: ``{"entries"}``, each
                                  ``{"content", "status", "priority"}``
    ``DONE``                      ``{"text", "usage", "stop_reason"}``
    ============================  ==========================================================

    ``why`` is the tool's own account of why it asks (``""`` when it gives none; an
    untrusted MCP server's tool says its server is not trusted). ``stop_reason`` is
    ``"complete"``, ``"max_iterations"`` or ``"interrupted"``; ``usage`` is
    ``{"input_tokens", "output_tokens"}`` summed over the run's model calls. When a
    response cache answered some turns, ``"replayed"`` lists them:
    ``[{"iteration", "answered"}]`` (the original answer's ISO date).
    ``images_unsent`` has one entry per image: ``""`` when the model will get it, else why
    not (the client's rule, :meth:`~aimu.models.base.ModelClient.unsent_images`: a model
    that reads text only, a format it does not take, too many in one turn...). ``by`` says
    who decided a call: ``"policy"``, or what the policy's
    :class:`~aimu.tools.approval.Decision` named (``"always"`` for a standing "Always
    allow"); ``chosen_at`` is where that choice was made.
    The ``TOOL_RESULT`` of a call an outside agent ran itself also has ``"diffs"``: the
    file edits it reported, ``{"path", "old", "new"}``.
    """

    TEXT = "text"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_PROGRESS = "tool_progress"
    TOOL_RESULT = "tool_result"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_DECIDED = "approval_decided"
    USER_MESSAGE = "user_message"
    PLAN = "plan"
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
