"""``Inbox``: messages for an agent that is already running.

``inbox.put(text)`` may be called from any thread (a widget callback, a web handler). A run
given the inbox opens its own reader when it starts and, before each model turn, delivers
every message put since as a user message, recorded in the transcript. Readers are
independent cursors over one shared log, so several agents (a parent and its sub-agents,
or concurrent spawns) reading the same inbox never take each other's messages.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Inbox:
    """A thread-safe, append-only log of messages, read through per-run readers."""

    def __init__(self) -> None:
        self._messages: list[str] = []
        self._lock = threading.Lock()

    def put(self, text: str) -> None:
        """Add a message; every open reader will deliver it at its next model turn."""
        if not isinstance(text, str):
            raise TypeError(f"an inbox message must be a str, not {type(text).__name__}")
        if not text.strip():
            raise ValueError("an inbox message must not be empty")
        with self._lock:
            self._messages.append(text)

    def reader(self, agent: str | None = None) -> Callable[[], list[str]]:
        """A drain for one run: each call returns the messages put since its last call.

        The reader starts at the end of the log: what was put before the run began is not
        delivered to it. ``agent`` names the run opening the reader (for subclasses that
        route messages); this class delivers every message to every reader.
        """
        with self._lock:
            cursor = len(self._messages)

        def drain() -> list[str]:
            nonlocal cursor
            with self._lock:
                new = self._messages[cursor:]
                cursor = len(self._messages)
            return new

        return drain

    def __len__(self) -> int:
        with self._lock:
            return len(self._messages)
