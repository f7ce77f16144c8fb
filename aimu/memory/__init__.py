"""Memory stores: somewhere for an agent to keep text and find it again.

- :class:`SemanticMemoryStore`: ChromaDB, searched by meaning (needs the ``memory`` extra);
- :class:`DocumentStore`: whole documents keyed by path, searched by words;
- :class:`MemoryStore`: the interface both implement, for custom stores.

``SemanticMemoryStore`` and ``default_embedding_function`` are imported on first use, so the
rest works without the ``memory`` extra.
"""

from typing import Any

from aimu.memory.base import Hit, MemoryStore
from aimu.memory.documents import DocumentStore, UnreadableDocumentWarning

_LAZY = {
    "SemanticMemoryStore": "aimu.memory.semantic",
    "default_embedding_function": "aimu.memory.embeddings",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'aimu.memory' has no attribute {name!r}")


__all__ = [
    "DocumentStore",
    "Hit",
    "MemoryStore",
    "SemanticMemoryStore",
    "UnreadableDocumentWarning",
    "default_embedding_function",
]
