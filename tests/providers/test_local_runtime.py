"""The embedded model runs in a process of its own: a native crash costs only that process.

These tests kill the real model process (llama-cpp-python in ``_local_worker.py``) with the
signals a fault sends, and check what the caller sees and that the next request works.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import textwrap
from pathlib import Path

import pytest
from provider_wire import collect

from aimu.models import TextDelta, TurnEnd
from aimu.models.errors import ModelError
from aimu.models.providers import _local_runtime, local
from aimu.models.providers.local import LocalClient

LONG = [{"role": "user", "content": "Write a very long story about a lighthouse keeper."}]
SHORT = [{"role": "user", "content": "Say yes."}]


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode(errors="replace").partition("=")[::2] for item in raw if item)


async def test_a_segfault_mid_answer_is_a_model_error_that_says_how_to_go_on():
    client = LocalClient(max_tokens=400, temperature=0.0, seed=3)
    await collect(client, SHORT)
    pid = client.process_id
    assert pid is not None and pid != os.getpid()
    pieces = 0
    with pytest.raises(ModelError) as raised:
        async for event in client.stream(LONG):
            pieces += isinstance(event, TextDelta)
            if pieces == 3:
                os.kill(pid, signal.SIGSEGV)
    message = str(raised.value)
    assert "crashed (SIGSEGV)" in message
    assert "the next request starts the model again" in message
    assert "AIMU_MODEL=" in message and "GGML_NATIVE=OFF" in message
    events = await collect(client, SHORT)  # a new process answers
    assert isinstance(events[-1], TurnEnd)
    assert client.process_id not in (None, pid)


async def test_a_model_process_killed_between_requests_is_restarted_unnoticed():
    client = LocalClient(max_tokens=8, temperature=0.0, seed=3)
    await collect(client, SHORT)
    first = client.process_id
    os.kill(first, signal.SIGKILL)
    await asyncio.sleep(0.2)
    events = await collect(client, SHORT)
    assert isinstance(events[-1], TurnEnd)
    assert client.process_id not in (None, first)


async def test_the_model_process_ignores_a_kernel_interrupt_and_holds_no_secrets(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-in-the-child-1234567890")
    client = LocalClient(n_ctx=1024, max_tokens=8, temperature=0.0, seed=3)  # its own process
    await collect(client, SHORT)
    pid = client.process_id
    os.kill(pid, signal.SIGINT)  # a kernel interrupt signals the whole process group
    await asyncio.sleep(0.3)
    assert client.process_id == pid
    environment = environ_of(pid)
    assert "OPENAI_API_KEY" not in environment
    assert not any("sk-test-never" in value for value in environment.values())


def fake_worker(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(body))
    return script


@pytest.mark.parametrize(
    ("body", "works"),
    [
        ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", False),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n", False),
        ("raise SystemExit(0)\n", True),
    ],
    ids=["segfault", "illegal-instruction", "answers"],
)
def test_extra_buffer_types_are_used_only_once_a_probe_proved_them(
    tmp_path, monkeypatch, body, works
):
    monkeypatch.setattr(_local_runtime, "WORKER", fake_worker(tmp_path, body))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("AIMU_LOCAL_EXTRA_BUFFERS", raising=False)
    monkeypatch.setattr(_local_runtime, "_verdicts", {})
    assert _local_runtime.extra_buffers_proven(str(local.model_path())) is works
    (record,) = (tmp_path / "cache" / "aimu" / "probes").iterdir()
    assert json.loads(record.read_text()) == {"works": works}
    # the verdict is kept: a worker that would answer otherwise is not asked again
    monkeypatch.setattr(_local_runtime, "_verdicts", {})
    monkeypatch.setattr(_local_runtime, "WORKER", fake_worker(tmp_path, "raise SystemExit(3)\n"))
    assert _local_runtime.extra_buffers_proven(str(local.model_path())) is works


def test_the_probe_on_this_machine_runs_in_a_process_of_its_own():
    """The real probe: whatever its verdict here, this process survives it."""
    verdict = _local_runtime._probe(str(local.model_path()))
    assert verdict in (True, False)


def test_a_crash_while_loading_is_reported_not_raised_raw(tmp_path, monkeypatch):
    crash = fake_worker(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n")
    monkeypatch.setattr(_local_runtime, "WORKER", crash)
    options = _local_runtime.LoadOptions(str(local.model_path()), 512, None, 0, None)
    runtime = _local_runtime.Runtime(options, extra_buffers=False)
    try:
        with pytest.raises(_local_runtime.RuntimeCrashed, match=r"crashed \(SIGILL\)"):
            runtime.start()
    finally:
        runtime.close()


def test_the_bundled_model_gets_a_q8_0_copy_once(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    source = local.model_path()
    copy = _local_runtime.fast_copy(source)
    assert copy != source and copy.is_file()
    assert copy.read_bytes()[:4] == b"GGUF"
    assert 1.3 < copy.stat().st_size / source.stat().st_size < 1.8  # Q8_0 against Q4_1
    assert _local_runtime.fast_copy(source) == copy
    assert [p.name for p in copy.parent.iterdir()] == [copy.name]  # no partial file left


def test_an_unwritable_cache_loads_the_model_as_it_is(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    source = local.model_path()
    assert _local_runtime.fast_copy(source) == source
