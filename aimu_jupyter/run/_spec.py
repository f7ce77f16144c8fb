"""A notebook run as a value: what one ``%%agent`` cell, ``--each`` batch or
``run_agent(...)`` call asked for, in the names :class:`aimu.aio.Agent` and
:func:`aimu.batch` use.

A :class:`RunSpec` is built once, from the magic's parsed arguments
(:meth:`RunSpec.from_arguments`: the ``@magic_arguments`` of ``%%agent`` are the one place
the flags are declared) or from ``run_agent``'s keywords (:meth:`RunSpec.from_keywords`),
and checked as it is built. What needs the notebook (a variable's value, the ``%config``
defaults) is resolved later, by :mod:`aimu_jupyter.run._assemble`. A bad value is a
one-line :class:`UsageError` naming the option as the user wrote it (``--max-iterations``
in a cell, ``max_iterations`` from Python).
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from IPython.core.error import UsageError

from aimu._checks import flag, positive_number, whole_number
from aimu_jupyter.run import _options as readers

#: ``run_agent`` keywords spelled as the magic's flags before they took the library's names.
RENAMED = {"approve": "tool_approval", "system": "system_message"}


class _Labelled:
    """How each option is named to the user who gave it (``--approve`` or ``tool_approval``)."""

    labels: Mapping[str, str]

    def label(self, name: str) -> str:
        return self.labels.get(name, name)

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _check(self, name: str, check: Any, *args: Any, **kwargs: Any) -> None:
        value = getattr(self, name)
        if value is None:
            return
        try:
            self._set(name, check(value, self.label(name), *args, **kwargs))
        except ValueError as exc:
            raise UsageError(str(exc)) from None


@dataclass(frozen=True)
class BatchSpec(_Labelled):
    """``--each ROWS`` and how the rows run, as :func:`aimu.batch` names it; ``rows`` is the
    name of the notebook variable holding them."""

    rows: str
    concurrency: int | None = None
    checkpoint: str | None = None
    backend: str = "local"
    max_cost: float | None = None
    poll_interval: float | None = None
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._check("concurrency", whole_number)
        self._check("max_cost", positive_number, unit="US dollars")
        self._check("poll_interval", positive_number, unit="seconds")

    def batching(self) -> dict[str, Any]:
        """The keywords of :class:`aimu.batch.BatchRun` this spec sets."""
        chosen = {"concurrency": self.concurrency, "checkpoint": self.checkpoint,
                  "backend": self.backend, "max_cost": self.max_cost}  # fmt: skip
        if self.poll_interval is not None:
            chosen["poll_interval"] = self.poll_interval
        return chosen


@dataclass(frozen=True)
class RunSpec(_Labelled):
    """One run's options. ``None`` falls back on the notebook's ``%config AimuMagics.*``
    (then the library's default); the rest are :class:`aimu.aio.Agent`'s options, plus:

    ``model`` (``"provider:model"``, a ModelClient or a notebook variable's name),
    ``tools`` (the ``--tools`` comma list, or a list of names, tools and MCP clients),
    ``tool_approval`` (``auto``, ``ask``, ``deny``, a policy or a variable naming one),
    ``trust_mcp`` (the MCP clients whose annotations decide), ``compaction`` (``last:N``,
    ``tokens:N``, a policy or a variable), ``schema`` (the answer's type or a variable),
    ``cache``/``fresh`` (the response cache), ``name``/``new`` (which conversation),
    ``display`` (show the live record), ``nested`` (run from inside another cell magic,
    where no click can reach the run) and ``each`` (the batch, for ``--each``).
    """

    model: Any = None
    tools: Any = None
    tool_approval: Any = None
    trust_mcp: Any = None
    system_message: str | None = None
    max_iterations: int | None = None
    thinking: bool | str | None = None
    generate_kwargs: Mapping[str, Any] | None = None
    compaction: Any = None
    schema: Any = None
    cache: bool | str | None = None
    fresh: bool = False
    name: str | None = None
    new: bool = False
    display: bool = True
    nested: bool = False
    each: BatchSpec | None = None
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("fresh", "new", "display", "nested"):
            self._check(name, flag)
        self._check("max_iterations", whole_number)
        self._set("thinking", readers.thinking(self.thinking, self.label("thinking")))
        options = readers.generate_kwargs(self.generate_kwargs, self.label("generate_kwargs"))
        self._set("generate_kwargs", options)
        for name in ("tools", "trust_mcp"):
            value = getattr(self, name)
            if isinstance(value, list):
                self._set(name, tuple(value))

    @classmethod
    def from_arguments(cls, args: argparse.Namespace, parser: argparse.ArgumentParser) -> RunSpec:
        """The spec of a ``%%agent`` cell from its parsed options (each option's ``dest`` is
        the field it sets)."""
        labels = {
            action.dest: max(action.option_strings, key=len)
            for action in parser._actions
            if action.option_strings
        }
        given = vars(args)
        each = None
        if given.get("rows") is not None:
            each = BatchSpec(**_picked(BatchSpec, given), labels=labels)
        return cls(**_picked(cls, given), each=each, labels=labels)

    @classmethod
    def from_keywords(cls, options: Mapping[str, Any], caller: str = "run_agent") -> RunSpec:
        """The spec of ``caller(**options)``; an unknown keyword is a ``TypeError``, as in any
        call, and an old spelling (:data:`RENAMED`) still works, with a warning."""
        accepted = set(keywords())
        values: dict[str, Any] = {}
        for key, value in options.items():
            if key in RENAMED:
                warnings.warn(
                    f"{caller}({key}=...) is now spelled {RENAMED[key]}=..., as in aimu.Agent",
                    DeprecationWarning,
                    stacklevel=3,
                )
                key = RENAMED[key]
            if key not in accepted:
                raise TypeError(f"{caller}() got an unexpected keyword argument {key!r}")
            if key in values:
                raise TypeError(f"{caller}() got {key} twice (once under its old name)")
            values[key] = value
        return cls(**values)


def keywords() -> list[str]:
    """The options ``run_agent`` takes: every field of a spec but the magic's own."""
    own = ("nested", "each", "labels")
    return [f.name for f in fields(RunSpec) if f.name not in own]


def _picked(kind: type, given: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(kind)} - {"each", "labels"}
    return {name: value for name, value in given.items() if name in names}
