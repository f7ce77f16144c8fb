"""The providers' batch APIs behind one small interface: submit, poll, read results, cancel.

``"openai-batch"`` is the OpenAI Batch API: the requests go up as a JSONL file
(``/v1/files``, purpose ``batch``), a batch over it is created (``/v1/batches``, endpoint
``/v1/chat/completions``, a 24 h window) and polled; its output and error files hold one
line per request. ``"anthropic-batch"`` is Anthropic's Message Batches API
(``/v1/messages/batches``): the requests go up in the create call and the results come back
as JSONL. Both go through the official SDKs' batch calls, with the model client's own
connection, key and error translation; request bodies and results are translated by the
model client (``request_body`` / ``response_events``), as for a streamed turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aimu.models.base import ModelClient
from aimu.models.errors import ModelError

#: The backend names, and the provider each needs.
PROVIDERS = {"openai-batch": "openai", "anthropic-batch": "anthropic"}


@dataclass
class Status:
    """One poll of a provider batch: whether it ended, the provider's status and counts."""

    batch_id: str
    provider_status: str
    ended: bool
    submitted: int = 0
    in_progress: int = 0
    done: int = 0
    failed: int = 0
    raw: Any = None

    def line(self) -> str:
        return (
            f"batch {self.batch_id} {self.provider_status}: {self.submitted} submitted, "
            f"{self.in_progress} in progress, {self.done} done, {self.failed} failed"
        )


@dataclass
class Outcome:
    """One request's result: the provider's response ``body``, else an ``error``;
    ``retry`` is false when running the request again would be wrong (a cancelled batch)."""

    body: Any = None
    error: str | None = None
    retry: bool = True


class BatchRequestError(ModelError):
    """A request of a provider batch did not succeed (failed, expired or cancelled)."""

    def __init__(self, message: str, *, final: bool = False):
        super().__init__(message)
        #: Not retried: the batch it was in was cancelled, or its input was refused.
        self.final = final


def _wire_body(body: dict[str, Any]) -> dict[str, Any]:
    """A request body as it goes on the wire: ``extra_body`` merged in, the SDK-only options
    (headers, query, timeout), which a batch line cannot carry, left out."""
    wire = {k: v for k, v in body.items() if k not in _SDK_ONLY}
    wire.update(body.get("extra_body") or {})
    return wire


_SDK_ONLY = ("extra_body", "extra_headers", "extra_query", "timeout")


class OpenAIBatches:
    """The OpenAI Batch API for one :class:`~aimu.models.providers.openai.OpenAIClient`."""

    ENDPOINT = "/v1/chat/completions"
    ENDED = ("completed", "failed", "expired", "cancelled")

    def __init__(self, client: ModelClient):
        self.client = client

    async def submit(self, requests: list[tuple[str, dict[str, Any]]]) -> str:
        lines = "".join(
            json.dumps({"custom_id": custom_id, "method": "POST", "url": self.ENDPOINT,
                        "body": _wire_body(body)}, ensure_ascii=False) + "\n"
            for custom_id, body in requests
        )  # fmt: skip
        sdk = self.client.sdk_client()
        try:
            upload = await sdk.files.create(
                file=("aimu-batch.jsonl", lines.encode("utf-8")), purpose="batch"
            )
            batch = await sdk.batches.create(
                input_file_id=upload.id,
                endpoint=self.ENDPOINT,
                completion_window="24h",
                metadata={"created_by": "aimu"},
            )
        except Exception as exc:
            raise self.client.sdk_error(exc) from None
        return batch.id

    async def status(self, batch_id: str) -> Status:
        try:
            batch = await self.client.sdk_client().batches.retrieve(batch_id)
        except Exception as exc:
            raise self.client.sdk_error(exc) from None
        counts = batch.request_counts
        total = counts.total if counts else 0
        done = counts.completed if counts else 0
        failed = counts.failed if counts else 0
        return Status(batch_id, batch.status, batch.status in self.ENDED, total,
                      max(0, total - done - failed), done, failed, batch)  # fmt: skip

    async def results(self, status: Status) -> dict[str, Outcome]:
        batch = status.raw
        outcomes: dict[str, Outcome] = {}
        if batch.status == "failed":
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            reason = "; ".join(filter(None, (getattr(e, "message", None) for e in errors)))
            raise BatchRequestError(
                f"the batch {batch.id} was refused: {reason or 'no reason given'}", final=True
            )
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            try:
                content = await self.client.sdk_client().files.content(file_id)
            except Exception as exc:
                raise self.client.sdk_error(exc) from None
            for line in content.text.splitlines():
                if line.strip():
                    custom_id, outcome = _openai_line(json.loads(line), batch.status)
                    outcomes[custom_id] = outcome
        return outcomes

    async def cancel(self, batch_id: str) -> None:
        try:
            await self.client.sdk_client().batches.cancel(batch_id)
        except Exception as exc:
            raise self.client.sdk_error(exc) from None


def _openai_line(line: dict[str, Any], batch_status: str) -> tuple[str, Outcome]:
    custom_id = str(line.get("custom_id"))
    response = line.get("response") or {}
    error = line.get("error") or {}
    if response.get("status_code") == 200:
        return custom_id, Outcome(body=response.get("body"))
    if error.get("code") == "batch_cancelled" or (batch_status == "cancelled" and not response):
        return custom_id, Outcome(error="the batch was cancelled", retry=False)
    if error:
        code = error.get("code") or "error"
        return custom_id, Outcome(error=f"{code}: {error.get('message') or 'no message'}")
    body = response.get("body") or {}
    message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
    return custom_id, Outcome(
        error=f"HTTP {response.get('status_code')}: {message or json.dumps(body)[:300]}"
    )


class AnthropicBatches:
    """Anthropic's Message Batches for one :class:`AnthropicClient`."""

    def __init__(self, client: ModelClient):
        self.client = client

    async def submit(self, requests: list[tuple[str, dict[str, Any]]]) -> str:
        entries = [{"custom_id": rid, "params": _wire_body(body)} for rid, body in requests]
        try:
            batch = await self.client.sdk_client().messages.batches.create(requests=entries)
        except Exception as exc:
            raise self.client.sdk_error(exc) from None
        return batch.id

    async def status(self, batch_id: str) -> Status:
        try:
            batch = await self.client.sdk_client().messages.batches.retrieve(batch_id)
        except Exception as exc:
            raise self.client.sdk_error(exc) from None
        counts = batch.request_counts
        finished = counts.succeeded + counts.errored + counts.canceled + counts.expired
        return Status(batch_id, batch.processing_status, batch.processing_status == "ended",
                      counts.processing + finished, counts.processing, counts.succeeded,
                      finished - counts.succeeded, batch)  # fmt: skip

    async def results(self, status: Status) -> dict[str, Outcome]:
        outcomes: dict[str, Outcome] = {}
        try:
            entries = await self.client.sdk_client().messages.batches.results(status.batch_id)
            async for entry in entries:
                outcomes[entry.custom_id] = _anthropic_result(entry.result)
        except Exception as exc:
            raise self.client.sdk_error(exc) from None
        return outcomes

    async def cancel(self, batch_id: str) -> None:
        try:
            await self.client.sdk_client().messages.batches.cancel(batch_id)
        except Exception as exc:
            raise self.client.sdk_error(exc) from None


def _anthropic_result(result: Any) -> Outcome:
    kind = result.type
    if kind == "succeeded":
        return Outcome(body=result.message.model_dump(mode="json"))
    if kind == "canceled":
        return Outcome(error="the batch was cancelled", retry=False)
    if kind == "expired":
        return Outcome(error="the request expired before the batch processed it")
    inner = getattr(getattr(result, "error", None), "error", None)
    return Outcome(error=f"{getattr(inner, 'type', 'error')}: {getattr(inner, 'message', '')}")


def batch_api(backend: str, client: ModelClient) -> OpenAIBatches | AnthropicBatches:
    """The batch API ``backend`` names, for ``client``; a clear error when they do not fit."""
    from aimu.batch._ray import BatchSetupError

    provider = PROVIDERS[backend]
    if client.provider != provider or not hasattr(client, "request_body"):
        raise BatchSetupError(
            f"backend={backend!r} sends the batch to {provider}'s batch API, but the agent's "
            f"model is {client.name!r}; use a '{provider}:MODEL' model, or backend='local'"
        )
    return OpenAIBatches(client) if provider == "openai" else AnthropicBatches(client)
