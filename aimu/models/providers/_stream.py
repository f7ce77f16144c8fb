"""Reading a provider's stream: the stall deadline, and data of the wrong shape.

A stream that produces no output — no text, thinking or tool-call delta — for ``timeout``
seconds is ended with a :class:`ModelConnectionError`; keep-alive comments, pings and empty
chunks reach the reader but are not output, so they do not hold a run. What a server sends is
checked where it is used, and anything of the wrong shape becomes a :class:`ModelError` naming
the field, never a raw ``TypeError`` or ``KeyError``.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from aimu._checks import positive_number
from aimu.models.base import ModelEvent, ThinkingDelta
from aimu.models.errors import ModelConnectionError, ModelError
from aimu.models.providers._think import ThinkSplitter

T = TypeVar("T")

DEFAULT_TIMEOUT = 120.0


class MalformedStreamError(ModelError):
    """The server sent a stream event of a shape the provider's protocol does not allow."""


def stall_timeout(timeout: float | None) -> float:
    """The stall timeout a client was given, checked (``None``: the default, 120 s)."""
    if timeout is None:
        return DEFAULT_TIMEOUT
    return positive_number(timeout, "timeout", unit="seconds", finite=False)


class Stall:
    """The stall clock of one stream: time spent waiting on the server since the last output.

    Only waiting counts — the request, each read — not the time the consumer holds the
    stream between events (a slow display, a breakpoint), so a stall is always the server's.
    """

    def __init__(self, timeout: float, label: str):
        self.timeout = timeout
        self.label = label
        self._loop = asyncio.get_running_loop()
        self._waited = 0.0

    def output(self) -> None:
        """The stream produced output: the clock starts again."""
        self._waited = 0.0

    def events(
        self, splitter: ThinkSplitter, thinking: str | None, text: str | None
    ) -> list[ModelEvent]:
        """The events for one chunk's reasoning and text (through ``splitter``): output."""
        events: list[ModelEvent] = []
        if thinking:
            events.append(ThinkingDelta(thinking))
        if text:
            events += splitter.feed(text)
        if thinking or text:
            self.output()
        return events

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` (the request, one read) unless the stall timeout runs out."""
        if self.timeout == math.inf:
            return await awaitable
        start = self._loop.time()
        try:
            async with asyncio.timeout_at(start + self.timeout - self._waited) as scope:
                return await awaitable
        except TimeoutError:
            if scope.expired():
                raise self.error() from None
            raise
        finally:
            self._waited += self._loop.time() - start

    async def each(self, source: AsyncIterator[T]) -> AsyncIterator[T]:
        """The items of ``source``, each read under the deadline."""
        iterator = aiter(source)
        while True:
            try:
                item = await self.wait(anext(iterator))
            except StopAsyncIteration:
                return
            yield item

    def error(self) -> ModelConnectionError:
        return ModelConnectionError(
            f"{self.label} sent no output for {self.timeout:g} s, so the answer was abandoned; "
            "try again, or pass a longer timeout= when building the client"
        )


def json_object(data: str, label: str) -> dict[str, Any]:
    """One stream event's data decoded as a JSON object."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise MalformedStreamError(
            f"{label} sent a stream event that is not JSON ({exc}): {_excerpt(data)}"
        ) from None
    if not isinstance(value, dict):
        raise MalformedStreamError(
            f"{label} sent a stream event that is not a JSON object: {_excerpt(data)}"
        )
    return value


def field(container: Any, name: str, kind: type | tuple[type, ...], label: str) -> Any:
    """``container[name]`` when it is of ``kind``; ``None`` when missing or null.

    ``container`` must be a JSON object (or ``None``, read as empty).
    """
    if container is None:
        return None
    if not isinstance(container, dict):
        raise MalformedStreamError(
            f"{label} sent a stream event with a {type(container).__name__} where an object "
            f"with {name!r} belongs: {_shown(container)}"
        )
    value = container.get(name)
    if value is None or isinstance(value, kind):
        return value
    names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
    raise MalformedStreamError(
        f"{label} sent a stream event whose {name!r} is {type(value).__name__}, not {names}: "
        f"{_shown(container)}"
    )


def objects(container: Any, name: str, label: str) -> list[dict[str, Any]]:
    """``container[name]`` as a list of JSON objects (empty when missing or null); a list
    holding anything else (``{"choices": [null]}``) is a malformed event."""
    items = field(container, name, list, label) or []
    for item in items:
        if not isinstance(item, dict):
            raise MalformedStreamError(
                f"{label} sent a stream event whose {name!r} holds a {type(item).__name__} "
                f"where an object belongs: {_shown(container)}"
            )
    return items


async def translated(
    events: AsyncIterator[T], label: str, error: Callable[[Exception], BaseException]
) -> AsyncIterator[T]:
    """``events``, with whatever breaks them turned into a :class:`ModelError`: a shape the
    reader did not expect is :func:`malformed`, anything else goes through ``error`` (the
    provider's translation of its SDK's exceptions)."""
    iterator = aiter(events)
    try:
        while True:
            try:
                event = await anext(iterator)
            except StopAsyncIteration:
                return
            except ModelError:
                raise
            except (TypeError, AttributeError, KeyError, IndexError) as exc:
                failure = malformed(label, exc)
            except Exception as exc:
                failure = error(exc)
            else:
                yield event
                continue
            raise failure  # outside the handler: the SDK error (it may hold a key) is not chained
    finally:
        await iterator.aclose()  # type: ignore[attr-defined]


def malformed(label: str, exc: Exception) -> MalformedStreamError:
    """What a shape the reader did not expect (a missing key, a wrong type) becomes."""
    return MalformedStreamError(
        f"{label} sent a stream event of an unexpected shape ({type(exc).__name__}: {exc})"
    )


def _shown(value: Any) -> str:
    """An excerpt of ``value`` as JSON for an error message (a too-deep value is named)."""
    try:
        return _excerpt(json.dumps(value, default=str))
    except (ValueError, RecursionError):
        return f"(a {type(value).__name__} nested too deeply to show)"


def _excerpt(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
