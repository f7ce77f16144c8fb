"""``MemoryStore``: the interface every memory store shares, and ``Hit``, one search result.

``store`` / ``search`` / ``delete`` / ``list_all`` are the whole contract, so a custom store
needs only those four methods (``len()`` counts ``list_all()``). ``add`` (many contents, with
metadata) and ``query`` (results with their metadata) build on them; stores that keep
metadata override both, and :mod:`aimu.rag` uses them to carry each chunk's source.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Metadata = Mapping[str, str | int | float | bool]


@dataclass(frozen=True)
class Hit:
    """One search result: the stored text, its metadata and, for vector stores, its distance.

    ``distance`` is the cosine distance to the query (0 = same direction, 2 = opposite);
    ``None`` where the store does not measure one.
    """

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    distance: float | None = None

    @property
    def source(self) -> str | None:
        """Where the text came from (``metadata["source"]``), if that was recorded."""
        source = self.metadata.get("source")
        return None if source is None else str(source)


class MemoryStore(ABC):
    """A place to keep text and find it again; implementations are interchangeable."""

    @abstractmethod
    def store(self, content: str) -> Any:
        """Keep ``content``."""

    @abstractmethod
    def search(self, query: str, n_results: int = 10) -> list[str]:
        """Up to ``n_results`` stored texts relevant to ``query``, best first."""

    @abstractmethod
    def delete(self, identifier: str) -> Any:
        """Remove what ``identifier`` names (an id, a path or the exact text, per store)."""

    @abstractmethod
    def list_all(self) -> list[str]:
        """Every stored item (its text or its identifier, per store)."""

    def __len__(self) -> int:
        return len(self.list_all())

    def add(self, contents: Sequence[str], metadatas: Sequence[Metadata] | None = None) -> None:
        """Keep many texts. This default stores each one and drops the metadata."""
        check_batch(contents, metadatas)
        for content in contents:
            self.store(content)

    def query(self, query: str, n_results: int = 10, **search_kwargs: Any) -> list[Hit]:
        """Like :meth:`search` (given the same keywords), with each result's metadata (none,
        in this default)."""
        return [Hit(text) for text in self.search(query, n_results, **search_kwargs)]


def check_text(value: Any, label: str) -> str:
    """Return ``value`` if it is a non-blank string; raise a clear error otherwise."""
    if not isinstance(value, str):
        raise TypeError(f"{label} must be a str, not {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{label} must not be empty")
    return value


def check_batch(contents: Sequence[str], metadatas: Sequence[Metadata] | None) -> None:
    if isinstance(contents, str):
        raise TypeError("contents must be a list of strings, not one string")
    for index, content in enumerate(contents):
        check_text(content, f"contents[{index}]")
    if metadatas is None:
        return
    if len(metadatas) != len(contents):
        raise ValueError(
            f"got {len(metadatas)} metadatas for {len(contents)} contents; pass one per content"
        )
    for index, metadata in enumerate(metadatas):
        if not isinstance(metadata, Mapping):
            raise TypeError(f"metadatas[{index}] must be a dict, not {type(metadata).__name__}")
        for key, value in metadata.items():
            if not isinstance(key, str) or not isinstance(value, str | int | float | bool):
                raise TypeError(
                    f"metadatas[{index}][{key!r}] must map a str to a str, int, float or bool, "
                    f"not {type(value).__name__}"
                )
