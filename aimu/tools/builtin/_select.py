"""``select``: narrow a tool list by name, tool or group, refusing selectors that match nothing."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any


def tool_name(fn: Callable) -> str:
    """The name a model calls ``fn`` by (from its ``__tool_spec__``)."""
    try:
        return fn.__tool_spec__["function"]["name"]
    except (AttributeError, KeyError, TypeError):
        raise TypeError(f"{fn!r} is not a tool (it has no __tool_spec__)") from None


def select(
    tools: Iterable[Callable], *, include: Any = None, exclude: Any = None
) -> list[Callable]:
    """Narrow a tool list, by name or by tool, refusing a selector that matches nothing.

    ``include`` keeps only the named tools; ``exclude`` drops them; passing both applies
    include first. Each may be a tool name (``"read_file"``), a tool, or a list mixing names,
    tools and whole groups (``exclude=builtin.fs``). The result is deduplicated by name,
    first occurrence kept, so concatenated groups that overlap are safe::

        tools = builtin.select(builtin.ALL_TOOLS, exclude=builtin.fs) + [builtin.read_file]
        tools = builtin.select(builtin.fs, exclude=["write_file", "edit_file"])

    A string selector naming no tool in ``tools`` raises ``ValueError``: a misspelled
    exclusion must not silently keep the tool it meant to remove. Tools passed by reference
    are not checked, since a group may name tools the list does not hold.
    """
    pool: dict[str, Callable] = {}
    for fn in tools:
        pool.setdefault(tool_name(fn), fn)
    keep = _names(include, pool, "include") if include is not None else set(pool)
    drop = _names(exclude, pool, "exclude") if exclude is not None else set()
    return [fn for name, fn in pool.items() if name in keep and name not in drop]


def _names(selector: Any, pool: dict[str, Callable], label: str) -> set[str]:
    names: set[str] = set()
    unknown: list[str] = []
    for item in _flatten(selector):
        if isinstance(item, str):
            if item not in pool:
                unknown.append(item)
            names.add(item)
        else:
            names.add(tool_name(item))
    if unknown:
        problems = "; ".join(_explain(n, pool) for n in unknown)
        held = ", ".join(pool) or "no tools"
        raise ValueError(f"select({label}=...): {problems}. The list holds: {held}")
    return names


def _flatten(selector: Any) -> list[Any]:
    if isinstance(selector, str) or callable(selector):
        return [selector]
    if isinstance(selector, bytes | dict) or not isinstance(selector, Iterable):
        raise TypeError(
            "select: a selector is a tool name, a tool, or a list of names, tools and groups; "
            f"got {type(selector).__name__}"
        )
    items: list[Any] = []
    for item in selector:
        items.extend(_flatten(item))
    return items


def _explain(name: str, pool: dict[str, Callable]) -> str:
    close = difflib.get_close_matches(name, pool, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"no tool named '{name}' in the list{hint}"
