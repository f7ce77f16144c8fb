"""A response cache any model client can use: an identical request is answered from a store.

    client = aimu.client("openai:gpt-4o-mini", cache="answers.sqlite")   # or cache=True
    AIMU_CACHE=answers.sqlite python report.py                           # every client

A request is fingerprinted from what decides its answer — the client's
:meth:`~aimu.models.base.ModelClient.identity` (provider, model, server, standing options;
never a credential), the messages, the tool specs and the turn's
:class:`~aimu.models.base.GenerationOptions` — as canonical JSON (sorted keys) hashed with
SHA-256. Only that hash, the model's name and the answer's events are stored: a hit streams
the same pieces again, with no call, and its :class:`~aimu.models.base.TurnEnd` says
``replayed`` (with the original date). Only whole turns are stored; a turn that failed or
was interrupted is not.

The store is one SQLite file in WAL mode, safe for many processes writing at once; it is
created readable by its owner only (it holds answers to prompts). A file that is not a
readable database is moved aside with one warning and a fresh one is started; the run never
fails because of the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aimu.models.base import (
    GenerationOptions,
    ModelClient,
    ModelEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    TurnEnd,
    Usage,
)

#: Names the store's file when ``cache=True`` (else the per-user default location).
ENV_VARIABLE = "AIMU_CACHE"
#: Marks a SQLite file as this cache (``PRAGMA application_id``: "aimu").
_APPLICATION_ID = 0x61696D75
_SCHEMA_VERSION = 1
#: How long a writer waits for another one before giving up on storing an answer.
_BUSY_SECONDS = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    events TEXT NOT NULL,
    digest TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    created REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0,
    last_hit REAL
);
CREATE INDEX IF NOT EXISTS answers_created ON answers (created);
CREATE INDEX IF NOT EXISTS answers_model ON answers (model);
"""


#: A stored answer's model as :attr:`ModelClient.name` spells it: ``provider:model``.
_LABEL = "CASE model WHEN '' THEN provider ELSE provider || ':' || model END"


class CacheWarning(UserWarning):
    """The response cache could not be used as is; the run goes on (the message says why)."""


def default_path() -> Path:
    """Where ``cache=True`` keeps answers: ``$AIMU_CACHE``, else the per-user cache folder
    (``$XDG_CACHE_HOME/aimu/responses.sqlite``, ``~/.cache`` by default)."""
    named = os.environ.get(ENV_VARIABLE, "").strip()
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache"
    return Path(base) / "aimu" / "responses.sqlite"


@dataclass(frozen=True)
class Stored:
    """One stored answer: its events and when it was first given."""

    events: list[ModelEvent]
    created: float

    @property
    def answered(self) -> str:
        """The original date, ISO 8601 in UTC, to the second."""
        moment = datetime.datetime.fromtimestamp(self.created, datetime.UTC)
        return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class CacheStats:
    """What a store holds: answers, their file size, the hits they served."""

    path: Path
    entries: int
    bytes: int
    hits: int
    models: dict[str, int]
    oldest: float | None
    newest: float | None


class ResponseCache:
    """The SQLite store of answers at ``path`` (created on first use, mode 0600).

    Safe to share between threads, event loops and processes; pickles as its path (a Ray
    worker opens the same file). Every method returns normally when the store is unusable
    (after one :class:`CacheWarning`): a lookup misses, a write is dropped.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path).expanduser() if path is not None else default_path()
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = 0
        self._broken = False

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])

    def __repr__(self) -> str:
        return f"<ResponseCache {self.path}>"

    # -- answers ---------------------------------------------------------------------------

    def get(self, key: str) -> Stored | None:
        """The answer stored under ``key``, counting the hit; ``None`` when there is none
        (or it does not read back exactly as written: such a row is dropped)."""
        with self._use() as db:
            if db is None:
                return None
            row = db.execute(
                "SELECT events, digest, created FROM answers WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            events = _decode(row[0], row[1])
            if events is None:
                db.execute("DELETE FROM answers WHERE key = ?", (key,))
                return None
            db.execute(
                "UPDATE answers SET hits = hits + 1, last_hit = ? WHERE key = ?",
                (time.time(), key),
            )
            return Stored(events, row[2])

    def put(self, key: str, provider: str, model: str, events: list[ModelEvent]) -> None:
        """Store a whole turn's events under ``key`` (replacing what was there)."""
        text = json.dumps([_encode(event) for event in events], ensure_ascii=False)
        usage = next((e.usage for e in events if isinstance(e, TurnEnd)), Usage())
        with self._use() as db:
            if db is None:
                return
            db.execute(
                "INSERT OR REPLACE INTO answers (key, provider, model, events, digest, "
                "input_tokens, output_tokens, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, provider, model, text, _digest(text), usage.input_tokens,
                 usage.output_tokens, time.time()),
            )  # fmt: skip

    # -- housekeeping ------------------------------------------------------------------------

    def stats(self) -> CacheStats:
        """How many answers, how big the file, how many hits, per model."""
        entries = hits = 0
        models: dict[str, int] = {}
        oldest = newest = None
        with self._use() as db:
            if db is not None:
                entries, hits, oldest, newest = db.execute(
                    "SELECT COUNT(*), COALESCE(SUM(hits), 0), MIN(created), MAX(created) "
                    "FROM answers"
                ).fetchone()
                models = dict(
                    db.execute(
                        f"SELECT {_LABEL}, COUNT(*) FROM answers GROUP BY provider, model "
                        "ORDER BY 2 DESC"
                    ).fetchall()
                )
        size = sum(_size(Path(f"{self.path}{suffix}")) for suffix in ("", "-wal"))
        return CacheStats(self.path, entries, size, hits, models, oldest, newest)

    def clear(self, *, before: float | None = None, model: str | None = None) -> int:
        """Delete answers first given before ``before`` (a Unix time) and/or of ``model``
        (``"provider:model"`` or just the model's id); with neither, all. Returns how many."""
        clauses, values = [], []
        if before is not None:
            clauses.append("created < ?")
            values.append(before)
        if model is not None:
            clauses.append(f"({_LABEL} = ? OR model = ?)")
            values += [model, model]
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        removed = 0
        with self._use() as db:
            if db is None:
                return 0
            removed = db.execute(f"DELETE FROM answers{where}", values).rowcount
        if removed:
            with self._use() as db:
                if db is not None:
                    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return removed

    def close(self) -> None:
        """Close this process's connection (reopened on next use)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # -- the connection ----------------------------------------------------------------------

    @contextlib.contextmanager
    def _use(self) -> Iterator[sqlite3.Connection | None]:
        """The open connection, under the lock; ``None`` once the store is unusable. A
        database error sets a broken file aside and the next use starts a fresh one."""
        with self._lock:
            if self._broken:
                yield None
                return
            try:
                db = self._open()
            except sqlite3.DatabaseError as exc:
                db = self._open_or_none() if self._handle(exc) else None
            except OSError as exc:
                self._give_up(f"cannot be created ({exc})")
                db = None
            if db is None:
                yield None
                return
            try:
                yield db
            except sqlite3.DatabaseError as exc:
                self._handle(exc)

    def _handle(self, error: sqlite3.DatabaseError) -> bool:
        """Deal with a database error; whether a fresh file was started in place of a
        broken one. Another writer holding the file past the wait only skips this use."""
        text = str(error).lower()
        if isinstance(error, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return False
        if isinstance(error, sqlite3.OperationalError) and (
            "unable to open" in text or "readonly" in text or "permission" in text
        ):
            self._give_up(f"cannot be opened for writing ({error})")
            return False
        self._recover(error)
        return not self._broken

    def _open_or_none(self) -> sqlite3.Connection | None:
        try:
            return self._open()
        except (sqlite3.DatabaseError, OSError) as exc:
            self._give_up(f"cannot be used ({exc})")
            return None

    def _open(self) -> sqlite3.Connection:
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        self._connection = None  # a forked child opens its own
        _create_private(self.path)
        db = sqlite3.connect(
            self.path, timeout=_BUSY_SECONDS, isolation_level=None, check_same_thread=False
        )  # the timeout is SQLite's busy wait for another writer
        try:
            _prepare(db, self.path)
        except BaseException:
            db.close()
            raise
        self._connection, self._pid = db, os.getpid()
        return db

    def _recover(self, error: sqlite3.DatabaseError) -> None:
        """Move an unreadable file aside (with its WAL files) so a fresh one can start."""
        if isinstance(error, _NotACache):
            self._give_up(str(error))
            return
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
            self._connection = None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.broken-{stamp}")
        try:
            self.path.replace(aside)
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{self.path}{suffix}").replace(f"{aside}{suffix}")
        except OSError as exc:
            self._give_up(f"is not a readable database ({error}) and cannot be moved ({exc})")
            return
        _warn(
            f"the response cache {self.path} was not a readable database ({error}); it was "
            f"moved to {aside.name} and a new one started"
        )

    def _give_up(self, reason: str) -> None:
        self._broken = True
        _warn(f"the response cache {self.path} {reason}; answers are not cached in this run")


class _NotACache(sqlite3.DatabaseError):
    """A readable SQLite file that belongs to something else: left alone."""


def _create_private(path: Path) -> None:
    """Create the file (and a missing folder) readable by its owner only; SQLite gives its
    WAL and shared-memory files the same mode."""
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def _prepare(db: sqlite3.Connection, path: Path) -> None:
    """WAL mode, and the table on a new file (one writer at a time: many processes may
    start on the same new file); refuse a database that is not a cache."""
    if not _marked(db):
        db.execute("BEGIN IMMEDIATE")
        try:
            if not _marked(db):
                if db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
                    raise _NotACache(
                        "is a SQLite database of something else; it was left as it is (name "
                        f"another file with cache= or ${ENV_VARIABLE})"
                    )
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    db.execute(statement)
                db.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
                db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    with contextlib.suppress(OSError):
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)


def _marked(db: sqlite3.Connection) -> bool:
    """Whether the file is marked as this cache (it has the table, then)."""
    return db.execute("PRAGMA application_id").fetchone()[0] == _APPLICATION_ID


_warned: set[str] = set()


def _warn(text: str) -> None:
    if text not in _warned:
        _warned.add(text)
        warnings.warn(text, CacheWarning, stacklevel=5)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# -- events as stored JSON -------------------------------------------------------------------


def _encode(event: ModelEvent) -> list[Any]:
    if isinstance(event, TextDelta):
        return ["text", event.text]
    if isinstance(event, ThinkingDelta):
        return ["thinking", event.text]
    if isinstance(event, ToolCallRequest):
        return ["tool_call", event.id, event.name, event.arguments, event.raw_arguments,
                event.error]  # fmt: skip
    return ["end", event.usage.input_tokens, event.usage.output_tokens, event.stop_reason]


def _decode(text: str, digest: str) -> list[ModelEvent] | None:
    """The stored events, or ``None`` when the row is not exactly what was written."""
    if _digest(text) != digest:
        return None
    try:
        events: list[ModelEvent] = []
        for kind, *fields in json.loads(text):
            if kind == "text":
                events.append(TextDelta(*fields))
            elif kind == "thinking":
                events.append(ThinkingDelta(*fields))
            elif kind == "tool_call":
                events.append(ToolCallRequest(*fields))
            elif kind == "end":
                events.append(TurnEnd(Usage(fields[0], fields[1]), fields[2]))
            else:
                return None
    except (ValueError, TypeError, IndexError):
        return None
    return events if events and isinstance(events[-1], TurnEnd) else None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -- fingerprints ----------------------------------------------------------------------------


def fingerprint(
    identity: dict[str, Any],
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    options: GenerationOptions | None,
) -> str:
    """The SHA-256 of everything that decides an answer, as canonical JSON."""
    given = options or GenerationOptions()
    request = {
        "client": identity,
        "messages": messages,
        "tools": tools or [],
        "thinking": given.thinking,
        "generate": dict(given.generate_kwargs),
        "schema": given.response_format,
    }
    text = json.dumps(
        request, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_canonical
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return f"<{type(value).__module__}.{type(value).__qualname__}: {value}>"


# -- the wrapper -------------------------------------------------------------------------------


class CachedClient(ModelClient):
    """``client`` with its answers kept in ``store`` and replayed for identical requests.

    ``refresh=True`` asks the model every time and keeps the new answer in place of the
    stored one (a notebook's ``%%agent --fresh``). Clones share the store.
    """

    def __init__(self, client: ModelClient, store: ResponseCache, *, refresh: bool = False):
        if isinstance(client, CachedClient):
            client = client.inner
        self.inner = client
        self.store = store
        self.refresh = refresh
        self.provider = client.provider
        self.model = client.model
        self._identity = client.identity()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def sees_images(self) -> bool:
        return self.inner.sees_images

    @property
    def default_generate_kwargs(self) -> dict[str, Any]:
        return self.inner.default_generate_kwargs

    @default_generate_kwargs.setter
    def default_generate_kwargs(self, value: Mapping[str, Any] | None) -> None:
        self.inner.default_generate_kwargs = value
        self._identity = self.inner.identity()  # other defaults, other answers

    def identity(self) -> dict[str, Any]:
        return self._identity

    def clone(self) -> CachedClient:
        return CachedClient(self.inner.clone(), self.store, refresh=self.refresh)

    def __repr__(self) -> str:
        return f"<CachedClient {self.name} in {self.store.path}>"

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> AsyncIterator[ModelEvent]:
        key = fingerprint(self._identity, messages, tools, options)
        stored = None if self.refresh else await asyncio.to_thread(self.store.get, key)
        if stored is not None:
            for event in stored.events:
                if isinstance(event, TurnEnd):
                    event = TurnEnd(event.usage, event.stop_reason, stored.answered)
                yield event
            return
        turn = (
            self.inner.stream(messages, tools)
            if options is None
            else self.inner.stream(messages, tools, options)
        )
        kept: list[ModelEvent] = []
        end: TurnEnd | None = None
        closing = contextlib.aclosing if hasattr(turn, "aclose") else contextlib.nullcontext
        async with closing(turn) as events:
            async for event in events:
                if isinstance(event, TurnEnd):
                    end = event
                    continue
                kept.append(event)
                yield event
        if end is None:
            return  # not a whole turn: nothing to keep
        kept.append(end)
        await asyncio.to_thread(self.store.put, key, self.provider, self.model, kept)
        yield end


def resolve(cache: Any) -> ResponseCache | None:
    """The store a ``cache=`` argument names: a path, ``True`` (``$AIMU_CACHE``, else the
    per-user default), a :class:`ResponseCache`, ``False`` (none), or ``None`` — a store
    only when ``$AIMU_CACHE`` names one."""
    if cache is None:
        return ResponseCache() if os.environ.get(ENV_VARIABLE, "").strip() else None
    if cache is False:
        return None
    if cache is True:
        return ResponseCache()
    if isinstance(cache, ResponseCache):
        return cache
    if isinstance(cache, str | os.PathLike) and str(cache).strip():
        return ResponseCache(cache)
    raise TypeError(f"cache must be a file path, True, False or a ResponseCache, not {cache!r}")


def cached(client: ModelClient, cache: Any, *, refresh: bool = False) -> ModelClient:
    """``client`` answering from the store ``cache`` names (see :func:`resolve`), or
    ``client`` itself when it names none."""
    store = resolve(cache)
    if store is None:
        return client.inner if isinstance(client, CachedClient) and cache is False else client
    return CachedClient(client, store, refresh=refresh)
