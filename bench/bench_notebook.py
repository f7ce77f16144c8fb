"""Notebook-layer benchmarks: extension load time, and a long answer streamed into a cell.

Run by hand from the repository root::

    .venv/bin/python bench/bench_notebook.py

1. ``%load_ext aimu`` against ``%load_ext jupyter_ai_magics`` (the peer), each in a fresh
   ``python -c`` process of its own virtualenv, timing import + load inside IPython. The
   peer lives in ``bench/.venvs/jupyter_ai`` (never in .venv)::

       python3 -m venv bench/.venvs/jupyter_ai
       bench/.venvs/jupyter_ai/bin/pip install jupyter-ai-magics ipython

2. A 5,000-token answer from the scripted model streamed by ``%%agent`` in a real kernel:
   iopub messages per second, display updates, bytes sent, and time to the first visible
   text (execute request sent -> first display carrying answer text, seen by the client).
   Compared in the same run with the same cell and every chunk published (no throttle).
"""

from __future__ import annotations

import json
import os
import queue
import statistics
import subprocess
import sys
import time
from pathlib import Path

from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[1]
PEER_PYTHON = ROOT / "bench" / ".venvs" / "jupyter_ai" / "bin" / "python"
RUN_MIME = "application/vnd.aimu.run+json"
RUNS = 7
TOKENS = 5_000

LOAD = """\
import asyncio, time  # a kernel has asyncio loaded before any extension
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
start = time.perf_counter()
shell.run_line_magic("load_ext", {module!r})
elapsed = time.perf_counter() - start
assert {magic!r} in shell.magics_manager.magics["cell"], "the extension did not load"
print(elapsed)
"""

SETUP = f"""\
%load_ext aimu
from aimu.models.providers.scripted import ScriptedClient
answer = " ".join(f"token{{i}}" for i in range({TOKENS}))
"""

UNTHROTTLED = """\
import functools, aimu_jupyter.run._runner as _runner
_runner.LiveDisplay = functools.partial(
    _runner.LiveDisplay, min_interval=0.0, byte_rate=float("inf"))
"""


def load_time(python: Path | str, module: str, magic: str) -> float:
    """Median seconds for ``%load_ext module`` in fresh processes of ``python``, after one
    warm-up run that lets both sides write their bytecode caches."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    times = []
    for _ in range(RUNS + 1):
        out = subprocess.run(
            [str(python), "-c", LOAD.format(module=module, magic=magic)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env=env,
        )
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times[1:])


def stream(delay: float, throttled: bool) -> dict[str, float]:
    """Stream a TOKENS-word answer through ``%%agent`` and measure what the client sees."""
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(ROOT))
    client = km.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        _execute(client, SETUP + ("" if throttled else UNTHROTTLED))
        _execute(client, f"m = ScriptedClient([answer], delay={delay})")
        sent = time.perf_counter()
        messages = _execute(client, "%%agent --model m\nTalk.")
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)
    first_text = next(
        at
        for at, msg in messages
        if msg["msg_type"] in ("display_data", "update_display_data")
        and any(e["type"] == "text" for e in msg["content"]["data"][RUN_MIME]["events"])
    )
    end = messages[-1][0]
    updates = [m for _, m in messages if m["msg_type"] == "update_display_data"]
    size = sum(len(json.dumps(m["content"])) for _, m in messages)
    final = updates[-1]["content"]["data"][RUN_MIME]
    assert final["status"] == "done" and len(final["events"][0]["text"].split()) == TOKENS
    return {
        "seconds": end - sent,
        "first_text_ms": (first_text - sent) * 1000,
        "messages": len(messages),
        "messages_per_s": len(messages) / (end - sent),
        "updates": len(updates),
        "megabytes": size / 1e6,
    }


def _execute(client, code: str) -> list[tuple[float, dict]]:
    msg_id = client.execute(code)
    seen = []
    while True:
        try:
            msg = client.get_iopub_msg(timeout=300)
        except queue.Empty as exc:
            raise TimeoutError(code) from exc
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        seen.append((time.perf_counter(), msg))
        if msg["msg_type"] == "error":
            raise RuntimeError("\n".join(msg["content"]["traceback"]))
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return seen


def main() -> None:
    print(f"== %load_ext (median of {RUNS} fresh processes) ==")
    ours = load_time(sys.executable, "aimu", "agent")
    print(f"%load_ext aimu               {ours * 1000:8.1f} ms")
    if PEER_PYTHON.exists():
        peer = load_time(PEER_PYTHON, "jupyter_ai_magics", "ai")
        print(f"%load_ext jupyter_ai_magics  {peer * 1000:8.1f} ms")
        print(f"ratio (peer / aimu)          {peer / ours:8.1f}x faster")
    else:
        print(f"peer not installed at {PEER_PYTHON}; see this file's docstring")

    for delay, label in ((0.0, "as fast as the kernel can"), (0.001, "~1 ms per token")):
        print(f"\n== {TOKENS:,}-token answer streamed by %%agent, {label} ==")
        rows = {"throttled": stream(delay, True), "every chunk": stream(delay, False)}
        print(
            f"{'':14}{'time s':>9}{'1st text ms':>13}{'iopub msgs':>12}{'msgs/s':>9}"
            f"{'updates':>9}{'MB':>8}"
        )
        for name, row in rows.items():
            print(
                f"{name:14}{row['seconds']:9.2f}{row['first_text_ms']:13.1f}{row['messages']:12d}"
                f"{row['messages_per_s']:9.1f}{row['updates']:9d}{row['megabytes']:8.2f}"
            )
        a, b = rows["throttled"], rows["every chunk"]
        print(
            f"throttled sends {b['messages'] / a['messages']:.0f}x fewer messages and "
            f"{b['megabytes'] / a['megabytes']:.0f}x fewer bytes; "
            f"wall time ratio {b['seconds'] / a['seconds']:.2f}"
        )


if __name__ == "__main__":
    main()
