"""MCP benchmark: per-call latency through MCPClient vs FastMCP's async Client directly.

Everything calls the same tool with the same arguments on the same in-memory FastMCP server.
In this process, in the same run: FastMCP's ``Client`` awaited directly (the floor), our
blocking ``MCPClient`` (a hop to its loop thread per call), one of its ``as_tools()``
functions called directly and through the agent's dispatch (its progress-forwarding form),
and ``aimu.aio.MCPClient``. Rounds alternate between them and each one's median
round, best round and best CPU time (all threads) are reported; the order is shuffled each
round, so a busy machine slows all of them alike (on a loaded machine, trust the CPU column
more than wall time, which includes waiting for a core). The peer, aimu 0.38's
``MCPClient`` (bench/.venvs/aimu038, created on first use), runs in its own process.
Target: MCPClient / FastMCP direct <= 1.3.

    .venv/bin/python bench/bench_mcp.py
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent
PEER = HERE / ".venvs" / "aimu038"
CALLS = 150
ROUNDS = 25
ARGS = {"a": 2, "b": 3}
DIRECT = ("FastMCP Client.call_tool (direct)", "FastMCP Client.call_tool_mcp (direct)")
OURS = "aimu.tools.MCPClient.call_tool"

SERVER_SOURCE = textwrap.dedent('''
    from fastmcp import FastMCP

    server = FastMCP("bench")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b
''')

PEER_SCRIPT = SERVER_SOURCE + textwrap.dedent("""
    import json, time
    from aimu.tools import MCPClient

    client = MCPClient(server=server)
    for _ in range(50):
        client.call_tool("add", {args})
    rounds = []
    for _ in range({rounds}):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range({calls}):
            client.call_tool("add", {args})
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        rounds.append((wall / {calls}, cpu / {calls}))
    client.close()
    print(json.dumps(rounds))
""")


def ensure_peer() -> Path:
    python = PEER / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "aimu==0.38.0"], check=True)
    return python


def measure_ours() -> dict[str, list[tuple[float, float]]]:
    """Per-call (wall, CPU) seconds of each contender, one entry per round, rounds interleaved.

    CPU is the whole process's (every thread), so a hop to another thread is counted."""
    from fastmcp import Client

    import aimu.aio
    from aimu.models.base import ToolCallRequest
    from aimu.tools import MCPClient
    from aimu.tools.dispatch import dispatch

    namespace: dict = {}
    exec(SERVER_SOURCE, namespace)
    server = namespace["server"]

    loop = asyncio.new_event_loop()
    direct = Client(server)
    loop.run_until_complete(direct.__aenter__())
    async_client = aimu.aio.MCPClient(server=server)
    loop.run_until_complete(async_client.connect())
    sync_client = MCPClient(server=server)
    add = next(fn for fn in sync_client.as_tools() if fn.__name__ == "add")

    async def direct_calls(n: int) -> None:
        for _ in range(n):
            await direct.call_tool("add", ARGS)

    async def direct_raw_calls(n: int) -> None:
        for _ in range(n):
            await direct.call_tool_mcp("add", ARGS)

    async def async_calls(n: int) -> None:
        for _ in range(n):
            await async_client.call_tool("add", ARGS)

    def sync_calls(n: int) -> None:
        for _ in range(n):
            sync_client.call_tool("add", ARGS)

    def tool_calls(n: int) -> None:
        for _ in range(n):
            add(**ARGS)

    request = ToolCallRequest(id="call-1", name="add", arguments=ARGS)

    async def dispatched_calls(n: int) -> None:
        for _ in range(n):
            await dispatch(request, {"add": add})

    contenders: dict[str, Callable[[int], None]] = {
        DIRECT[0]: lambda n: loop.run_until_complete(direct_calls(n)),
        DIRECT[1]: lambda n: loop.run_until_complete(direct_raw_calls(n)),
        OURS: sync_calls,
        "aimu.tools.MCPClient as_tools() function": tool_calls,
        "  the same, through the agent's dispatch": lambda n: loop.run_until_complete(
            dispatched_calls(n)
        ),
        "aimu.aio.MCPClient.call_tool": lambda n: loop.run_until_complete(async_calls(n)),
    }
    for run in contenders.values():
        run(50)
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    order = list(contenders.items())
    for _ in range(ROUNDS):
        random.shuffle(order)
        for name, run in order:
            wall, cpu = time.perf_counter(), time.process_time()
            run(CALLS)
            results[name].append(
                ((time.perf_counter() - wall) / CALLS, (time.process_time() - cpu) / CALLS)
            )

    sync_client.close()
    loop.run_until_complete(async_client.close())
    loop.run_until_complete(direct.close())
    loop.close()
    return results


def main() -> None:
    peer_python = ensure_peer()
    results = measure_ours()
    script = PEER_SCRIPT.format(rounds=ROUNDS, calls=CALLS, args=ARGS)
    peer_run = subprocess.run(
        [str(peer_python), "-I", "-c", script], check=True, capture_output=True, text=True
    )
    results["aimu 0.38 MCPClient.call_tool (peer)"] = json.loads(peer_run.stdout)

    columns = {
        "wall median": {n: statistics.median(r[0] for r in rs) for n, rs in results.items()},
        "wall best": {n: min(r[0] for r in rs) for n, rs in results.items()},
        "CPU best": {n: min(r[1] for r in rs) for n, rs in results.items()},
    }
    floors = {label: min(values[name] for name in DIRECT) for label, values in columns.items()}
    print(f"per-call latency, {ROUNDS} rounds x {CALLS} calls, in-memory server (us, x floor)")
    print(f"  {'':<42}" + "".join(f"{label:>18}" for label in columns))
    for name in results:
        cells = "".join(
            f"{values[name] * 1e6:10.0f} x{values[name] / floors[label]:5.2f}"
            for label, values in columns.items()
        )
        print(f"  {name:<42}{cells}")
    for label, values in columns.items():
        ratio = values[OURS] / floors[label]
        verdict = "meets" if ratio <= 1.3 else "misses"
        print(f"MCPClient / fastest FastMCP direct, {label}: {ratio:.2f} ({verdict} <= 1.3)")


if __name__ == "__main__":
    main()
