"""Bounded capture of a tool's output: keep the head and the tail, count what is dropped.

The head shows how a run started, the tail how it ended (a test summary, a final traceback);
the middle of a flood is what a model can best do without. One cap for every tool: the
built-in ones capture their streams with it, MCP results are cut to it.
"""

from __future__ import annotations

import io
from typing import Generic, TypeVar

T = TypeVar("T", str, bytes)

HEAD = 12_000
TAIL = 4_000


class HeadTail(Generic[T]):
    """Accumulates ``str`` or ``bytes`` chunks, keeping at most ``head + tail`` of them."""

    def __init__(self, empty: T, head: int, tail: int) -> None:
        self._head = empty
        self._tail = empty
        self._head_size = head
        self._tail_size = tail
        self.dropped = 0

    def add(self, chunk: T) -> None:
        room = self._head_size - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        tail = self._tail + chunk
        excess = len(tail) - self._tail_size
        if excess > 0:
            self.dropped += excess
            tail = tail[excess:]
        self._tail = tail

    def parts(self) -> tuple[T, T]:
        """The kept head and tail; ``dropped`` units lie between them."""
        return self._head, self._tail


def join(head: str, tail: str, dropped: int, unit: str = "characters") -> str:
    """Head and tail as one text, the gap between them marked."""
    if not dropped:
        return head + tail
    return f"{head}\n[... {dropped} {unit} omitted ...]\n{tail}"


def cut(text: str) -> str:
    """``text``, or its head and tail with the gap marked when it is longer than the cap."""
    if len(text) <= HEAD + TAIL:
        return text
    return join(text[:HEAD], text[-TAIL:], len(text) - HEAD - TAIL)


class CappedText(io.TextIOBase):
    """A text stream (for ``redirect_stdout``) that keeps a bounded head and tail."""

    def __init__(self, head: int = HEAD, tail: int = TAIL) -> None:
        super().__init__()
        self._buffer: HeadTail[str] = HeadTail("", head, tail)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._buffer.add(text)
        return len(text)

    def getvalue(self) -> str:
        return join(*self._buffer.parts(), self._buffer.dropped)
