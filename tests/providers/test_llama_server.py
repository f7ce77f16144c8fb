"""The ``openai`` provider against a real OpenAI-compatible server: ``llama_cpp.server``
on 127.0.0.1 serving the bundled SmolLM2-135M model."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from provider_wire import collect

import aimu
from aimu.models import TextDelta, TurnEnd
from aimu.models.providers.local import bundled_model_path


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_model_path()),
         "--host", "127.0.0.1", "--port", "0", "--n_ctx", "2048", "--verbose", "false"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    ready = threading.Event()
    found: dict[str, str] = {}
    log: list[str] = []

    def drain() -> None:
        for line in process.stderr:
            log.append(line)
            match = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
            if match:
                found["url"] = match.group(1)
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        ready.wait(timeout=90)
        assert "url" in found, "llama_cpp.server did not start:\n" + "".join(log)
        yield found["url"]
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_text_streams_from_a_real_openai_compatible_server(llama_server):
    client = aimu.client(f"openai:smollm2@{llama_server}/v1", temperature=0, max_tokens=24)
    events = await collect(client, [{"role": "user", "content": "Say hello."}])
    pieces = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(pieces) > 1 and "".join(pieces).strip()
    assert isinstance(events[-1], TurnEnd)


async def test_tool_transcript_is_accepted_by_a_strict_server(llama_server):
    """llama_cpp.server refuses ``content: null`` (and SmolLM2's template cannot render it)."""
    client = aimu.client(f"openai:smollm2@{llama_server}/v1", temperature=0, max_tokens=24)
    transcript = [
        {"role": "user", "content": "What is 40 + 2?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "add", "arguments": '{"a": 40, "b": 2}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "add", "content": "42"},
    ]  # fmt: skip
    events = await collect(client, transcript)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).strip()


def test_sync_agent_runs_end_to_end_against_the_server(llama_server):
    agent = aimu.Agent(
        aimu.client(f"openai:smollm2@{llama_server}/v1", temperature=0, max_tokens=24),
        system_message="Answer in one short sentence.",
    )
    assert agent.run("Name a colour.").strip()
    assert [m["role"] for m in agent.messages] == ["system", "user", "assistant"]
