"""``make_memory_tools`` and ``make_retrieval_tool``: tools bound to one memory store.

There is no process-wide store: which store (ephemeral or on disk, and where) is the
caller's explicit choice, so each factory takes it as an argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aimu._checks import whole_number
from aimu.memory.base import MemoryStore
from aimu.rag import format_context, retrieve_with_sources
from aimu.tools.decorator import tool

MAX_MEMORY_CHARS = 10_000
MAX_RESULTS = 50
_PREVIEW_CHARS = 500


def make_memory_tools(store: MemoryStore) -> list[Callable]:
    """Build ``store_memory``, ``search_memories`` and ``list_memories`` bound to ``store``.

    ``store`` is any :class:`~aimu.memory.MemoryStore` — a
    :class:`~aimu.memory.SemanticMemoryStore` (search by meaning), a
    :class:`~aimu.memory.DocumentStore` (search by words) — or any object of your own with
    ``store``, ``search`` and ``list_all`` methods::

        store = SemanticMemoryStore(persist_path="./.memory")
        agent = Agent(client, tools=make_memory_tools(store))
    """
    _check_store(store)

    @tool(read_only=False)
    def store_memory(content: str) -> str:
        """Save a fact or note to long-term memory so it can be found in later conversations.

        Store one self-contained statement per call (e.g. "Paul prefers short answers").

        Args:
            content: The text to remember, at most 10000 characters.
        """
        if not content.strip():
            return "Not stored: the memory is empty."
        if len(content) > MAX_MEMORY_CHARS:
            return (
                f"Not stored: the memory is {len(content)} characters; the limit is "
                f"{MAX_MEMORY_CHARS}. Store a shorter summary."
            )
        store.store(content)
        return "Stored."

    @tool(read_only=True)
    def search_memories(query: str, n_results: int = 5) -> str:
        """Search long-term memory; returns the best-matching memories, best first.

        Args:
            query: What to look for, in words (a topic, a name, a question).
            n_results: How many memories to return, 1 to 50.
        """
        if not query.strip():
            return "Give a query: the words or topic to search for."
        found = store.search(query, n_results=max(1, min(n_results, MAX_RESULTS)))
        if not found:
            return "No memories match." if store.list_all() else "Memory is empty."
        return "\n".join(f"{i}. {_preview(text)}" for i, text in enumerate(found, 1))

    @tool(read_only=True)
    def list_memories(offset: int = 0, limit: int = 50) -> str:
        """List what long-term memory holds, a page at a time.

        Args:
            offset: How many items to skip (0 for the first page).
            limit: How many items to show, 1 to 50.
        """
        items = store.list_all()
        if not items:
            return "Memory is empty."
        offset = max(0, offset)
        page = items[offset : offset + max(1, min(limit, MAX_RESULTS))]
        if not page:
            return f"Nothing at offset {offset}: memory holds {len(items)} items."
        lines = [f"{offset + i}. {_preview(text)}" for i, text in enumerate(page, 1)]
        header = f"Items {offset + 1}-{offset + len(page)} of {len(items)}:"
        return "\n".join([header, *lines])

    return [store_memory, search_memories, list_memories]


def make_retrieval_tool(store: MemoryStore, *, n_results: int = 5) -> Callable:
    """Build ``retrieve_context``: look up background passages in ``store`` on demand.

    ``store`` is typically a :class:`~aimu.memory.SemanticMemoryStore` filled by
    :func:`aimu.rag.ingest`; each passage comes back numbered and labelled with its source so
    the model can cite it::

        ingest(store, {"handbook.md": text})
        agent = Agent(client, tools=[make_retrieval_tool(store)])
    """
    _check_store(store)
    whole_number(n_results, "n_results")

    @tool(read_only=True)
    def retrieve_context(query: str) -> str:
        """Find passages in the knowledge base relevant to a question, with their sources.

        Returns up to a fixed number of numbered passages, most relevant first, each headed by
        its source and character range. Cite what you use as [n] with its source.

        Args:
            query: The question or topic, in words.
        """
        if not query.strip():
            return "Give a query: the question or topic to look up."
        hits = retrieve_with_sources(store, query, n_results=n_results)
        if not hits:
            return "The knowledge base has nothing on this."
        return format_context(hits)

    return retrieve_context


def _check_store(store: Any) -> None:
    missing = [m for m in ("store", "search", "list_all") if not callable(getattr(store, m, None))]
    if missing:
        raise TypeError(
            f"store must be a MemoryStore (it lacks {', '.join(missing)}), "
            f"not {type(store).__name__}"
        )


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"
