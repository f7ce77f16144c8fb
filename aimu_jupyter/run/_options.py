"""The ``%%agent`` options that shape the model's work: ``--thinking``, ``--option``,
``--compact``, ``--schema`` and ``--cache``, read into what :class:`aimu.aio.Agent` takes.

Each reader accepts the magic's text form and, from :func:`aimu_jupyter.run_agent`, the
Python value itself; a bad value is a one-line :class:`UsageError` naming the option as the
user wrote it (``label``: ``--thinking`` in a cell, ``thinking`` from Python).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from IPython.core.error import UsageError

from aimu.agents.compaction import drop_old_tool_results, keep_last
from aimu.agents.structured import OutputSchema
from aimu.models.base import ModelClient
from aimu.models.cache import CachedClient, resolve

THINKING = {"off": False, "false": False, "on": True, "true": True}
COMPACT_HELP = (
    "last:N keeps the system message and the last N turns; tokens:N empties the oldest tool "
    "results once the conversation is over about N tokens; or a notebook variable holding "
    "a messages -> messages function"
)


def said(label: str, value: Any) -> str:
    """An option as the user wrote it: ``--thinking hard`` (a flag), ``thinking='hard'``."""
    return f"{label} {value}" if label.startswith("-") else f"{label}={value!r}"


def thinking(value: str | bool | None, label: str) -> bool | str | None:
    """``--thinking``: off, on, low, medium or high (``None``: the provider's default)."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in THINKING:
        return THINKING[text]
    if text in ("low", "medium", "high"):
        return text
    raise UsageError(f"{said(label, value)}: use off, on, low, medium or high")


def generate_kwargs(items: Iterable[str] | Mapping[str, Any] | None, label: str) -> dict[str, Any]:
    """``--option name=value`` (repeatable); a value is read as JSON when it is JSON
    (``0.2``, ``["\\n"]``, ``true``), else kept as text."""
    if items is None:
        return {}
    if isinstance(items, Mapping):
        return dict(items)
    if isinstance(items, str):
        items = [items]
    options: dict[str, Any] = {}
    for item in items:
        name, equals, raw = str(item).partition("=")
        name = name.strip()
        if not equals or not name.isidentifier():
            raise UsageError(f"{said(label, item)}: write it as name=value, e.g. temperature=0.2")
        try:
            options[name] = json.loads(raw)
        except ValueError:
            options[name] = raw
    return options


def compaction(
    value: str | Callable | None, user_ns: Mapping[str, Any], label: str
) -> Callable | None:
    """``--compact``: ``last:N``, ``tokens:N`` or a notebook variable holding a policy."""
    if value is None or callable(value):
        return value
    if not isinstance(value, str):
        raise UsageError(f"{said(label, value)}: {COMPACT_HELP}")
    text = value.strip()
    kind, colon, size = text.partition(":")
    if colon:
        if not size.strip().isdigit() or int(size) < 1:
            raise UsageError(f"{said(label, value)}: N must be a whole number >= 1")
        if kind == "last":
            return keep_last(int(size))
        if kind == "tokens":
            return drop_old_tool_results(int(size))
    elif text.isidentifier() and callable(user_ns.get(text)):
        return user_ns[text]
    raise UsageError(f"{said(label, value)}: {COMPACT_HELP}")


def schema(value: str | type | None, user_ns: Mapping[str, Any], label: str) -> Any:
    """``--schema Model``: a notebook variable holding a pydantic model, dataclass or
    TypedDict; the answer comes back as a validated instance of it."""
    if value is None:
        return None
    target = value
    if isinstance(value, str):
        name = value.strip()
        if not name.isidentifier() or name not in user_ns:
            raise UsageError(f"{said(label, value)}: no notebook variable is named {name!r}")
        target = user_ns[name]
    try:
        OutputSchema.of(target)
    except TypeError as exc:
        raise UsageError(f"{said(label, value)}: {exc}") from None
    return target


def response_cache(
    client: ModelClient, chosen: bool | str | None, configured: bool | str, fresh: bool, label: str
) -> ModelClient:
    """``--cache [PATH]`` (else ``%config AimuMagics.cache``, else ``$AIMU_CACHE``): the
    client answering from the store; ``--fresh`` asks the model anyway and keeps the new
    answer in place of the stored one."""
    setting = chosen if chosen is not None else configured
    if isinstance(client, CachedClient) and setting in (False, ""):
        store = client.store
    else:
        try:
            store = resolve(setting if setting not in (False, "") else None)
        except TypeError as exc:
            raise UsageError(f"{label}: {exc}") from None
    if store is None:
        return client
    return CachedClient(client, store, refresh=fresh)


def structured_answer(text: str, target: Any) -> Any:
    """The validated ``target`` instance from a schema run's final (validated) answer."""
    checked = OutputSchema.of(target)
    value, problem = checked.parse(text)
    if problem is not None:
        raise UsageError(f"--schema: the answer does not match {checked.name}: {problem}")
    return checked.build(value)
