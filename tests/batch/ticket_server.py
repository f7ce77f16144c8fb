"""A Chat Completions server whose answer depends on the prompt, for batch runs.

Each request is answered after ``delay`` seconds with ``label: <the last user message>``
(or with JSON for schema batches); the server records the peak number of requests it was
answering at once, and can answer HTTP 429 to a given number of requests first.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "providers"))

from provider_wire import Reply, Request, WireServer, json_error, openai_turn


class TicketServer:
    """Answers ``urgent`` for prompts mentioning "down" or "broken", else ``routine``."""

    def __init__(self, delay: float = 0.05, usage: tuple[int, int] = (10, 3)):
        self.delay = delay
        self.usage = usage
        self.rate_limited = 0
        self.fail_prompts: dict[str, int] = {}
        self.in_flight = 0
        self.peak = 0
        self.prompts: list[str] = []
        self._lock = threading.Lock()
        self.wire = WireServer(default=self.answer)

    @property
    def url(self) -> str:
        return self.wire.url + "/v1"

    def answer(self, request: Request) -> Reply:
        body = request.json
        prompt = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        with self._lock:
            if self.rate_limited > 0:
                self.rate_limited -= 1
                return json_error(
                    429, {"error": {"message": "slow down", "type": "rate_limit"}},
                    {"Retry-After": "0.1"},
                )  # fmt: skip
            if self.fail_prompts.get(prompt, 0) > 0:
                self.fail_prompts[prompt] -= 1
                return json_error(500, {"error": {"message": "the model crashed"}})
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.prompts.append(prompt)
        try:
            time.sleep(self.delay)
        finally:
            with self._lock:
                self.in_flight -= 1
        label = "urgent" if ("down" in prompt or "broken" in prompt) else "routine"
        if body.get("response_format") or "JSON" in prompt:
            text = json.dumps({"label": label, "summary": prompt[-20:]})
        else:
            text = f"{label}: {prompt.rsplit(':', 1)[-1].strip()}"
        return openai_turn(text, usage=self.usage)
