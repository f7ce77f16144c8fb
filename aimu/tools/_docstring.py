"""Google-style docstring parsing: the description and the per-parameter texts."""

from __future__ import annotations

import inspect
import re

_ARG_SECTIONS = {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"}
_SECTIONS = _ARG_SECTIONS | {
    "returns", "return", "yields", "yield", "raises", "except", "exceptions", "examples",
    "example", "note", "notes", "warning", "warnings", "see also", "todo", "attributes",
    "references", "methods", "other parameters", "usage",
}  # fmt: skip
_HEADER = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*$")
_ENTRY = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into ``(description, {parameter: text})``.

    The description is every paragraph before the first section header; the ``Args:``
    section's entries (``name: text`` or ``name (type): text``, continuation lines indented
    further) give the parameter texts. Other sections are dropped.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    entry_indent: int | None = None
    current: str | None = None

    for line in lines:
        header = _HEADER.match(line)
        if header and header.group(1).lower() in _SECTIONS and not line[:1].isspace():
            section = header.group(1).lower()
            entry_indent = current = None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in _ARG_SECTIONS or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        entry = _ENTRY.match(line)
        if entry and (entry_indent is None or indent <= entry_indent):
            entry_indent = indent
            current = entry.group(1)
            params[current] = entry.group(3).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()

    return _join_paragraphs(description), params


def _join_paragraphs(lines: list[str]) -> str:
    text = "\n".join(lines).strip()
    return re.sub(r"\n{3,}", "\n\n", text)
