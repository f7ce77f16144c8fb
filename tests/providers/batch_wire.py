"""Loopback fakes of the providers' batch APIs, speaking their real wire shapes.

:class:`OpenAIBatchFake` serves ``/v1/files`` (multipart upload, purpose ``batch``; content
download), ``/v1/batches`` (create, retrieve, cancel) with output and error files of one
JSON line per request; :class:`AnthropicBatchFake` serves ``/v1/messages/batches`` (create,
retrieve, cancel, JSONL results at the batch's ``results_url``). Both are driven by the
official SDKs in the tests.

A batch finishes its requests evenly over ``latency`` seconds of the fake's clock
(:class:`Clock`, which may run faster than real time: ``speed=60`` makes a simulated minute
last a second), so a poll midway sees some done; it expires at ``expires_after`` if that
comes first (the finished requests kept, the rest expired; ``expires_after`` applies to the
next batch created only, as a provider's bad day would); a cancelled one ends with what
finished by then. ``brain(body)`` answers each request: a text, or a list of tool calls
``[(name, arguments)]``. ``fail`` maps a prompt to how many times its requests fail.
``creations`` counts the batches created, ``requests`` every HTTP request.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from provider_wire import Reply, Request, WireServer, json_error

Brain = Callable[[dict[str, Any]], "str | list[tuple[str, dict[str, Any]]]"]


class Clock:
    """Seconds since the fake started, running ``speed`` times faster than real time (``0``:
    frozen); :meth:`advance` jumps ahead."""

    def __init__(self, speed: float = 1.0):
        self.speed = speed
        self.offset = 0.0
        self._start = time.monotonic()

    def now(self) -> float:
        return (time.monotonic() - self._start) * self.speed + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message of a Chat Completions or Messages request."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or () if b.get("type") == "text"]
        if texts:
            return "".join(texts)
    return ""


def tool_result(body: dict[str, Any]) -> str | None:
    """The content of the request's last tool result, if its last message is one."""
    last = (body.get("messages") or [{}])[-1]
    if last.get("role") == "tool":
        return last.get("content")
    blocks = last.get("content") if last.get("role") == "user" else None
    if isinstance(blocks, list):
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if results:
            content = results[-1].get("content")
            if isinstance(content, list):
                return "".join(b.get("text", "") for b in content if b.get("type") == "text")
            return content
    return None


def label_brain(body: dict[str, Any]) -> str:
    """``urgent: …`` for prompts that mention "down" or "broken", else ``routine: …``."""
    prompt = last_user_text(body)
    label = "urgent" if ("down" in prompt or "broken" in prompt) else "routine"
    return f"{label}: {prompt.rsplit(' ', 1)[-1]}"


@dataclass
class FakeBatch:
    id: str
    created: float
    requests: list[dict[str, Any]]
    expires_at: float | None = None
    cancelled_at: float | None = None
    outcomes: dict[str, Any] = field(default_factory=dict)


class BatchFake:
    """What both fakes share: the clock, the batches, the answers and the failures."""

    def __init__(
        self,
        brain: Brain = label_brain,
        *,
        latency: float = 0.3,
        expires_after: float | None = None,
        clock: Clock | None = None,
        usage: tuple[int, int] = (10, 3),
    ):
        self.brain = brain
        self.latency = latency
        self.expires_after = expires_after
        self.clock = clock or Clock()
        self.usage = usage
        self.fail: dict[str, int] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.files: dict[str, bytes] = {}
        self.creations = 0
        self.polls = 0
        self.cancels = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.wire = WireServer(default=self._route)

    @property
    def requests(self) -> list[Request]:
        return self.wire.requests

    def close(self) -> None:
        self.wire.close()

    def _route(self, request: Request) -> Reply:
        with self._lock:
            return self.route(request)

    def route(self, request: Request) -> Reply:  # pragma: no cover - each fake has its own
        raise NotImplementedError

    def _finished(self, batch: FakeBatch) -> tuple[int, str]:
        """How many requests are finished now, and the batch's state."""
        now = self.clock.now()
        end = batch.created + self.latency
        stop = min(t for t in (end, batch.cancelled_at, self._expiry(batch)) if t is not None)
        elapsed = min(now, stop) - batch.created
        count = len(batch.requests)
        done = count if self.latency <= 0 else min(count, int(count * elapsed / self.latency))
        if now >= end and stop == end:
            return count, "ended"
        if batch.cancelled_at is not None and now >= batch.cancelled_at:
            return done, "cancelled"
        expiry = self._expiry(batch)
        if expiry is not None and now >= expiry:
            return done, "expired"
        return done, "running"

    def _expiry(self, batch: FakeBatch) -> float | None:
        return batch.expires_at

    def _batch(self, prefix: str, requests: list[dict[str, Any]]) -> FakeBatch:
        """A new batch, created now; the next expiry set applies to it."""
        self.creations += 1
        batch = FakeBatch(self._new_id(prefix), self.clock.now(), requests)
        if self.expires_after is not None:
            batch.expires_at = batch.created + self.expires_after
            self.expires_after = None
        self.batches[batch.id] = batch
        return batch

    def _outcome(self, batch: FakeBatch, position: int, body: dict[str, Any]) -> Any:
        """The request's answer, decided once: a response, or ``"failed"``."""
        custom_id = batch.requests[position]["custom_id"]
        if custom_id not in batch.outcomes:
            prompt = last_user_text(body)
            if self.fail.get(prompt, 0) > 0:
                self.fail[prompt] -= 1
                batch.outcomes[custom_id] = "failed"
            else:
                batch.outcomes[custom_id] = self.brain(body)
        return batch.outcomes[custom_id]

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):04d}"


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(1_760_000_000 + seconds, UTC).isoformat().replace("+00:00", "Z")


def _json(body: Any, status: int = 200) -> Reply:
    return Reply(status, [json.dumps(body).encode()], streamed=False)


def _not_found(what: str) -> Reply:
    return json_error(
        404, {"error": {"message": f"No such {what}", "type": "invalid_request_error"}}
    )


# -- OpenAI -------------------------------------------------------------------------------


class OpenAIBatchFake(BatchFake):
    """The OpenAI Files + Batch API on loopback; ``url`` is the SDK's ``base_url``."""

    @property
    def url(self) -> str:
        return self.wire.url + "/v1"

    def route(self, request: Request) -> Reply:
        path = request.path.split("?")[0]
        parts = path.strip("/").split("/")
        if request.method == "POST" and path == "/v1/files":
            return self._upload(request)
        if request.method == "GET" and len(parts) == 4 and parts[1] == "files":
            data = self.files.get(parts[2])
            if data is None:
                return _not_found("file")
            return Reply(200, [data], content_type="application/octet-stream", streamed=False)
        if request.method == "POST" and path == "/v1/batches":
            return self._create(request.json or {})
        if len(parts) >= 3 and parts[1] == "batches":
            batch = self.batches.get(parts[2])
            if batch is None:
                return _not_found("batch")
            if request.method == "POST" and parts[3:] == ["cancel"]:
                self.cancels += 1
                batch.cancelled_at = self.clock.now()
                return _json(self._object(batch, cancelling=True))
            if request.method == "GET" and len(parts) == 3:
                self.polls += 1
                return _json(self._object(batch))
        return _not_found(f"route {request.method} {path}")

    def _upload(self, request: Request) -> Reply:
        fields = _multipart(request)
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return json_error(400, {"error": {"message": "purpose must be 'batch' with a file"}})
        lines = [json.loads(line) for line in fields["file"].decode().splitlines() if line]
        for line in lines:
            if set(line) != {"custom_id", "method", "url", "body"} or line["method"] != "POST":
                return json_error(400, {"error": {"message": f"bad batch line: {line}"}})
        file_id = self._new_id("file-")
        self.files[file_id] = fields["file"]
        return _json({"id": file_id, "object": "file", "bytes": len(fields["file"]),
                      "created_at": 1_760_000_000, "filename": "input.jsonl",
                      "purpose": "batch", "status": "processed"})  # fmt: skip

    def _create(self, body: dict[str, Any]) -> Reply:
        data = self.files.get(body.get("input_file_id", ""))
        if data is None:
            return _not_found("file")
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return json_error(400, {"error": {"message": "unsupported endpoint or window"}})
        lines = [json.loads(line) for line in data.decode().splitlines() if line]
        batch = self._batch("batch_", lines)
        batch.input_file_id = body["input_file_id"]  # type: ignore[attr-defined]
        return _json(self._object(batch))

    def _object(self, batch: FakeBatch, cancelling: bool = False) -> dict[str, Any]:
        done, state = self._finished(batch)
        status = {"running": "in_progress", "ended": "completed", "expired": "expired",
                  "cancelled": "cancelled"}[state]  # fmt: skip
        if cancelling and state == "running":
            status = "cancelling"
        output = errors = None
        completed, failed = done, 0
        if state != "running" and not cancelling:
            output, errors, completed, failed = self._files(batch, done, state)
        total = len(batch.requests)
        return {
            "id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions",
            "errors": None, "input_file_id": batch.input_file_id,  # type: ignore[attr-defined]
            "completion_window": "24h", "status": status, "output_file_id": output,
            "error_file_id": errors, "created_at": 1_760_000_000, "in_progress_at": None,
            "expires_at": None, "finalizing_at": None, "completed_at": None,
            "failed_at": None, "expired_at": None, "cancelling_at": None, "cancelled_at": None,
            "request_counts": {"total": total, "completed": completed, "failed": failed},
            "metadata": {},
        }  # fmt: skip

    def _files(self, batch: FakeBatch, done: int, state: str) -> tuple[Any, Any, int, int]:
        """The output and error files of an ended batch (written once), and their counts."""
        key = f"{batch.id}-files"
        if key not in self.files:
            ok_lines, error_lines = [], []
            for position, line in enumerate(batch.requests):
                entry = {"id": f"batch_req_{position}", "custom_id": line["custom_id"]}
                if position >= done:
                    code = "batch_cancelled" if state == "cancelled" else "batch_expired"
                    error_lines.append(
                        {
                            **entry,
                            "response": None,
                            "error": {"code": code, "message": f"request {code}"},
                        }
                    )
                    continue
                answer = self._outcome(batch, position, line["body"])
                if answer == "failed":
                    error_lines.append(
                        {
                            **entry,
                            "error": None,
                            "response": {
                                "status_code": 500,
                                "request_id": f"req_{position}",
                                "body": {
                                    "error": {
                                        "message": "the model crashed",
                                        "type": "server_error",
                                    }
                                },
                            },
                        }
                    )
                    continue
                ok_lines.append({**entry, "error": None, "response": {
                    "status_code": 200, "request_id": f"req_{position}",
                    "body": self._completion(line["body"], answer)}})  # fmt: skip
            output = self._store(ok_lines)
            errors = self._store(error_lines)
            counts = [output, errors, len(ok_lines), len(error_lines)]
            self.files[key] = json.dumps(counts).encode()
        output, errors, completed, failed = json.loads(self.files[key])
        return output, errors, completed, failed

    def _store(self, lines: list[dict[str, Any]]) -> str | None:
        if not lines:
            return None
        file_id = self._new_id("file-")
        self.files[file_id] = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return file_id

    def _completion(self, body: dict[str, Any], answer: Any) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        if isinstance(answer, str):
            message["content"] = answer
            finish = "stop"
        else:
            message["tool_calls"] = [
                {"id": f"call_{index}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(arguments)}}
                for index, (name, arguments) in enumerate(answer)
            ]  # fmt: skip
            finish = "tool_calls"
        prompt_tokens, completion_tokens = self.usage
        return {
            "id": "chatcmpl-batch", "object": "chat.completion", "created": 1_760_000_000,
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish,
                         "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }  # fmt: skip


def _multipart(request: Request) -> dict[str, bytes]:
    """The fields of a multipart/form-data body, by name."""
    head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + request.body)
    fields = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        fields[name] = part.get_payload(decode=True)
    return fields


# -- Anthropic ----------------------------------------------------------------------------


class AnthropicBatchFake(BatchFake):
    """Anthropic's Message Batches API on loopback; ``url`` is the SDK's ``base_url``."""

    @property
    def url(self) -> str:
        return self.wire.url

    def route(self, request: Request) -> Reply:
        path = request.path.split("?")[0]
        parts = path.strip("/").split("/")
        if request.method == "POST" and path == "/v1/messages/batches":
            return self._create(request.json or {})
        if len(parts) >= 4 and parts[:3] == ["v1", "messages", "batches"]:
            batch = self.batches.get(parts[3])
            if batch is None:
                return json_error(404, {"type": "error", "error": {
                    "type": "not_found_error", "message": "batch not found"}})  # fmt: skip
            rest = parts[4:]
            if request.method == "POST" and rest == ["cancel"]:
                self.cancels += 1
                batch.cancelled_at = self.clock.now()
                return _json(self._object(batch, cancelling=True))
            if request.method == "GET" and not rest:
                self.polls += 1
                return _json(self._object(batch))
            if request.method == "GET" and rest == ["results"]:
                return self._results(batch)
        return json_error(404, {"type": "error", "error": {"type": "not_found_error",
                                                           "message": path}})  # fmt: skip

    def _create(self, body: dict[str, Any]) -> Reply:
        requests = body.get("requests")
        if (
            not isinstance(requests, list)
            or not requests
            or not all(
                set(r) == {"custom_id", "params"} and "max_tokens" in r["params"] for r in requests
            )
        ):
            return json_error(400, {"type": "error", "error": {
                "type": "invalid_request_error", "message": "bad requests"}})  # fmt: skip
        batch = self._batch("msgbatch_", requests)
        return _json(self._object(batch))

    def _object(self, batch: FakeBatch, cancelling: bool = False) -> dict[str, Any]:
        done, state = self._finished(batch)
        status = "in_progress" if state == "running" else "ended"
        if cancelling and state == "running":
            status = "canceling"
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for position, entry in enumerate(batch.requests):
            if position >= done:
                key = {"running": "processing", "cancelled": "canceled",
                       "expired": "expired"}.get(state, "processing")  # fmt: skip
                counts[key] += 1
            elif self._outcome(batch, position, entry["params"]) == "failed":
                counts["errored"] += 1
            else:
                counts["succeeded"] += 1
        ended = status == "ended"
        return {
            "id": batch.id, "type": "message_batch", "processing_status": status,
            "request_counts": counts, "created_at": _iso(batch.created),
            "expires_at": _iso(batch.created + 86400), "archived_at": None,
            "cancel_initiated_at": _iso(batch.cancelled_at) if batch.cancelled_at else None,
            "ended_at": _iso(self.clock.now()) if ended else None,
            "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }  # fmt: skip

    def _results(self, batch: FakeBatch) -> Reply:
        done, state = self._finished(batch)
        if state == "running":
            return json_error(400, {"type": "error", "error": {
                "type": "invalid_request_error", "message": "batch still processing"}})  # fmt: skip
        lines = []
        for position, entry in enumerate(batch.requests):
            custom_id = entry["custom_id"]
            if position >= done:
                kind = "canceled" if state == "cancelled" else "expired"
                lines.append({"custom_id": custom_id, "result": {"type": kind}})
                continue
            answer = self._outcome(batch, position, entry["params"])
            if answer == "failed":
                lines.append({"custom_id": custom_id, "result": {"type": "errored", "error": {
                    "type": "error", "error": {"type": "api_error",
                                               "message": "the model crashed"}}}})  # fmt: skip
                continue
            lines.append(
                {
                    "custom_id": custom_id,
                    "result": {
                        "type": "succeeded",
                        "message": self._message(entry["params"], answer),
                    },
                }
            )
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return Reply(200, [data], content_type="application/binary", streamed=False)

    def _message(self, params: dict[str, Any], answer: Any) -> dict[str, Any]:
        if isinstance(answer, str):
            content = [{"type": "text", "text": answer}]
            stop = "end_turn"
        else:
            content = [
                {"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": arguments}
                for index, (name, arguments) in enumerate(answer)
            ]
            stop = "tool_use"
        input_tokens, output_tokens = self.usage
        return {
            "id": "msg_batch", "type": "message", "role": "assistant", "model": params["model"],
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }  # fmt: skip
