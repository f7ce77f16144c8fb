"""Server-sent events from the text lines of a streamed HTTP body (WHATWG event-stream).

The SDKs parse each event into typed models, which costs more than the rest of a turn; the
providers that read the raw stream use this instead and decode the JSON themselves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """Yield ``(event, data)`` per event; ``event`` is ``"message"`` when none was named."""
    event = ""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
    if data:
        yield event or "message", "\n".join(data)
