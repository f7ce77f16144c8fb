"""``DocumentStore``: whole text documents keyed by path, in memory or as files on disk.

Paths look like ``"/notes/preferences.md"``; ``"notes/preferences.md"`` names the same
document, and ``..`` cannot climb out of the store. A persistent store keeps one UTF-8 file
per document under ``persist_path``, written atomically, and reads them all back on opening.
"""

from __future__ import annotations

import os
import posixpath
import re
import tempfile
import threading
import uuid
from pathlib import Path

from aimu.memory.base import Hit, MemoryStore, check_count, check_text

_WORDS = re.compile(r"\w+")


class DocumentStore(MemoryStore):
    """Documents addressed by path; searched by the words they contain.

    ``store(content)`` files a note under an automatic path and returns it; ``write`` puts a
    document at a path you choose. Safe to share between threads.

    Example::

        docs = DocumentStore(persist_path="./.notes")
        docs.write("/preferences.md", "Use concise answers.")
        docs.read("/preferences.md")     # "Use concise answers."
        docs.search("concise")            # ["Use concise answers."]
    """

    def __init__(self, persist_path: str | Path | None = None):
        self.persist_path = None if persist_path is None else Path(persist_path)
        self._docs: dict[str, str] = {}
        self._lock = threading.RLock()
        if self.persist_path is not None:
            self.persist_path.mkdir(parents=True, exist_ok=True)
            self._load()

    def write(self, path: str, content: str) -> str:
        """Create or replace the document at ``path``; return its normalised path."""
        if not isinstance(content, str):
            raise TypeError(f"content must be a str, not {type(content).__name__}")
        key = normalize_path(path)
        with self._lock:
            if self.persist_path is not None:
                _write_atomically(self._file(key), content)
            self._docs[key] = content
        return key

    def read(self, path: str) -> str:
        """The document at ``path``; ``KeyError`` if there is none."""
        key = normalize_path(path)
        with self._lock:
            try:
                return self._docs[key]
            except KeyError:
                raise KeyError(f"no document at {key!r}") from None

    def edit(self, path: str, old: str, new: str) -> None:
        """Replace the first occurrence of ``old`` in the document at ``path`` with ``new``."""
        with self._lock:
            content = self.read(path)
            if old not in content:
                raise ValueError(f"{old!r} does not occur in {normalize_path(path)!r}")
            self.write(path, content.replace(old, new, 1))

    def list_paths(self, prefix: str | None = None) -> list[str]:
        """Every path, sorted; only those under ``prefix`` when given."""
        with self._lock:
            paths = sorted(self._docs)
        if prefix:
            start = normalize_path(prefix)
            paths = [p for p in paths if p == start or p.startswith(start.rstrip("/") + "/")]
        return paths

    def store(self, content: str) -> str:
        """File ``content`` under a new path (``/note-<id>.md``) and return the path."""
        check_text(content, "content")
        return self.write(f"/note-{uuid.uuid4().hex}.md", content)

    def search(self, query: str, n_results: int = 10) -> list[str]:
        """Documents containing the query's words, most matching words first."""
        return [hit.text for hit in self.query(query, n_results)]

    def query(self, query: str, n_results: int = 10) -> list[Hit]:
        """Like :meth:`search`; each hit's ``source`` is its path.

        Case-insensitive. A document ranks by how many distinct query words its path or text
        contains, then by how often they occur, then by path.
        """
        check_text(query, "query")
        check_count(n_results)
        terms = {word.lower() for word in _WORDS.findall(query)} or {query.strip().lower()}
        scored = []
        with self._lock:
            documents = list(self._docs.items())
        for path, content in documents:
            haystack = f"{path}\n{content}".lower()
            counts = [haystack.count(term) for term in terms]
            matched = sum(1 for count in counts if count)
            if matched:
                scored.append((-matched, -sum(counts), path, content))
        scored.sort()
        return [Hit(content, {"source": path}, path) for *_, path, content in scored[:n_results]]

    def search_full_text(self, query: str, n_results: int = 10) -> list[dict[str, str]]:
        """Like :meth:`search`, as ``{"path", "content"}`` dicts."""
        return [{"path": hit.id, "content": hit.text} for hit in self.query(query, n_results)]

    def delete(self, identifier: str) -> int:
        """Remove the document at path ``identifier``; return 1, or 0 if there was none."""
        key = normalize_path(identifier)
        with self._lock:
            if key not in self._docs:
                return 0
            if self.persist_path is not None:
                self._file(key).unlink(missing_ok=True)
            del self._docs[key]
            return 1

    def list_all(self) -> list[str]:
        """Every path, sorted."""
        return self.list_paths()

    def __len__(self) -> int:
        with self._lock:
            return len(self._docs)

    def __repr__(self) -> str:
        return f"<DocumentStore of {len(self)} documents in {self.persist_path or 'memory'}>"

    def _file(self, key: str) -> Path:
        assert self.persist_path is not None
        return self.persist_path.joinpath(*key.lstrip("/").split("/"))

    def _load(self) -> None:
        assert self.persist_path is not None
        for file in self.persist_path.rglob("*"):
            if not file.is_file() or file.name.startswith(".aimu-tmp-"):
                continue
            try:
                content = file.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # a stray binary file must not make the store unreadable
            self._docs["/" + file.relative_to(self.persist_path).as_posix()] = content


def normalize_path(path: str) -> str:
    """The canonical form of a document path: one leading slash, ``/`` separators, no ``..``.

    ``"notes/a.md"``, ``"notes\\a.md"`` and ``"/x/../notes/a.md"`` all become ``"/notes/a.md"``.
    """
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    key = posixpath.normpath("/" + path.strip().replace("\\", "/").lstrip("/"))
    if key == "/" or "\x00" in key:
        raise ValueError(f"{path!r} is not a document path; use something like '/notes/a.md'")
    return key


def _write_atomically(file: Path, content: str) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".aimu-tmp-", dir=file.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.replace(temp, file)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
