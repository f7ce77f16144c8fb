"""Retrieval-augmented generation: cut documents into chunks, store them, fetch the relevant ones.

    from aimu.memory import SemanticMemoryStore
    from aimu.rag import ingest, retrieve_with_sources, format_context

    store = SemanticMemoryStore()
    ingest(store, {"handbook.md": handbook_text, "faq.md": faq_text})
    hits = retrieve_with_sources(store, "How many days of leave do I get?")
    print(format_context(hits))            # numbered chunks, each naming its source

Works with any :class:`~aimu.memory.MemoryStore` (or any object with ``store`` and
``search`` methods); stores that keep metadata (the semantic
store) keep each chunk's source and position, so answers can cite them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aimu.memory.base import Hit, MemoryStore, check_count, check_text

_BREAKS = ("\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ")
_BATCH = 256


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: its text and where it sits (``start``/``end`` character offsets)."""

    text: str
    start: int
    end: int


def split_text(text: str, *, chunk_size: int = 1000, chunk_overlap: int = 200) -> list[Chunk]:
    """Cut ``text`` into chunks of at most ``chunk_size`` characters, in order.

    Each chunk ends at the strongest break available in its second half (a blank line, a line
    end, a sentence end, then a space) and the next one starts about ``chunk_overlap``
    characters earlier, at a word boundary, so no sentence is lost at a seam. Each chunk's text
    is exactly ``text[start:end]``. Blank text gives no chunks.
    """
    _check_sizes(chunk_size, chunk_overlap)
    if not isinstance(text, str):
        raise TypeError(f"a document must be a str, not {type(text).__name__}")
    chunks: list[Chunk] = []
    start = _skip_space(text, 0)
    while start < len(text):
        end = _cut(text, start, chunk_size, chunk_overlap)
        piece = text[start:end]
        stripped = piece.rstrip()
        if stripped:
            chunks.append(Chunk(stripped, start, start + len(stripped)))
        if end >= len(text):
            break
        start = _skip_space(text, _next_start(text, end - chunk_overlap, end))
    return chunks


def ingest(
    store: MemoryStore,
    documents: str | Sequence[str] | Mapping[str, str],
    *,
    chunk_size: int = 1000,
    chunk_overlap: int = 200,
) -> int:
    """Split ``documents`` into chunks, store them all, and return how many were stored.

    ``documents`` is one string, a list of strings, or a mapping ``{source: text}`` (a file
    name, a URL...). Each chunk's metadata records ``document`` (its index), ``chunk`` (its
    index in the document), ``start``/``end`` (character offsets) and, when given,
    ``source``. Chunks are embedded in batches. Stores without metadata keep the text only.
    """
    _check_sizes(chunk_size, chunk_overlap)
    texts: list[Chunk] = []
    metadatas: list[dict[str, Any]] = []
    for index, (source, text) in enumerate(_documents(documents)):
        for number, chunk in enumerate(
            split_text(text, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        ):
            metadata: dict[str, Any] = {
                "document": index,
                "chunk": number,
                "start": chunk.start,
                "end": chunk.end,
            }
            if source is not None:
                metadata["source"] = source
            texts.append(chunk)
            metadatas.append(metadata)
    add = getattr(store, "add", None)
    for first in range(0, len(texts), _BATCH):
        batch = [chunk.text for chunk in texts[first : first + _BATCH]]
        if callable(add):
            add(batch, metadatas[first : first + _BATCH])
        else:
            for text in batch:
                store.store(text)
    return len(texts)


def retrieve(store: MemoryStore, query: str, *, n_results: int = 5) -> list[str]:
    """Up to ``n_results`` stored chunks relevant to ``query``, best first."""
    return [hit.text for hit in retrieve_with_sources(store, query, n_results=n_results)]


def retrieve_with_sources(store: MemoryStore, query: str, *, n_results: int = 5) -> list[Hit]:
    """Like :func:`retrieve`, as :class:`~aimu.memory.Hit` objects: ``hit.text``,
    ``hit.source``, ``hit.metadata`` (position) and ``hit.distance``."""
    check_text(query, "query")
    check_count(n_results)
    query_hits = getattr(store, "query", None)
    if callable(query_hits):
        return query_hits(query, n_results)
    return [Hit(text) for text in store.search(query, n_results=n_results)]


def format_context(hits: Iterable[Hit | str]) -> str:
    """Join retrieved chunks into one numbered text, each headed by its source when known.

    ``[1] (source: handbook.md, chars 1200-2180)`` then the chunk, blank line, ``[2] ...``.
    """
    blocks = []
    for number, hit in enumerate(hits, 1):
        if isinstance(hit, str):
            hit = Hit(hit)
        blocks.append(f"[{number}]{_label(hit)}\n{hit.text}")
    return "\n\n".join(blocks)


def _label(hit: Hit) -> str:
    parts = []
    if hit.source is not None:
        parts.append(f"source: {hit.source}")
    start, end = hit.metadata.get("start"), hit.metadata.get("end")
    if isinstance(start, int) and isinstance(end, int):
        parts.append(f"chars {start}-{end}")
    return f" ({', '.join(parts)})" if parts else ""


def _documents(documents: Any) -> list[tuple[str | None, str]]:
    if isinstance(documents, str):
        return [(None, documents)]
    if isinstance(documents, Mapping):
        pairs = []
        for source, text in documents.items():
            check_text(str(source), "a document's source")
            pairs.append((str(source), text))
        return pairs
    if isinstance(documents, Iterable):
        return [(None, text) for text in documents]
    raise TypeError(
        "documents must be a str, a list of str or a dict {source: text}, "
        f"not {type(documents).__name__}"
    )


def _check_sizes(chunk_size: Any, chunk_overlap: Any) -> None:
    check_count(chunk_size, "chunk_size")
    if isinstance(chunk_overlap, bool) or not isinstance(chunk_overlap, int) or chunk_overlap < 0:
        raise ValueError(f"chunk_overlap must be an int >= 0, not {chunk_overlap!r}")
    if chunk_overlap >= chunk_size:
        raise ValueError(
            f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})"
        )


def _cut(text: str, start: int, chunk_size: int, chunk_overlap: int) -> int:
    """Where the chunk starting at ``start`` ends: at a break, past the overlap."""
    limit = start + chunk_size
    if limit >= len(text):
        return len(text)
    floor = start + max(chunk_size // 2, chunk_overlap + 1)
    for mark in _BREAKS:
        at = text.rfind(mark, floor, limit - len(mark) + 1)
        if at != -1:
            return at + len(mark)
    return limit


def _next_start(text: str, at: int, end: int) -> int:
    """Move ``at`` forward to the start of a word, without reaching ``end``."""
    if at <= 0 or text[at - 1].isspace():
        return at
    space = next((i for i in range(at, end) if text[i].isspace()), -1)
    return space if space != -1 else at


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at
