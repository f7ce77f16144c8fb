"""A batch's checkpoint: one JSON line per finished item, appended as it finishes.

An item is known by a key made from its prompt (and how many identical prompts came before
it), so running the same batch again finds what already succeeded even if the items were
re-read from a file in the same order. The last record of a key wins; a line cut short by a
crash is ignored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from aimu._secrets import redact
from aimu.batch._results import OK, BatchItem

logger = logging.getLogger("aimu.batch")

FILE_IN_DIRECTORY = "batch.jsonl"


def item_keys(prompts: list[str]) -> list[str]:
    """A stable key per prompt; the n-th repeat of a prompt gets its own key."""
    seen: dict[str, int] = {}
    keys = []
    for prompt in prompts:
        digest = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        count = seen.get(digest, 0)
        seen[digest] = count + 1
        keys.append(f"{digest}-{count}")
    return keys


class Checkpoint:
    """Reads what a previous run finished and appends what this run finishes.

    ``path`` is a ``.jsonl`` file, or a directory, which then holds ``batch.jsonl``.
    """

    def __init__(self, path: str | os.PathLike[str]):
        target = Path(path)
        if target.is_dir() or str(path).endswith(os.sep):
            target.mkdir(parents=True, exist_ok=True)
            target = target / FILE_IN_DIRECTORY
        if target.exists() and not target.is_file():
            raise ValueError(f"checkpoint {str(target)!r} exists and is not a regular file")
        target.parent.mkdir(parents=True, exist_ok=True)
        self.path = target
        self._file: Any = None

    def load(self) -> dict[str, dict[str, Any]]:
        """The last record of each key found in the file (empty when there is none)."""
        records: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return records
        with self.path.open(encoding="utf-8") as file:
            for number, line in enumerate(file, 1):
                try:
                    record = json.loads(line)
                    records[record["key"]] = record
                except (ValueError, KeyError, TypeError):
                    logger.warning(
                        "ignoring line %d of checkpoint %s: not a record", number, self.path
                    )
        return records

    def append(self, key: str, item: BatchItem, value: Any) -> None:
        """Write one finished item and flush it, so a crash right after keeps it; an error's
        text is written with its secrets hidden."""
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        record = {
            "key": key,
            "index": item.index,
            "status": item.status,
            "answer": item.answer,
            "value": value,
            "error": redact(item.error) if item.error else item.error,
            "usage": item.usage,
            "attempts": item.attempts,
        }
        self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def succeeded(record: dict[str, Any] | None) -> bool:
    return record is not None and record.get("status") == OK
