"""Split a leading ``<think>…</think>`` block out of streamed answer text.

Reasoning models served without a reasoning parser (Qwen3, DeepSeek-R1 distills behind
llama.cpp or LM Studio) put their reasoning inline at the start of the content. Only a block
that opens the answer counts; a ``<think>`` later in the text is ordinary text.
"""

from __future__ import annotations

from aimu.models.base import TextDelta, ThinkingDelta

_OPEN = "<think>"
_CLOSE = "</think>"


class ThinkSplitter:
    """Feed content pieces in order; get text and thinking deltas back."""

    def __init__(self) -> None:
        self._state = "start"
        self._buffer = ""

    def feed(self, text: str) -> list[TextDelta | ThinkingDelta]:
        if self._state == "text":
            return [TextDelta(text)] if text else []
        if self._state == "after":
            text = text.lstrip()
            if not text:
                return []
            self._state = "text"
            return [TextDelta(text)]
        self._buffer += text
        out: list[TextDelta | ThinkingDelta] = []
        if self._state == "start":
            head = self._buffer.lstrip()
            if len(head) < len(_OPEN) and _OPEN.startswith(head):
                return out
            if head.startswith(_OPEN):
                self._state, self._buffer = "thinking", head[len(_OPEN) :]
            else:
                self._state = "text"
        if self._state == "thinking":
            end = self._buffer.find(_CLOSE)
            if end < 0:
                keep = len(_CLOSE) - 1
                if len(self._buffer) > keep:
                    out.append(ThinkingDelta(self._buffer[:-keep]))
                    self._buffer = self._buffer[-keep:]
                return out
            if end:
                out.append(ThinkingDelta(self._buffer[:end]))
            self._state, self._buffer = "after", self._buffer[end + len(_CLOSE) :].lstrip()
            if not self._buffer:
                return out
            self._state = "text"
        if self._buffer:
            out.append(TextDelta(self._buffer))
            self._buffer = ""
        return out

    def flush(self) -> list[TextDelta | ThinkingDelta]:
        """Whatever is still held back, at the end of the stream."""
        rest, self._buffer = self._buffer, ""
        if not rest:
            return []
        return [ThinkingDelta(rest) if self._state == "thinking" else TextDelta(rest)]
