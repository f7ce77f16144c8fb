"""``SemanticMemoryStore``: texts kept in ChromaDB and found by meaning.

Ephemeral (in memory) by default, or persistent under ``persist_path``, where it survives
a restart. Each ephemeral store gets a collection of its own: Chroma shares one in-memory
database per process, and two stores must not see each other's memories.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aimu._checks import whole_number
from aimu.memory.base import Hit, MemoryStore, Metadata, check_batch, check_text
from aimu.memory.embeddings import INSTALL_HINT, default_embedding_function

try:
    import chromadb
    from chromadb.config import Settings
except ImportError as exc:
    raise ImportError(f"SemanticMemoryStore needs the memory extra: {INSTALL_HINT}") from exc

_BATCH = 256


class _ClientEmbedding(chromadb.EmbeddingFunction):
    """A Chroma embedding function that asks an embedding client: ``client.embed(texts)``."""

    def __init__(self, client: Any):
        self.client = client

    def __call__(self, input: Any) -> Any:  # Chroma calls it with this parameter name
        return self.client.embed(list(input))

    @staticmethod
    def name() -> str:
        return "aimu-embedding-client"

    def get_config(self) -> Any:
        return NotImplemented  # a live client cannot be saved; reopen with the same client

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> Any:
        raise ValueError("reopen this store with the same embedding_client= it was made with")


class SemanticMemoryStore(MemoryStore):
    """Memories in a ChromaDB collection, searched by embedding similarity (cosine).

    ``embedding_function`` is any Chroma embedding function; by default all-MiniLM-L6-v2
    from the ``memory`` extra, which works offline. ``embedding_client`` (the reference
    library's keyword) is the other way to choose: any object whose ``embed(texts)`` returns
    one vector per text. A persistent store must be reopened with the same kind of embedding
    it was created with. Safe to share between threads.

    Args:
        collection_name: Chroma collection name (3-512 characters of ``[a-zA-Z0-9._-]``).
        persist_path: Directory to keep the store in; ``None`` keeps it in memory.
        embedding_function: Turns texts into vectors; see above.
        embedding_client: An object with ``embed(list[str]) -> list[list[float]]``; give
            this or ``embedding_function``, not both.

    Example::

        store = SemanticMemoryStore(persist_path="./.memory")
        store.store("Paul works at Google", metadata={"source": "chat"})
        store.search("employment")        # ["Paul works at Google"]
    """

    def __init__(
        self,
        collection_name: str = "memories",
        persist_path: str | Path | None = None,
        embedding_function: Any = None,
        *,
        embedding_client: Any = None,
    ):
        check_text(collection_name, "collection_name")
        if embedding_client is not None:
            if embedding_function is not None:
                raise ValueError("pass embedding_function or embedding_client, not both")
            if not callable(getattr(embedding_client, "embed", None)):
                raise TypeError(
                    "embedding_client must have an embed(texts) method returning one vector "
                    f"per text; {type(embedding_client).__name__} has none"
                )
            embedding_function = _ClientEmbedding(embedding_client)
        if embedding_function is None:
            embedding_function = default_embedding_function()
        elif not callable(embedding_function) or not callable(
            getattr(embedding_function, "name", None)
        ):
            raise TypeError(
                "embedding_function must be a Chroma embedding function (a subclass of "
                "chromadb.EmbeddingFunction with __call__ and name()), "
                f"not {type(embedding_function).__name__}"
            )
        settings = Settings(anonymized_telemetry=False)
        if persist_path is None:
            self._client = chromadb.EphemeralClient(settings=settings)
            collection_name = f"{collection_name}-{uuid.uuid4().hex[:12]}"
        else:
            self._client = chromadb.PersistentClient(path=str(persist_path), settings=settings)
        self.persist_path = None if persist_path is None else Path(persist_path)
        self._lock = threading.RLock()
        self._collection = self._client.get_or_create_collection(
            collection_name,
            embedding_function=embedding_function,
            configuration={"hnsw": {"space": "cosine"}},
        )

    def store(self, content: str, metadata: Metadata | None = None) -> str:
        """Keep one text (with optional metadata); return its id."""
        return self.add([content], None if metadata is None else [metadata])[0]

    def add(
        self, contents: Sequence[str], metadatas: Sequence[Metadata] | None = None
    ) -> list[str]:
        """Keep many texts at once (embedded in batches); return their ids in order."""
        check_batch(contents, metadatas)
        ids = [uuid.uuid4().hex for _ in contents]
        for start in range(0, len(contents), _BATCH):
            end = start + _BATCH
            batch_metadatas = None
            if metadatas is not None:
                batch_metadatas = [dict(m) or None for m in metadatas[start:end]]
            with self._lock:
                self._live().add(
                    ids=ids[start:end],
                    documents=list(contents[start:end]),
                    metadatas=batch_metadatas,
                )
        return ids

    def search(
        self, query: str, n_results: int = 10, max_distance: float | None = None
    ) -> list[str]:
        """Up to ``n_results`` texts closest in meaning to ``query``, best first.

        ``max_distance`` drops results farther than that cosine distance (0 = identical,
        2 = opposite; 0.3 is tight, 0.6 loose).
        """
        return [hit.text for hit in self.query(query, n_results, max_distance)]

    def query(
        self, query: str, n_results: int = 10, max_distance: float | None = None
    ) -> list[Hit]:
        """Like :meth:`search`, returning each result's id, metadata and distance."""
        check_text(query, "query")
        whole_number(n_results, "n_results")
        with self._lock:
            count = self._live().count()
            if count == 0:
                return []
            found = self._live().query(
                query_texts=[query],
                n_results=min(n_results, count),
                include=["documents", "metadatas", "distances"],
            )
        hits = [
            Hit(text, dict(metadata or {}), id_, float(distance))
            for id_, text, metadata, distance in zip(
                found["ids"][0],
                found["documents"][0],
                found["metadatas"][0],
                found["distances"][0],
                strict=True,
            )
        ]
        if max_distance is not None:
            hits = [hit for hit in hits if hit.distance <= max_distance]
        return hits

    def delete(self, identifier: str) -> int:
        """Remove the memory with this id, or else every memory whose text is exactly this.

        Returns how many were removed.
        """
        check_text(identifier, "identifier")
        with self._lock:
            ids = self._live().get(ids=[identifier], include=[])["ids"]
            if not ids:
                found = self._live().get(
                    where_document={"$contains": identifier}, include=["documents"]
                )
                ids = [
                    id_
                    for id_, text in zip(found["ids"], found["documents"], strict=True)
                    if text == identifier
                ]
            if ids:
                self._live().delete(ids=ids)
            return len(ids)

    def list_all(self) -> list[str]:
        """Every stored text."""
        with self._lock:
            return list(self._live().get(include=["documents"])["documents"] or [])

    def items(self) -> list[Hit]:
        """Every stored memory with its id and metadata."""
        with self._lock:
            found = self._live().get(include=["documents", "metadatas"])
        return [
            Hit(text, dict(metadata or {}), id_)
            for id_, text, metadata in zip(
                found["ids"], found["documents"], found["metadatas"], strict=True
            )
        ]

    def _live(self) -> Any:
        if self._client is None:
            raise RuntimeError(f"{self!r} is closed")
        return self._collection

    def __len__(self) -> int:
        with self._lock:
            return self._live().count()

    def close(self) -> None:
        """Release the store: an ephemeral one is discarded, a persistent one stays on disk."""
        with self._lock:
            if self._client is None:
                return
            if self.persist_path is None:
                self._client.delete_collection(self._collection.name)
            self._client.close()
            self._client = None

    def __enter__(self) -> SemanticMemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.persist_path or "memory"
        return f"<SemanticMemoryStore {self._collection.name!r} in {where}>"
