"""What a batch returns: one :class:`BatchItem` per input, in input order."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

OK = "ok"
FAILED = "failed"


@dataclass
class BatchItem:
    """The outcome of one item.

    ``answer`` is the agent's final text; ``value`` the validated ``schema`` instance when the
    batch has a schema, else the answer. ``status`` is ``"ok"`` or ``"failed"``; a failed item
    keeps its last ``error`` message and a ``None`` answer. ``attempts`` counts the runs it took
    (rate-limit waits are not attempts). ``resumed`` is true for items read back from a
    checkpoint instead of run again.
    """

    index: int
    item: Any
    prompt: str
    status: str = FAILED
    answer: str | None = None
    value: Any = None
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    attempts: int = 0
    resumed: bool = False

    @property
    def ok(self) -> bool:
        return self.status == OK


class BatchResult(Sequence[BatchItem]):
    """A list-like view of a batch's items in input order, with summary counts.

    ``interrupted`` is true when the batch was stopped before every item finished; the items
    that did not run are then missing (``len(result)`` is what finished). ``stopped`` says
    why the batch started no more items when it stopped itself (``"the cost limit ($0.50)"``,
    ``"the approval sample: Stop was chosen"``), else ``None``; run it again with the same
    checkpoint to go on. ``cost`` is what the items cost in US dollars, ``None`` when the
    model has no price (:data:`aimu.prices`).
    """

    def __init__(
        self,
        items: list[BatchItem],
        *,
        total: int,
        index: Any = None,
        schema: Any = None,
        stopped: str | None = None,
        cost: float | None = None,
    ):
        self._items = sorted(items, key=lambda it: it.index)
        self.total = total
        self.interrupted = len(self._items) < total
        self.schema = schema
        self.stopped = stopped
        self.cost = cost
        self._index = index

    @overload
    def __getitem__(self, position: int) -> BatchItem: ...
    @overload
    def __getitem__(self, position: slice) -> list[BatchItem]: ...

    def __getitem__(self, position: int | slice) -> BatchItem | list[BatchItem]:
        return self._items[position]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[BatchItem]:
        return iter(self._items)

    @property
    def failed(self) -> list[BatchItem]:
        return [it for it in self._items if not it.ok]

    @property
    def values(self) -> list[Any]:
        """Each item's value (``None`` for failed items), in input order."""
        return [it.value for it in self._items]

    @property
    def usage(self) -> dict[str, int]:
        """Token counts summed over every item, resumed ones included."""
        total: dict[str, int] = {}
        for it in self._items:
            for key, count in it.usage.items():
                total[key] = total.get(key, 0) + count
        return total

    def to_pandas(self) -> Any:
        """A DataFrame: the item's fields (or ``item``), the answer, then with a ``schema`` one
        column per schema field (else ``value``), status, error and token counts.

        When the batch ran over a DataFrame, the rows keep that frame's index.
        """
        import pandas as pd

        rows = []
        for it in self._items:
            row = dict(it.item) if isinstance(it.item, dict) else {"item": it.item}
            row["answer"] = it.answer
            fields = _fields(it.value) if self.schema is not None else None
            if fields is None:
                row["value"] = it.value
            else:
                row.update({(f"value_{k}" if k in row else k): v for k, v in fields.items()})
            row.update(status=it.status, error=it.error)
            row.update(
                input_tokens=it.usage.get("input_tokens", 0),
                output_tokens=it.usage.get("output_tokens", 0),
            )
            rows.append(row)
        index = None
        if self._index is not None:
            index = [self._index[it.index] for it in self._items]
        return pd.DataFrame(rows, index=index)

    def __repr__(self) -> str:
        failed = len(self.failed)
        state = ", interrupted" if self.interrupted and not self.stopped else ""
        if self.stopped:
            state = f", stopped for {self.stopped}"
        if self.cost is not None:
            from aimu.models.prices import format_money

            state += f", {format_money(self.cost)}"
        return f"<BatchResult {len(self)}/{self.total} items, {failed} failed{state}>"


def _fields(value: Any) -> dict[str, Any] | None:
    """A schema instance's fields (pydantic model, dataclass or TypedDict), else ``None``."""
    if value is None:
        return None
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return dict(value) if isinstance(value, dict) else None
