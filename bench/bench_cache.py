"""Response-cache benchmark: a 10-cell notebook executed, then executed again with the cache.

Run by hand from the repository root::

    .venv/bin/python bench/bench_cache.py

Each execution is a fresh kernel driven by nbclient (as Run All, papermill and CI do). The
model is the real OpenAI SDK talking to the wire-format fake on loopback, which waits
400 ms before it answers each call (a realistic time to first token), and every cell makes
one tool call and one answer: 20 model calls. The first execution fills the cache (a
fresh file); the second, in a new kernel, should make no call. Printed: wall time and model
requests of each execution, and the ratio of the second to the first (the peer is the
same notebook without the cache, which is what the first execution costs every time). The
first agent cell of each kernel also imports the agent machinery and the SDK, so the
median cell after it is shown apart.
"""

from __future__ import annotations

import datetime
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "providers"))

from provider_wire import Reply, Request, WireServer, lookup_reply  # noqa: E402

CELLS = 10
LATENCY = 0.4


def slow_reply(request: Request) -> Reply:
    time.sleep(LATENCY)
    return lookup_reply(request)


def notebook(url: str, store: Path) -> nbformat.NotebookNode:
    setup = (
        f"%load_ext aimu\n%config AimuMagics.model = 'openai:wire-model@{url}/v1'\n"
        f"%config AimuMagics.cache = {str(store)!r}\n"
        "def lookup(topic: str) -> str:\n"
        "    'Look a figure up.'\n"
        "    return 'up 4%'\n"
        "%tool lookup"
    )
    cells = [setup] + [f"%%agent --new\nHow are sales in region {n}?" for n in range(CELLS)]
    return nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in cells],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )


def execute(url: str, store: Path, folder: Path) -> tuple[float, float, float]:
    """Wall time of the whole execution (kernel start included), of the agent cells, and
    the median agent cell after the first (which also imports the agent machinery)."""
    started = time.perf_counter()
    executed = notebook(url, store)
    NotebookClient(executed, timeout=300, resources={"metadata": {"path": str(folder)}}).execute()
    wall = time.perf_counter() - started
    cells = [_seconds(cell) for cell in executed.cells[1:]]
    return wall, sum(cells), statistics.median(cells[1:])


def _seconds(cell: nbformat.NotebookNode) -> float:
    timing = cell.metadata["execution"]
    began = datetime.datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
    ended = datetime.datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
    return (ended - began).total_seconds()


def main() -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AIMU_")}
    os.environ.clear()
    os.environ.update(environment)
    with tempfile.TemporaryDirectory() as folder, WireServer(default=slow_reply) as wire:
        store = Path(folder) / "answers.sqlite"
        first, first_cells, first_cell = execute(wire.url, store, Path(folder))
        asked_first = len(wire.requests)
        again, again_cells, again_cell = execute(wire.url, store, Path(folder))
        asked_again = len(wire.requests) - asked_first
    print(f"{CELLS} %%agent cells, {LATENCY * 1000:.0f} ms per model call, fresh kernel each")
    print("                    notebook wall   agent cells   median cell   model requests")
    for label, wall, cells, cell, asked in (
        ("first execution", first, first_cells, first_cell, asked_first),
        ("executed again ", again, again_cells, again_cell, asked_again),
    ):
        print(f"  {label}  {wall:10.2f} s  {cells:10.2f} s  {cell:10.3f} s  {asked:12d}")
    print(
        f"  ratio again / first: wall {again / first:.2f}, agent cells "
        f"{again_cells / first_cells:.2f}, median cell {again_cell / first_cell:.3f} "
        f"(x{first_cell / again_cell:.0f} faster)"
    )


if __name__ == "__main__":
    main()
