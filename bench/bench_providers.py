"""Model-provider benchmarks, run by hand.

1. Per-turn client overhead: one streamed turn (text + a tool call, 13 SSE events) from a
   loopback server speaking Chat Completions, so no model time is involved. Ours
   (``aimu.client("openai:...@URL")``) against aimu 0.38's ``openai-compat`` client on the same
   server in the same run, both in their own processes, rounds interleaved. The peer lives in
   bench/.venvs/aimu038 (created under a lock if missing). Our Anthropic and Ollama clients
   are measured the same way against their wire formats (no peer: its SDK pins differ).
2. Tokens per second of the embedded ``local`` model (SmolLM2-135M, llama-cpp-python), beside
   the same generation driven directly through llama-cpp-python, to show what the worker
   thread and the streaming cost.

    .venv/bin/python bench/bench_providers.py [--turns 300] [--rounds 3] [--skip-local]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIRE = ROOT / "tests" / "providers" / "provider_wire.py"
PEER = ROOT / "bench" / ".venvs" / "aimu038"
PEER_PYTHON = PEER / "bin" / "python"
OURS_PYTHON = ROOT / ".venv" / "bin" / "python"

OURS_TURNS = """
import asyncio, json, sys, time
import aimu
provider, url, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = {"type": "function", "function": {"name": "add", "description": "Add.", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"]}}}
if provider == "openai":
    client = aimu.client(f"openai:wire-model@{url}/v1")
elif provider == "anthropic":
    client = aimu.client("anthropic:wire-model", base_url=url, api_key="bench")
else:
    client = aimu.client(f"ollama:wire-model@{url}")
messages = [{"role": "user", "content": "What is 40 + 2?"}]

async def main():
    times = []
    for i in range(turns + 20):
        start = time.perf_counter()
        async for _ in client.stream(messages, [spec]):
            pass
        if i >= 20:
            times.append(time.perf_counter() - start)
    print(json.dumps(times))

asyncio.run(main())
"""

PEER_TURNS = """
import json, sys, time
from aimu.models import ModelClient
from aimu.tools import tool
url, turns = sys.argv[1], int(sys.argv[2])

@tool
def add(a: int, b: int) -> int:
    \"\"\"Add.

    Args:
        a: first
        b: second
    \"\"\"
    return a + b

client = ModelClient(f"openai-compat:wire-model@{url}/v1")
client.tools = [add]
times = []
for i in range(turns + 20):
    client.messages.clear()
    start = time.perf_counter()
    for _ in client.chat("What is 40 + 2?", stream=True):
        pass
    if i >= 20:
        times.append(time.perf_counter() - start)
print(json.dumps(times))
"""

LOCAL_RATE = """
import asyncio, json, time
import llama_cpp
from aimu.models import TextDelta
from aimu.models.providers import local

prompt = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
client = local.LocalClient(temperature=0.0, seed=1, max_tokens=200, repeat_penalty=1.1)
path = str(client.path)

async def ours():
    start = time.perf_counter(); first = None; n = 0
    async for event in client.stream(prompt):
        if isinstance(event, TextDelta):
            n += 1
            first = first or time.perf_counter()
    end = time.perf_counter()
    return n, end - start, (n - 1) / (end - first)

def direct(llm):
    start = time.perf_counter(); first = None; n = 0
    for chunk in llm.create_chat_completion(prompt, stream=True, temperature=0.0, seed=1,
                                            max_tokens=200, repeat_penalty=1.1):
        if chunk["choices"][0]["delta"].get("content"):
            n += 1
            first = first or time.perf_counter()
    end = time.perf_counter()
    return n, end - start, (n - 1) / (end - first)

async def main():
    await ours()  # load + warm up
    llm = llama_cpp.Llama(path, n_ctx=4096, verbose=False)
    direct(llm)
    rows = {"ours": [], "direct": []}
    for _ in range(3):
        rows["ours"].append(await ours())
        rows["direct"].append(direct(llm))
    tools = [{"type": "function", "function": {"name": "get_weather",
              "description": "Current weather for a city.", "parameters": {"type": "object",
              "properties": {"city": {"type": "string"}}, "required": ["city"],
              "additionalProperties": False}}}]
    decide = []
    for _ in range(3):
        start = time.perf_counter()
        async for _ in client.stream([{"role": "user", "content": "Weather in Paris?"}], tools):
            pass
        decide.append(time.perf_counter() - start)
    rows["tool_turn_s"] = decide
    print(json.dumps(rows))
    local._close_all()
    llm.close()

asyncio.run(main())
"""


def ensure_peer() -> None:
    """Create the aimu 0.38 venv (with its openai extra) unless it exists; under a lock."""
    lock = PEER.parent / "aimu038.lock"
    PEER.parent.mkdir(parents=True, exist_ok=True)
    script = (
        f'if ! "{PEER_PYTHON}" -I -c "import aimu, openai" 2>/dev/null; then '
        f'python3 -m venv "{PEER}" && "{PEER / "bin" / "pip"}" install -q '
        f'"aimu[openai-compat]==0.38.0"; fi'
    )
    subprocess.run(["flock", str(lock), "-c", script], check=True)


def start_wire(kind: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [str(OURS_PYTHON), str(WIRE), kind], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    return process, process.stdout.readline().strip()


def run(python: Path, code: str, *args: str) -> list[float]:
    out = subprocess.run(
        [str(python), "-I", "-c", code, *args], capture_output=True, text=True, cwd="/tmp"
    )
    if out.returncode:
        raise SystemExit(f"{python} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    p90 = ms[int(len(ms) * 0.9)]
    return (
        f"median {statistics.median(ms):6.2f} ms  mean {statistics.fmean(ms):6.2f}  p90 {p90:6.2f}"
    )


def bench_overhead(turns: int, rounds: int) -> None:
    ensure_peer()
    print(f"Per-turn client overhead, {turns} turns x {rounds} rounds (no model time)")
    wire, url = start_wire("openai")
    try:
        ours: list[float] = []
        peer: list[float] = []
        for _ in range(rounds):
            ours += run(OURS_PYTHON, OURS_TURNS, "openai", url, str(turns))
            peer += run(PEER_PYTHON, PEER_TURNS, url, str(turns))
        print(f"  openai  ours       {summary(ours)}")
        print(f"  openai  aimu 0.38  {summary(peer)}")
        ratio = statistics.median(peer) / statistics.median(ours)
        print(f"  ratio (aimu 0.38 / ours, median): {ratio:.2f}x")
    finally:
        wire.terminate()
        wire.wait()
    for kind in ("anthropic", "ollama"):
        wire, url = start_wire(kind)
        try:
            times: list[float] = []
            for _ in range(rounds):
                times += run(OURS_PYTHON, OURS_TURNS, kind, url, str(turns))
            print(f"  {kind:9} ours  {summary(times)}")
        finally:
            wire.terminate()
            wire.wait()


def bench_local() -> None:
    print("Embedded local model (SmolLM2-135M Q4_1, llama-cpp-python), 200 tokens, 3 runs")
    rows = run(OURS_PYTHON, LOCAL_RATE)
    for name in ("ours", "direct"):
        rates = [r[2] for r in rows[name]]
        walls = [r[1] for r in rows[name]]
        label = "aimu local" if name == "ours" else "llama-cpp-python direct"
        print(
            f"  {label:24} decode {statistics.median(rates):6.1f} tokens/s  "
            f"(wall {statistics.median(walls):.2f} s for {rows[name][0][0]} tokens)"
        )
    ours = statistics.median(r[2] for r in rows["ours"])
    direct = statistics.median(r[2] for r in rows["direct"])
    print(f"  ratio (ours / direct, decode tokens/s): {ours / direct:.2f}")
    print(f"  constrained tool-call turn: median {statistics.median(rows['tool_turn_s']):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()
    bench_overhead(args.turns, args.rounds)
    if not args.skip_local:
        bench_local()


if __name__ == "__main__":
    main()
