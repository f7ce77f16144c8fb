"""``DocumentStore``: whole text documents keyed by path, in memory or as files on disk.

Paths look like ``"/notes/preferences.md"``; ``"notes/preferences.md"`` names the same
document, and ``..`` cannot climb out of the store. A persistent store keeps one UTF-8 file
per document under ``persist_path``, written atomically, and reads the folder as it is now
on every call: files added, changed or deleted by anyone else are seen at once. A file that
is not UTF-8 text is left out with an :class:`UnreadableDocumentWarning` naming it.
"""

from __future__ import annotations

import os
import posixpath
import re
import tempfile
import threading
import uuid
import warnings
from pathlib import Path

from aimu._checks import whole_number
from aimu.memory.base import Hit, MemoryStore, check_text

_WORDS = re.compile(r"\w+")
_TEMP_PREFIX = ".aimu-tmp-"


class UnreadableDocumentWarning(UserWarning):
    """A file in a persistent :class:`DocumentStore` could not be read as UTF-8 text, so
    searches and listings leave it out; the message names the file and the reason."""


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
        self._docs: dict[str, str] | _Folder = {}
        self._lock = threading.RLock()
        if self.persist_path is not None:
            self.persist_path.mkdir(parents=True, exist_ok=True)
            self._docs = _Folder(self.persist_path)

    def write(self, path: str, content: str) -> str:
        """Create or replace the document at ``path``; return its normalised path."""
        if not isinstance(content, str):
            raise TypeError(f"content must be a str, not {type(content).__name__}")
        key = normalize_path(path)
        with self._lock:
            self._docs[key] = content
        return key

    def read(self, path: str) -> str:
        """The document at ``path``; ``KeyError`` if there is none, ``ValueError`` if its
        file is not UTF-8 text."""
        key = normalize_path(path)
        with self._lock:
            try:
                return self._docs[key]
            except KeyError:
                raise KeyError(f"no document at {key!r}") from None

    def edit(self, path: str, old_str: str, new_str: str) -> None:
        """Replace the one occurrence of ``old_str`` in the document at ``path``.

        ``ValueError`` if ``old_str`` does not occur, or occurs more than once (the message
        gives the count): include more of the surrounding text to say which one is meant.
        """
        for label, value in (("old_str", old_str), ("new_str", new_str)):
            if not isinstance(value, str):
                raise TypeError(f"{label} must be a str, not {type(value).__name__}")
        if not old_str:
            raise ValueError("old_str must not be empty")
        key = normalize_path(path)
        with self._lock:
            content = self.read(key)
            count = content.count(old_str)
            if count == 0:
                raise ValueError(f"{old_str!r} does not occur in {key!r}")
            if count > 1:
                raise ValueError(
                    f"{old_str!r} occurs {count} times in {key!r}; include more of the "
                    "surrounding text so that it occurs exactly once"
                )
            self.write(key, content.replace(old_str, new_str, 1))

    def list_paths(self, prefix: str | None = None) -> list[str]:
        """Every path, sorted; only those under ``prefix`` when given."""
        with self._lock:
            paths = sorted(self._documents())
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
        whole_number(n_results, "n_results")
        terms = {word.lower() for word in _WORDS.findall(query)} or {query.strip().lower()}
        scored = []
        with self._lock:
            documents = self._documents()
        for path, content in documents.items():
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
            del self._docs[key]
            return 1

    def list_all(self) -> list[str]:
        """Every path, sorted."""
        return self.list_paths()

    def __len__(self) -> int:
        with self._lock:
            return len(self._documents())

    def __repr__(self) -> str:
        return f"<DocumentStore of {len(self)} documents in {self.persist_path or 'memory'}>"

    def _documents(self) -> dict[str, str]:
        docs = self._docs
        return docs.documents() if isinstance(docs, _Folder) else dict(docs)


class _Folder:
    """A folder of UTF-8 files seen as a ``{path: text}`` mapping, read as it is now.

    Texts are cached by each file's size, times and inode, so an unchanged file is not read
    again; anything else (a new file, an edit, a deletion) shows on the next call.
    """

    def __init__(self, root: Path):
        self.root = root
        self._cache: dict[str, tuple[tuple[int, ...], str]] = {}

    def __getitem__(self, key: str) -> str:
        file = self._file(key)
        try:
            return self._text(key, file, file.stat())
        except FileNotFoundError:
            raise KeyError(key) from None
        except (UnicodeDecodeError, OSError) as exc:
            if isinstance(exc, OSError) and not file.is_file():
                raise KeyError(key) from None
            raise ValueError(
                f"the file of {key!r} ({file}) cannot be read as text: {exc}"
            ) from None

    def __setitem__(self, key: str, content: str) -> None:
        _write_atomically(self._file(key), content)

    def __delitem__(self, key: str) -> None:
        self._file(key).unlink(missing_ok=True)
        self._cache.pop(key, None)

    def __contains__(self, key: str) -> bool:
        return self._file(key).is_file()

    def documents(self) -> dict[str, str]:
        """Every readable document now on disk; unreadable files are warned about."""
        found: dict[str, str] = {}
        for directory, _dirs, names in os.walk(self.root):
            for name in names:
                if name.startswith(_TEMP_PREFIX):
                    continue
                file = Path(directory, name)
                key = "/" + file.relative_to(self.root).as_posix()
                try:
                    stat = file.stat()
                    if not file.is_file():
                        continue
                    found[key] = self._text(key, file, stat)
                except FileNotFoundError:
                    continue  # deleted while we looked
                except (UnicodeDecodeError, OSError) as exc:
                    warnings.warn(
                        f"DocumentStore: {file} is left out, it cannot be read as UTF-8 text "
                        f"({type(exc).__name__}: {exc})",
                        UnreadableDocumentWarning,
                        stacklevel=2,
                    )
        for stale in self._cache.keys() - found.keys():
            del self._cache[stale]
        return found

    def _text(self, key: str, file: Path, stat: os.stat_result) -> str:
        signature = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
        cached = self._cache.get(key)
        if cached is not None and cached[0] == signature:
            return cached[1]
        text = file.read_text(encoding="utf-8")
        self._cache[key] = (signature, text)
        return text

    def _file(self, key: str) -> Path:
        return self.root.joinpath(*key.lstrip("/").split("/"))


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
    fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=file.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.replace(temp, file)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
