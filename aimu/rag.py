"""Retrieval-augmented generation: cut documents into chunks, store them, fetch the relevant ones.

    from aimu.memory import SemanticMemoryStore
    from aimu.rag import ingest, retrieve_with_sources, format_context

    store = SemanticMemoryStore()
    ingest(store, {"handbook.md": handbook_text, "faq.md": faq_text})
    hits = retrieve_with_sources(store, "How many days of leave do I get?")
    print(format_context(hits))            # numbered chunks, each naming its source

Works with any :class:`~aimu.memory.MemoryStore` (or any object with ``store`` and
``search`` methods); stores that keep metadata (the semantic store) keep each chunk's source
and position, so answers can cite them. The reference library's call forms work too:
``split_text`` gives strings (our :class:`Chunk` is a ``str`` that also knows its offsets),
``retrieve(store, query, **search_kwargs)`` forwards to the store, ``format_context(...,
numbered=, separator=)``, and :func:`rerank` re-scores a wide candidate set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from aimu._checks import whole_number
from aimu.memory.base import Hit, MemoryStore, check_text

_BREAKS = ("\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ")
_BATCH = 256

Measure = Callable[[str], int]
Ranked = TypeVar("Ranked", str, Hit)


class Chunk(str):
    """A piece of a document: a ``str`` of its text that also knows where it sits.

    ``start`` / ``end`` are character offsets in the document, so ``document[start:end]``
    is the chunk; ``text`` is the plain string.
    """

    start: int
    end: int

    def __new__(cls, text: str, start: int, end: int) -> Chunk:
        chunk = super().__new__(cls, text)
        chunk.start, chunk.end = start, end
        return chunk

    @property
    def text(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"Chunk({self.text!r}, start={self.start}, end={self.end})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Chunk, (self.text, self.start, self.end))


def split_text(
    text: str,
    *,
    chunk_size: int = 1000,
    chunk_overlap: int = 200,
    separators: Sequence[str] | None = None,
    length_function: Measure = len,
) -> list[Chunk]:
    """Cut ``text`` into chunks of at most ``chunk_size``, in order; each chunk is a string.

    Size is measured by ``length_function`` (characters by default; pass a tokenizer's
    counter for token-sized chunks). Each chunk ends at the strongest break available in its
    second half: the first of ``separators`` found there (by default a blank line, a line
    end, a sentence end, then a space), else at the size limit. The next chunk starts about
    ``chunk_overlap`` earlier, at a word boundary, so no sentence is lost at a seam. Each
    chunk is exactly ``text[chunk.start:chunk.end]``. Blank text gives no chunks.
    """
    _check_sizes(chunk_size, chunk_overlap)
    if not isinstance(text, str):
        raise TypeError(f"a document must be a str, not {type(text).__name__}")
    breaks = _check_separators(separators)
    if not callable(length_function):
        raise TypeError("length_function must be a callable str -> int, e.g. len")
    chunks: list[Chunk] = []
    start = _skip_space(text, 0)
    while start < len(text):
        limit = max(start + 1, _reach(text, start, chunk_size, length_function))
        end = len(text)
        if limit < len(text):
            floor = max(
                start + (limit - start) // 2,
                _reach(text, start, chunk_overlap, length_function) + 1,
            )
            end = _cut(text, floor, limit, breaks)
        stripped = text[start:end].rstrip()
        if stripped:
            chunks.append(Chunk(stripped, start, start + len(stripped)))
        if end >= len(text):
            break
        back = _back(text, start + 1, end, chunk_overlap, length_function)
        start = max(start + 1, _skip_space(text, _next_start(text, back, end)))
    return chunks


def ingest(
    store: MemoryStore,
    documents: str | Sequence[str] | Mapping[str, str],
    *,
    chunk_size: int = 1000,
    chunk_overlap: int = 200,
    separators: Sequence[str] | None = None,
    length_function: Measure = len,
) -> int:
    """Split ``documents`` into chunks, store them all, and return how many were stored.

    ``documents`` is one string, a list of strings, or a mapping ``{source: text}`` (a file
    name, a URL...). The sizes, ``separators`` and ``length_function`` are those of
    :func:`split_text`. Each chunk's metadata records ``document`` (its index), ``chunk``
    (its index in the document), ``start``/``end`` (character offsets) and, when given,
    ``source``. Chunks are embedded in batches. Stores without metadata keep the text only.
    """
    _check_sizes(chunk_size, chunk_overlap)
    sizes = {
        "chunk_size": chunk_size,
        "chunk_overlap": chunk_overlap,
        "separators": separators,
        "length_function": length_function,
    }
    texts: list[Chunk] = []
    metadatas: list[dict[str, Any]] = []
    for index, (source, text) in enumerate(_documents(documents)):
        for number, chunk in enumerate(split_text(text, **sizes)):
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


def retrieve(
    store: MemoryStore, query: str, *, n_results: int = 5, **search_kwargs: Any
) -> list[str]:
    """Up to ``n_results`` stored chunks relevant to ``query``, best first.

    Other keywords go to the store's search (``max_distance=`` for a
    :class:`~aimu.memory.SemanticMemoryStore`). To rerank, fetch a wider set here and pass
    it to :func:`rerank`.
    """
    hits = retrieve_with_sources(store, query, n_results=n_results, **search_kwargs)
    return [hit.text for hit in hits]


def retrieve_with_sources(
    store: MemoryStore, query: str, *, n_results: int = 5, **search_kwargs: Any
) -> list[Hit]:
    """Like :func:`retrieve`, as :class:`~aimu.memory.Hit` objects: ``hit.text``,
    ``hit.source``, ``hit.metadata`` (position) and ``hit.distance``."""
    check_text(query, "query")
    whole_number(n_results, "n_results")
    query_hits = getattr(store, "query", None)
    if callable(query_hits):
        return query_hits(query, n_results, **search_kwargs)
    found = store.search(query, n_results=n_results, **search_kwargs)
    return [Hit(text) for text in found]


def format_context(
    hits: Iterable[Hit | str], *, numbered: bool = True, separator: str = "\n\n"
) -> str:
    """Join retrieved chunks into one text for a prompt, ``separator`` between them.

    Numbered (the default, so a model can cite them): ``[1] (source: handbook.md, chars
    1200-2180)`` then the chunk on the next line, or ``[2] text`` for a chunk with nothing
    known about it. ``numbered=False`` joins the bare texts.
    """
    if not isinstance(separator, str):
        raise TypeError(f"separator must be a str, not {type(separator).__name__}")
    blocks = []
    for number, hit in enumerate(hits, 1):
        if isinstance(hit, str):
            hit = Hit(str(hit))
        if not numbered:
            blocks.append(hit.text)
        elif label := _label(hit):
            blocks.append(f"[{number}]{label}\n{hit.text}")
        else:
            blocks.append(f"[{number}] {hit.text}")
    return separator.join(blocks)


def rerank(
    query: str,
    documents: Iterable[Ranked],
    *,
    top_n: int | None = None,
    model: Any = None,
) -> list[Ranked]:
    """Reorder ``documents`` (strings or hits) by relevance to ``query``, most relevant first.

    Fetch a wide set with :func:`retrieve` (say ``n_results=20``), then keep the best few
    with ``top_n``. ``model`` scores each document against the query: by default the bundled
    all-MiniLM-L6-v2 (cosine similarity; works offline), or a loaded sentence-transformers
    ``CrossEncoder`` (anything with ``predict(pairs) -> scores``), or a callable
    ``(query, texts) -> scores``. Ties keep their retrieved order; an empty input returns
    ``[]`` without loading a model.
    """
    check_text(query, "query")
    if top_n is not None:
        whole_number(top_n, "top_n")
    items = list(documents)
    if not items:
        return []
    texts = [item if isinstance(item, str) else item.text for item in items]
    scores = [float(score) for score in _scorer(model)(query, texts)]
    if len(scores) != len(items):
        raise ValueError(f"the rerank model gave {len(scores)} scores for {len(items)} documents")
    order = sorted(range(len(items)), key=lambda i: -scores[i])
    ranked = [items[i] for i in order]
    return ranked if top_n is None else ranked[:top_n]


def _scorer(model: Any) -> Callable[[str, list[str]], Sequence[float]]:
    if model is None:
        return _cosine
    if isinstance(model, str):
        raise TypeError(
            f"model must be a loaded model, not the name {model!r}: nothing is downloaded at run "
            "time; pass sentence_transformers.CrossEncoder(<local path>), or None for the "
            "bundled embedding model"
        )
    predict = getattr(model, "predict", None)
    if callable(predict):
        return lambda query, texts: predict([(query, text) for text in texts])
    if callable(model):
        return model
    raise TypeError(
        "model must be None (the bundled embedding model), a CrossEncoder (with predict) or a "
        f"callable (query, texts) -> scores, not {type(model).__name__}"
    )


def _cosine(query: str, texts: list[str]) -> list[float]:
    """Cosine similarity of each text to the query under the default embedding model."""
    from aimu.memory.embeddings import default_embedding_function

    vectors = default_embedding_function()([query, *texts])
    first, *rest = ([float(x) for x in vector] for vector in vectors)
    return [_dot(first, other) / ((_dot(first, first) * _dot(other, other)) ** 0.5 or 1.0)
            for other in rest]  # fmt: skip


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


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
    whole_number(chunk_size, "chunk_size")
    whole_number(chunk_overlap, "chunk_overlap", minimum=0)
    if chunk_overlap >= chunk_size:
        raise ValueError(
            f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})"
        )


def _check_separators(separators: Sequence[str] | None) -> tuple[str, ...]:
    """The breaks to try, strongest first; ``""`` (split anywhere) is always the last resort."""
    if separators is None:
        return _BREAKS
    if isinstance(separators, str) or not all(isinstance(s, str) for s in separators):
        raise TypeError("separators must be a list of strings, strongest break first")
    return tuple(s for s in separators if s)


def _reach(text: str, start: int, budget: int, measure: Measure) -> int:
    """The furthest ``end >= start`` with ``measure(text[start:end]) <= budget``."""
    if measure is len:
        return min(len(text), start + budget)
    low, step = start, max(budget, 1)
    high = min(len(text), start + step)
    while high < len(text) and measure(text[start:high]) <= budget:
        low, step = high, step * 2
        high = min(len(text), start + step)
    if measure(text[start:high]) <= budget:
        return high
    while high - low > 1:  # measure(text[start:low]) fits, measure(text[start:high]) does not
        middle = (low + high) // 2
        if measure(text[start:middle]) <= budget:
            low = middle
        else:
            high = middle
    return low


def _back(text: str, floor: int, end: int, budget: int, measure: Measure) -> int:
    """The earliest ``at >= floor`` with ``measure(text[at:end]) <= budget``."""
    if measure is len:
        return max(floor, end - budget)
    low, high = floor, end  # text[high:end] is empty, so it fits
    while low < high:
        middle = (low + high) // 2
        if measure(text[middle:end]) <= budget:
            high = middle
        else:
            low = middle + 1
    return low


def _cut(text: str, floor: int, limit: int, breaks: tuple[str, ...]) -> int:
    """Where a chunk ends: after the strongest break between ``floor`` and ``limit``."""
    for mark in breaks:
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
