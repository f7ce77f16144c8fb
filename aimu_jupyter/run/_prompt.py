"""``{name}`` in a prompt: filled from the notebook's variables (and, with ``--each``, from
each row's fields first)."""

from __future__ import annotations

import string
from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import Any

from IPython.core.error import UsageError

_HINT = (
    "Double the braces ({{ }}) for literal ones, or use --no-interpolate for prompts "
    "with code or JSON."
)


def interpolate(prompt: str, user_ns: Mapping[str, Any]) -> str:
    """Replace ``{name}`` (and ``{name.attr}``, ``{name[0]}``, ``{name:.2f}``) with notebook
    values; ``{{`` and ``}}`` are literal braces. An unknown name is an error."""
    try:
        return string.Formatter().vformat(prompt, (), NotebookNames(user_ns))
    except _Placeholder as exc:
        field = exc.args[0]
        if field.isidentifier():
            problem = f"the prompt uses {{{field}}} but no notebook variable is named {field!r}"
        else:
            problem = (
                f"{{{field}}} in the prompt is not a variable name (only {{name}}, "
                "{name.attr} and {name[key]} are filled in)"
            )
        raise UsageError(f"{problem}. {_HINT}") from None
    except (ValueError, IndexError, KeyError, AttributeError, TypeError) as exc:
        raise UsageError(
            f"the prompt's {{...}} placeholders could not be filled "
            f"({type(exc).__name__}: {exc}). {_HINT}"
        ) from None


def row_renderer(template: str, user_ns: Mapping[str, Any]) -> Callable[[Any], str]:
    """The ``--each`` prompt of a row: its fields first, then notebook variables, for each
    ``{name}``; ``{item}`` is the whole row."""
    names = NotebookNames(user_ns)

    def render(row: Any) -> str:
        fields = {str(k): v for k, v in row.items()} if isinstance(row, dict) else {}
        try:
            return string.Formatter().vformat(template, (), ChainMap({"item": row}, fields, names))
        except KeyError as exc:
            raise ValueError(
                f"{{{exc.args[0]}}} is neither a field of the rows ({', '.join(fields)}) nor a "
                "notebook variable"
            ) from None

    return render


class _Placeholder(KeyError):
    """A ``{field}`` that names no notebook variable."""


class NotebookNames(Mapping):
    """The notebook's variables as a template sees them: only identifiers that exist."""

    def __init__(self, user_ns: Mapping[str, Any]):
        self._ns = user_ns

    def __getitem__(self, key: str) -> Any:
        if not key.isidentifier() or key not in self._ns:
            raise _Placeholder(key)
        return self._ns[key]

    def __iter__(self):
        return iter(self._ns)

    def __len__(self) -> int:
        return len(self._ns)
