"""``scripted``: a deterministic model that replays given turns.

Tests and offline teaching notebooks use it to drive the real agent loop. Each turn is one of

- a string: the answer text;
- :func:`reply` / :func:`call` values, or a dict ``{"text", "thinking", "tool_calls"}``
  where each tool call is ``{"name", "arguments"}`` (``arguments`` a dict, or a string sent
  as-is, which lets a test send malformed JSON);
- an exception instance, raised when the turn is reached;
- a callable ``(messages, tools) -> turn`` for turns that react to what came before.

Every request is recorded in :attr:`ScriptedClient.requests` (``messages``, ``tools`` and the
:class:`~aimu.models.base.GenerationOptions` received as ``options``), so a test can assert
what the loop sent.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from aimu.models.base import (
    GenerationOptions,
    ModelClient,
    ModelEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    TurnEnd,
    Usage,
)
from aimu.models.errors import ModelError

Turn = str | dict[str, Any] | BaseException | Callable[[list[dict], list[dict] | None], Any]

_ids = itertools.count(1)


def reply(text: str = "", *, thinking: str = "", tool_calls: Iterable[dict] = ()) -> dict:
    """A turn that says ``text`` and optionally calls tools."""
    return {"text": text, "thinking": thinking, "tool_calls": list(tool_calls)}


def call(name: str, arguments: dict[str, Any] | str | None = None, **kwargs: Any) -> dict:
    """A single tool call, for use in :func:`reply` or as a whole turn on its own."""
    if arguments is not None and kwargs:
        raise TypeError("pass arguments either as a dict or as keywords, not both")
    return {"name": name, "arguments": kwargs if arguments is None else arguments}


class ScriptedClient(ModelClient):
    """Replays ``turns`` in order, streaming each answer word by word.

    ``delay`` (seconds) pauses between streamed pieces, to make timing visible in demos and
    to give interrupts something to interrupt. ``default_generate_kwargs`` is kept as given
    (nothing is generated), so a test can check what a factory passed.
    """

    provider = "scripted"

    def __init__(
        self,
        turns: Iterable[Turn] = (),
        *,
        model: str = "",
        delay: float = 0.0,
        default_generate_kwargs: Mapping[str, Any] | None = None,
    ):
        self.model = model
        self.turns: list[Turn] = list(turns)
        self.delay = delay
        self.default_generate_kwargs = dict(default_generate_kwargs or {})
        self.requests: list[dict[str, Any]] = []
        self._next = 0

    def _take_defaults(self, kwargs: dict[str, Any]) -> None:
        """Any options are kept as given: nothing is generated."""

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been played yet."""
        return len(self.turns) - self._next

    def clone(self) -> ScriptedClient:
        return ScriptedClient(
            self.turns,
            model=self.model,
            delay=self.delay,
            default_generate_kwargs=self.default_generate_kwargs,
        )

    def identity(self) -> dict[str, Any]:
        """The script itself: another script is another model (callables by name)."""
        return {
            **super().identity(),
            "turns": [_describe_turn(turn) for turn in self.turns],
            "defaults": self.default_generate_kwargs,
        }

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> AsyncIterator[ModelEvent]:
        self.requests.append(
            {"messages": copy.deepcopy(messages), "tools": tools, "options": options}
        )
        if self._next >= len(self.turns):
            raise ModelError(
                f"the scripted model has no turn left (it was given {len(self.turns)}); "
                "add more turns to its script"
            )
        turn = self.turns[self._next]
        self._next += 1
        if callable(turn) and not isinstance(turn, BaseException):
            turn = turn(messages, tools)
        if isinstance(turn, BaseException):
            raise turn
        turn = _normalise(turn)
        if turn.get("call"):  # a bare call(...) used as a whole turn
            turn = reply(tool_calls=[turn["call"]])
        output = 0
        for piece in _pieces(turn.get("thinking", "")):
            output += 1
            await self._pause()
            yield ThinkingDelta(piece)
        for piece in _pieces(turn.get("text", "")):
            output += 1
            await self._pause()
            yield TextDelta(piece)
        for spec in turn.get("tool_calls", []):
            await self._pause()
            arguments = spec.get("arguments", {})
            raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
            output += len(raw.split())
            yield ToolCallRequest.from_json(
                spec.get("id") or f"call_{next(_ids)}", spec["name"], raw
            )
        prompt_words = sum(len(str(m.get("content") or "").split()) for m in messages)
        yield TurnEnd(
            Usage(prompt_words, output), "tool_calls" if turn.get("tool_calls") else "stop"
        )

    async def _pause(self) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)


def _describe_turn(turn: Turn) -> Any:
    """A turn as data that stays the same from one Python process to the next."""
    if isinstance(turn, BaseException):
        return f"raise {type(turn).__qualname__}: {turn}"
    if callable(turn):
        return f"call {getattr(turn, '__module__', '')}.{getattr(turn, '__qualname__', '')}"
    return turn


def _normalise(turn: Any) -> dict[str, Any]:
    if isinstance(turn, str):
        return {"text": turn}
    if isinstance(turn, dict):
        if "name" in turn and "arguments" in turn and "tool_calls" not in turn:
            return {"call": turn}
        unknown = set(turn) - {"text", "thinking", "tool_calls"}
        if unknown:
            raise ModelError(f"scripted turn has unknown keys: {', '.join(sorted(unknown))}")
        return turn
    raise ModelError(f"a scripted turn must be a str, dict, exception or callable, not {turn!r}")


def _pieces(text: str) -> list[str]:
    """Split text into word-sized deltas that join back to exactly ``text``."""
    return re.findall(r"\s*\S+\s*|\s+", text) if text else []


def from_spec(model: str = "", **options: Any) -> ScriptedClient:
    """Factory used by ``aimu.client("scripted", turns=[...])``."""
    return ScriptedClient(options.pop("turns", ()), model=model, **options)
