"""A batch's checkpoint: one JSON line per finished item, appended as it finishes.

An item is known by a key made from its prompt (and how many identical prompts came before
it), so running the same batch again finds what already succeeded even if the items were
re-read from a file in the same order. Each record also carries the fingerprint of the
configuration that wrote it (:func:`configuration`: model, system message, tools, schema,
options); a record written by another configuration is not an answer for this one, so it is
ignored and its item runs again. The last record of a key wins; a line cut short by a crash
is ignored.

A batch backend (``"openai-batch"``, ``"anthropic-batch"``) also appends a line per provider
batch it submits (its id and the requests it holds), so a restarted run polls the batch it
already paid for instead of submitting the same requests again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from aimu.batch._results import OK, BatchItem
from aimu.secrets import redact

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


def configuration(template: Any, schema: Any) -> str:
    """A fingerprint of what decides an item's answer besides its prompt: the model, the
    system message, the tools (their specs), the schema and the generation options.

    Only the digest is stored, so nothing secret (a key in a model URL) reaches the file.
    """
    tools = [getattr(fn, "__tool_spec__", name) for name, fn in sorted(template.tools.items())]
    described = {
        "model": template.client.name,
        "system": template.system_message,
        "tools": tools,
        "schema": _schema_description(schema),
        "thinking": template.thinking,
        "generate_kwargs": dict(template.generate_kwargs or {}),
        "max_iterations": template.max_iterations,
        "groups": sorted(template.tool_groups.groups) if template.tool_groups else None,
    }
    text = json.dumps(described, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _schema_description(schema: Any) -> Any:
    if schema is None:
        return None
    try:
        from pydantic import TypeAdapter

        return TypeAdapter(schema).json_schema()
    except Exception:
        return f"{getattr(schema, '__module__', '')}.{getattr(schema, '__qualname__', schema)}"


class Checkpoint:
    """Reads what a previous run finished and appends what this run finishes.

    ``path`` is a ``.jsonl`` file, or a directory, which then holds ``batch.jsonl``.
    ``config`` is this run's :func:`configuration`; after :meth:`load`, ``ignored`` counts the
    records another configuration wrote, and ``batches`` maps each request a provider batch
    holds to that batch's id.
    """

    def __init__(self, path: str | os.PathLike[str], config: str = ""):
        target = Path(path)
        if target.is_dir() or str(path).endswith(os.sep):
            target.mkdir(parents=True, exist_ok=True)
            target = target / FILE_IN_DIRECTORY
        if target.exists() and not target.is_file():
            raise ValueError(f"checkpoint {str(target)!r} exists and is not a regular file")
        target.parent.mkdir(parents=True, exist_ok=True)
        self.path = target
        self.config = config
        self.ignored = 0
        self.batches: dict[str, str] = {}
        self._file: Any = None

    def load(self) -> dict[str, dict[str, Any]]:
        """The last record of each key this configuration wrote (empty when there is none)."""
        records: dict[str, dict[str, Any]] = {}
        others: set[str] = set()
        self.batches = {}
        if not self.path.exists():
            return records
        with self.path.open(encoding="utf-8") as file:
            for number, line in enumerate(file, 1):
                try:
                    record = json.loads(line)
                    if "batch" in record:
                        self._load_batch(record)
                    elif record.get("config", "") != self.config:
                        others.add(record["key"])
                    else:
                        records[str(record["key"])] = record
                except (ValueError, KeyError, TypeError, AttributeError):
                    logger.warning(
                        "ignoring line %d of checkpoint %s: not a record", number, self.path
                    )
        self.ignored = len(others - records.keys())
        if self.ignored:
            logger.warning(
                "checkpoint %s: %d records were written by another configuration (model, "
                "system message, tools, schema or options differ); their items run again",
                self.path,
                self.ignored,
            )
        return records

    def _load_batch(self, record: dict[str, Any]) -> None:
        if record.get("config", "") != self.config:
            return
        batch_id, requests = record["batch"], record["requests"]
        if not isinstance(batch_id, str) or not isinstance(requests, list):
            raise TypeError("a batch record holds an id and a list of requests")
        for custom_id in requests:
            if isinstance(custom_id, str):
                self.batches[custom_id] = batch_id

    def append(self, key: str, item: BatchItem, value: Any) -> None:
        """Write one finished item and flush it, so a crash right after keeps it."""
        self._write(
            {
                "key": key,
                "config": self.config,
                "index": item.index,
                "status": item.status,
                "answer": item.answer,
                "value": value,
                "error": redact(item.error) if item.error else item.error,
                "usage": item.usage,
                "attempts": item.attempts,
            }
        )

    def append_batch(self, backend: str, batch_id: str, requests: list[str]) -> None:
        """Write that the provider batch ``batch_id`` holds ``requests`` (their custom ids)."""
        self._write(
            {"batch": batch_id, "backend": backend, "config": self.config, "requests": requests}
        )
        self.batches.update(dict.fromkeys(requests, batch_id))

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def succeeded(record: dict[str, Any] | None) -> bool:
    return record is not None and record.get("status") == OK


def fits(record: dict[str, Any]) -> bool:
    """Whether a record's fields have the types a finished item has (a hand-edited line may
    not): ``answer`` text, ``usage`` counts, ``attempts`` a whole number."""
    usage = record.get("usage") or {}
    attempts = record.get("attempts") or 0
    answer = record.get("answer")
    return (
        (answer is None or isinstance(answer, str))
        and isinstance(usage, dict)
        and all(isinstance(k, str) and _count(v) for k, v in usage.items())
        and _count(attempts)
    )


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
