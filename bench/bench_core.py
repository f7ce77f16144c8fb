"""Core benchmark: @tool spec generation and per-call dispatch overhead, ours vs aimu 0.38.

Dispatch overhead = (policy + coercion + call + result) minus calling the function directly.
The peer runs in its own virtualenv (bench/.venvs/aimu038, created on first use) in the same
run, on the same tool and the same arguments.

    .venv/bin/python bench/bench_core.py
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Literal

HERE = Path(__file__).parent
PEER = HERE / ".venvs" / "aimu038"
N_SPEC = 3000
N_CALL = 50000

TOOL_SOURCE = textwrap.dedent('''
    from typing import Literal, Optional

    def search(query: str, limit: int = 5, order: Literal["new", "old"] = "new",
               tags: Optional[list] = None) -> str:
        """Search the catalogue.

        Args:
            query: Words to look for.
            limit: The most results to return.
            order: Newest or oldest first.
            tags: Only items with all of these tags.
        """
        return query

    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: First.
            b: Second.
        """
        return a + b
''')

PEER_SCRIPT = TOOL_SOURCE + textwrap.dedent("""
    import json, time
    from aimu.tools import tool
    from aimu.agents._tool_loop import _ToolLoop

    N_SPEC, N_CALL = {n_spec}, {n_call}
    start = time.perf_counter()
    for _ in range(N_SPEC):
        tool(search)
    spec_us = (time.perf_counter() - start) / N_SPEC * 1e6

    tool(add)
    loop = _ToolLoop(None, [add], tool_approval=lambda name, args: True)
    tc = {{"name": "add", "arguments": {{"a": "2", "b": 3}}}}
    start = time.perf_counter()
    for _ in range(N_CALL):
        loop._call_plain_tool(tc, "call_1")
    dispatch_us = (time.perf_counter() - start) / N_CALL * 1e6
    start = time.perf_counter()
    for _ in range(N_CALL):
        add(a=2, b=3)
    direct_us = (time.perf_counter() - start) / N_CALL * 1e6
    print(json.dumps({{"spec_us": spec_us, "dispatch_us": dispatch_us, "direct_us": direct_us}}))
""")


def ensure_peer() -> Path:
    python = PEER / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "aimu==0.38.0"], check=True)
    return python


def measure_ours() -> dict[str, float]:
    from aimu.models.base import ToolCallRequest
    from aimu.tools import tool
    from aimu.tools.dispatch import dispatch

    namespace: dict = {"Literal": Literal}
    exec(TOOL_SOURCE, namespace)
    search, add = namespace["search"], namespace["add"]

    start = time.perf_counter()
    for _ in range(N_SPEC):
        tool(search)
    spec_us = (time.perf_counter() - start) / N_SPEC * 1e6

    tool(add)
    tools = {"add": add}
    call = ToolCallRequest(id="call_1", name="add", arguments={"a": "2", "b": 3})

    def policy(name, arguments):
        return True

    async def run() -> float:
        start = time.perf_counter()
        for _ in range(N_CALL):
            await dispatch(call, tools, policy=policy)
        return (time.perf_counter() - start) / N_CALL * 1e6

    dispatch_us = asyncio.run(run())
    start = time.perf_counter()
    for _ in range(N_CALL):
        add(a=2, b=3)
    direct_us = (time.perf_counter() - start) / N_CALL * 1e6
    return {"spec_us": spec_us, "dispatch_us": dispatch_us, "direct_us": direct_us}


def main() -> None:
    peer_python = ensure_peer()
    ours = measure_ours()
    script = PEER_SCRIPT.format(n_spec=N_SPEC, n_call=N_CALL)
    peer = json.loads(subprocess.run([str(peer_python), "-I", "-c", script], check=True,
                                     capture_output=True, text=True).stdout)  # fmt: skip
    ours_overhead = ours["dispatch_us"] - ours["direct_us"]
    peer_overhead = peer["dispatch_us"] - peer["direct_us"]
    print(f"{'':34}{'aimu-jupyter':>14}{'aimu 0.38':>12}{'ratio':>9}")
    rows = [
        ("spec generation per function (µs)", ours["spec_us"], peer["spec_us"]),
        ("dispatch per call (µs)", ours["dispatch_us"], peer["dispatch_us"]),
        ("dispatch overhead per call (µs)", ours_overhead, peer_overhead),
    ]
    for label, mine, theirs in rows:
        print(f"{label:34}{mine:14.2f}{theirs:12.2f}{theirs / mine:8.2f}x")
    print("(ratio = aimu 0.38 time / ours; above 1 means we are faster)")
    target = "met" if ours_overhead < 20 else "MISSED"
    print(f"target: dispatch overhead under 20 µs per call: {target}")


if __name__ == "__main__":
    main()
