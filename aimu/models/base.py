"""The :class:`ModelClient` interface every provider implements.

A client is stateless with respect to the conversation: the agent owns the message list and
hands it over on every turn. Messages use the OpenAI Chat Completions shape, which every
provider translates at its own edge::

    {"role": "system" | "user", "content": str}
    {"role": "assistant", "content": str, "tool_calls": [
        {"id": str, "type": "function", "function": {"name": str, "arguments": str}}]}
    {"role": "tool", "tool_call_id": str, "name": str, "content": str}

A turn streams :data:`ModelEvent` values: text and thinking deltas as they arrive, each tool
call once it is complete, and a final :class:`TurnEnd` with the token usage.

An outside agent (one that runs its own tools, reached over ACP) also streams what only it
can say: :class:`OutsideToolCall` (a call it runs itself, as it progresses),
:class:`PlanUpdate`, :class:`PermissionRequest` (it asks before one of its calls: the loop puts
the question to the run's policy) and :class:`HostedToolCall` (it calls one of the run's own
tools, which the loop dispatches at once, through the same gate).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aimu.models.errors import UnsupportedOptionError


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of the model's reasoning, where the provider exposes it."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A complete tool call the model asked for.

    ``arguments`` is the decoded JSON object. When the model produced text that is not a
    JSON object, ``arguments`` is empty and ``error`` says what was wrong; the agent answers
    such a call with that error instead of running the tool.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str = ""
    error: str | None = None

    @classmethod
    def from_json(cls, id: str, name: str, raw: Any) -> ToolCallRequest:
        """Decode a provider's argument text (or already-decoded dict) into a request.

        Whatever the model sent, this returns a request: text that is not a JSON object, or
        an object nested deeper than :data:`MAX_ARGUMENT_DEPTH`, gives one with ``error``.
        """
        text = raw.strip() if isinstance(raw, str) else ""
        if raw is None or (isinstance(raw, str) and not text):
            return cls(id=id, name=name, arguments={}, raw_arguments="{}")
        value = raw
        if isinstance(raw, str):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                problem = f"the arguments were not valid JSON ({exc.msg} at position {exc.pos})"
                return cls.invalid(id, name, text, f"{problem}; send a single JSON object")
            except RecursionError:
                return cls.invalid(id, name, "", _TOO_DEEP)
        if not isinstance(value, dict):
            return cls.invalid(
                id, name, text, f"the arguments must be a JSON object, not {type(value).__name__}"
            )
        if _depth(value) > MAX_ARGUMENT_DEPTH:  # kept out of the transcript: "{}" instead
            return cls.invalid(id, name, "", _TOO_DEEP)
        return cls(id, name, value, text or json.dumps(value, default=str))

    @classmethod
    def invalid(cls, id: str, name: str, raw_arguments: str, error: str) -> ToolCallRequest:
        """A call whose arguments could not be used; the agent answers it with ``error``."""
        return cls(id=id, name=name, raw_arguments=raw_arguments or "{}", error=error)


#: How deeply tool-call arguments may nest; deeper ones are answered with an error.
MAX_ARGUMENT_DEPTH = 64
_TOO_DEEP = (
    f"the arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep; send a flatter "
    "JSON object"
)


def _depth(value: Any) -> int:
    """How deeply ``value``'s lists and dicts nest, counted without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        elif not isinstance(node, list):
            continue
        deepest = max(deepest, level)
        if level > MAX_ARGUMENT_DEPTH:
            break
        stack.extend((child, level + 1) for child in node)
    return deepest


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts for one model call (zeros where the provider does not report them)."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )

    def to_json(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """The last event of a turn: usage and the provider's stop reason.

    ``replayed`` is set when the turn came from a response cache instead of the model: the
    date (ISO 8601, UTC) the stored answer was first given; ``usage`` is what it cost then.
    """

    usage: Usage = Usage()
    stop_reason: str = "stop"
    replayed: str | None = None


#: The states an outside agent's tool call goes through (ACP's ``ToolCallStatus``).
OUTSIDE_STATUSES = ("pending", "in_progress", "completed", "failed")


@dataclass(frozen=True, slots=True)
class OutsideToolCall:
    """The latest state of a tool call an outside agent runs itself.

    Sent each time the call changes; ``output`` is its text so far and ``diffs`` the file
    edits it reports (``{"path", "old", "new"}``, ``old`` ``None`` for a new file).
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    status: str = "pending"
    output: str = ""
    diffs: tuple[dict[str, Any], ...] = ()

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed")


@dataclass(frozen=True, slots=True)
class PlanUpdate:
    """An outside agent's plan, whole: entries ``{"content", "status", "priority"}``."""

    entries: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, eq=False)
class PermissionRequest:
    """An outside agent asks before running one of its calls.

    ``tool`` is what the run's policy is shown as the tool (its ``__tool_spec__`` names the
    agent and the call, so "Always allow" covers this kind of call of this agent only);
    ``answer(approved, always, reason)`` sends the decision back to the agent.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    tool: Any
    answer: Callable[[bool, bool, str], None]


@dataclass(frozen=True, eq=False)
class HostedToolCall:
    """An outside agent calls one of the run's own tools (offered to it over MCP) and waits.

    The loop dispatches ``call`` at once (approval, card, result) and hands the result text
    and whether it failed to ``answer``.
    """

    call: ToolCallRequest
    answer: Callable[[str, bool], None]


ModelEvent = (
    TextDelta
    | ThinkingDelta
    | ToolCallRequest
    | TurnEnd
    | OutsideToolCall
    | PlanUpdate
    | PermissionRequest
    | HostedToolCall
)

THINKING_LEVELS = ("low", "medium", "high")


@dataclass(frozen=True, slots=True)
class GenerationOptions:
    """What one turn asks of the model beyond the messages and tools.

    ``thinking``: ``None`` leaves the provider's default; ``False`` turns reasoning off where
    the API allows it; ``True`` is ``"medium"``; ``"low" | "medium" | "high"`` map to each
    provider's native control. ``generate_kwargs`` are sampling options (``temperature``,
    ``max_tokens``, ``top_p``, ``seed``, ``stop``...) laid over the client's
    ``default_generate_kwargs``. ``response_format`` is ``{"name": str, "schema": <JSON
    Schema>}``: the answer must be JSON following the schema. A provider that cannot honour an
    option raises :class:`~aimu.models.errors.UnsupportedOptionError`.
    """

    thinking: bool | str | None = None
    generate_kwargs: Mapping[str, Any] = field(default_factory=dict)
    response_format: dict | None = None

    def __post_init__(self) -> None:
        thinking = self.thinking
        if (
            thinking is not None
            and not isinstance(thinking, bool)
            and thinking not in THINKING_LEVELS
        ):
            raise ValueError(
                f"thinking must be None, True, False or one of {', '.join(THINKING_LEVELS)}, "
                f"not {thinking!r}"
            )
        if not isinstance(self.generate_kwargs, Mapping):
            raise TypeError(
                f"generate_kwargs must be a mapping, not {type(self.generate_kwargs).__name__}"
            )
        form = self.response_format
        if form is not None and not (
            isinstance(form, dict)
            and isinstance(form.get("name"), str)
            and form["name"]
            and isinstance(form.get("schema"), dict)
        ):
            raise ValueError(
                'response_format must be {"name": str, "schema": <JSON Schema dict>}, '
                f"not {form!r}"
            )

    @property
    def thinking_level(self) -> str | None:
        """``"low" | "medium" | "high"`` when thinking is asked for, else ``None``."""
        if self.thinking is True:
            return "medium"
        return self.thinking if isinstance(self.thinking, str) else None


NO_OPTIONS = GenerationOptions()


class ModelClient(ABC):
    """Turns a message list plus tool specs into a stream of :data:`ModelEvent`.

    Subclasses set ``provider`` and ``model`` and implement :meth:`stream`. ``tools`` is a
    list of OpenAI-format specs (``{"type": "function", "function": {...}}``) or ``None``
    for a turn without tools; ``options`` (:class:`GenerationOptions`, ``None`` for none)
    carries thinking, sampling options and a response format. :meth:`clone` returns an
    independent client for the same model (sub-agents use it so concurrent runs share no state).
    """

    provider: str = ""
    model: str = ""
    #: The client holds a conversation of its own (an outside agent's session): a notebook
    #: conversation keeps one such client across its cells, and ``close()`` ends it.
    holds_session: bool = False

    @abstractmethod
    def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> AsyncIterator[ModelEvent]:
        """Stream one turn."""

    def clone(self) -> ModelClient:
        """A fresh client for the same model and options."""
        raise NotImplementedError(f"{type(self).__name__} cannot be cloned")

    def identity(self) -> dict[str, Any]:
        """What decides this client's answers besides the request: the provider, the model
        and, in subclasses, the server and standing options. The response cache keys on it
        (:mod:`aimu.models.cache`), so it must never hold a credential."""
        return {"provider": self.provider, "model": self.model, "client": type(self).__qualname__}

    @property
    def default_generate_kwargs(self) -> dict[str, Any]:
        """Sampling options sent with every turn, under the turn's own ``generate_kwargs``.

        Settable: the new options are checked against the provider's names when set (an
        :class:`~aimu.models.errors.UnsupportedOptionError` names the accepted ones), apply
        from the next turn on, and are kept by :meth:`clone`.
        """
        return dict(getattr(self, "_generate_defaults", {}))

    @default_generate_kwargs.setter
    def default_generate_kwargs(self, value: Mapping[str, Any] | None) -> None:
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise TypeError(
                f"default_generate_kwargs must be a mapping, not {type(value).__name__}"
            )
        self._take_defaults(dict(value))
        self._generate_defaults = dict(value)

    def _take_defaults(self, kwargs: dict[str, Any]) -> None:
        """Check new ``default_generate_kwargs`` and take them in; a client that sends no
        generation options refuses any."""
        if kwargs:
            raise UnsupportedOptionError(
                f"{self.provider}: this client takes no generation options, not "
                f"{', '.join(sorted(kwargs))}"
            )

    @property
    def sees_images(self) -> bool:
        """Whether the model takes images: what the client was told (``sees_images=``), else
        a guess from the model's name (models known to read text only do not)."""
        chosen = getattr(self, "_sees_images", None)
        if chosen is not None:
            return chosen
        from aimu.models.providers._images import sees_images

        return sees_images(self.provider, self.model)

    def unsent_images(self, images: list[dict[str, Any]], sent_before: int = 0) -> list[str]:
        """For each image (``{"mime_type", "data", ...}``) of a tool result: ``""`` when the
        model will get it, else why not; ``sent_before`` images of the same batch of tool
        results go first. This is the rule the provider applies when it sends them."""
        from aimu.models.providers._images import unsent_reason

        reasons = []
        sees = self.sees_images
        for image in images:
            reason = unsent_reason(image, sees, sent_before)
            sent_before += not reason
            reasons.append(reason)
        return reasons

    @property
    def name(self) -> str:
        """``provider:model``, as accepted by :func:`aimu.client`."""
        return f"{self.provider}:{self.model}" if self.model else self.provider

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
