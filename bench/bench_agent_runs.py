"""Repeated sync agent runs from plain Python: ours vs aimu 0.38 vs two raw SDK calls.

One run = model call -> tool ``add`` -> model call, against an OpenAI Chat Completions
wire-format server in another process (``provider_wire.py openai-agent``), so no model time is
involved and what is left is what the library adds per run: the event loop, the SDK client, its
TLS context and connections, the agent loop. Measured, each in its own process, rounds
interleaved, all in the same run:

- ours and aimu 0.38 (bench/.venvs/aimu038, created under a lock if missing), with a new
  ``Agent`` per run on one client, and with one ``Agent`` reused (reset between runs);
- the floor: two streamed ``chat.completions.create`` calls on one reused sync ``openai.OpenAI``.

Wall time is the figure; the client process's CPU time is printed beside it, since on a busy
machine the wall time of a streamed turn (a dozen separate writes) varies with scheduling.

    .venv/bin/python bench/bench_agent_runs.py [--runs 300] [--rounds 3] [--ours TREE]

``--ours`` measures another checkout as ours (e.g. an export of main, for before/after).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench_providers import PEER_PYTHON, ensure_peer

ROOT = Path(__file__).resolve().parent.parent
WIRE = ROOT / "tests" / "providers" / "provider_wire.py"
WARMUP = 20

TOOL = '''
@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first
        b: second
    """
    return a + b
'''

TIMER = """
def measure(run_once):
    times = []
    for i in range(runs + WARMUP):
        start, cpu = time.perf_counter(), time.process_time()
        answer = run_once()
        if i >= WARMUP:
            times.append((time.perf_counter() - start, time.process_time() - cpu))
    assert "42" in answer, answer
    return times
"""

AGENT_RUNS = (
    """
import json, sys, time
import aimu
{imports}
mode, url, runs, WARMUP = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
"""
    + TOOL
    + TIMER
    + """
client = aimu.client(f"{spec}:wire-model@{{url}}/v1")
reused = Agent(client, system_message="Be brief.", tools=[add])

def new_agent():
    return Agent(client, system_message="Be brief.", tools=[add]).run("What is 40 + 2?")

def reused_agent():
    {reset}
    return reused.run("What is 40 + 2?")

print(json.dumps(measure(new_agent if mode == "new" else reused_agent)))
"""
)
# aimu 0.38's Agent with a system message starts each run afresh; ours keeps the conversation.
OURS = AGENT_RUNS.format(
    imports="from aimu import Agent, tool", spec="openai", reset="reused.reset()"
)
PEER_RUNS = AGENT_RUNS.format(
    imports="from aimu.agents import Agent\nfrom aimu.tools import tool",
    spec="openai-compat",
    reset="pass",
)

FLOOR = (
    """
import json, sys, time
import openai
mode, url, runs, WARMUP = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
"""
    + TIMER
    + """
client = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-bench")
spec = {"type": "function", "function": {"name": "add", "description": "Add.", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"]}}}
first = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "40 + 2?"}]
second = first + [
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
     "function": {"name": "add", "arguments": '{"a": 40, "b": 2}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "42"}]

def two_calls():
    text = ""
    for messages in (first, second):
        for chunk in client.chat.completions.create(model="wire-model", messages=messages,
                                                    tools=[spec], stream=True):
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
    return text

print(json.dumps(measure(two_calls)))
"""
)


def run(python: str, code: str, *args: str, ours: Path | None = None) -> list[list[float]]:
    """Run ``code`` in its own process: ours imports the ``ours`` tree, the peer its venv.

    Each run gives ``[wall seconds, CPU seconds of the client process]``.
    """
    if ours:
        command = [python, "-c", code, *args]
        env = {**os.environ, "PYTHONPATH": str(ours)}
    else:
        command = [python, "-I", "-c", code, *args]
        env = None
    out = subprocess.run(command, capture_output=True, text=True, cwd="/tmp", env=env)
    if out.returncode:
        raise SystemExit(f"{python} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_ms(rows: list[list[float]], column: int = 0) -> float:
    return statistics.median(row[column] for row in rows) * 1000


def summary(rows: list[list[float]]) -> str:
    ms = sorted(row[0] * 1000 for row in rows)
    p90 = ms[int(len(ms) * 0.9)]
    return (
        f"median {statistics.median(ms):7.2f} ms  mean {statistics.fmean(ms):7.2f}  "
        f"p90 {p90:7.2f}  CPU median {median_ms(rows, 1):6.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--ours", type=Path, default=ROOT, help="the aimu source tree measured as ours"
    )
    args = parser.parse_args()
    ensure_peer()
    wire = subprocess.Popen(
        [sys.executable, str(WIRE), "openai-agent"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    url = wire.stdout.readline().strip()
    counts = (str(args.runs), str(WARMUP))
    rows: dict[str, list[list[float]]] = {
        name: [] for name in ("ours new", "peer new", "ours reused", "peer reused", "floor")
    }
    try:
        for _ in range(args.rounds):
            for mode in ("new", "reused"):
                rows[f"ours {mode}"] += run(
                    sys.executable, OURS, mode, url, *counts, ours=args.ours
                )
                rows[f"peer {mode}"] += run(str(PEER_PYTHON), PEER_RUNS, mode, url, *counts)
            rows["floor"] += run(sys.executable, FLOOR, "floor", url, *counts, ours=ROOT)
    finally:
        wire.terminate()
        wire.wait()
    print(
        f"One-tool-call sync agent run (model -> tool -> model), {args.runs} runs x "
        f"{args.rounds} rounds, wire server in another process"
    )
    labels = {
        "ours new": "ours, new Agent per run",
        "peer new": "aimu 0.38, new Agent per run",
        "ours reused": "ours, one Agent reused",
        "peer reused": "aimu 0.38, one Agent reused",
        "floor": "floor: 2 raw SDK calls",
    }
    for key, label in labels.items():
        print(f"  {label:30} {summary(rows[key])}")
    for column, what in ((0, "wall"), (1, "CPU ")):
        floor = median_ms(rows["floor"], column)
        for mode in ("new", "reused"):
            ours = median_ms(rows[f"ours {mode}"], column)
            peer = median_ms(rows[f"peer {mode}"], column)
            print(
                f"  {what} {mode:6}: aimu 0.38 / ours = {peer / ours:5.2f}x   "
                f"ours - floor = {ours - floor:+6.2f} ms   ours / floor = {ours / floor:5.2f}x"
            )


if __name__ == "__main__":
    main()
