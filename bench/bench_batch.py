"""Batch benchmark, run by hand.

200 items against a Chat Completions server in another process that takes 50 ms per model
call (``tests/batch/ticket_server.py``), one agent run (one model call) per item:

1. wall time at concurrency 1 against concurrency 16 (the goal is at least 12x faster);
2. the same batch at concurrency 16 on a local Ray cluster (2 CPUs, started before timing),
   and the overhead per item Ray adds over the local backend.

The peer of each figure is measured in the same run, back to back.

    .venv/bin/python bench/bench_batch.py [--items 200] [--delay 0.05] [--skip-ray]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "batch"))


def serve(delay: float) -> None:
    from ticket_server import TicketServer

    server = TicketServer(delay=delay)
    print(server.url, flush=True)
    threading.Event().wait()


def timed(label: str, items: list[dict], url: str, **options: object) -> float:
    import aimu

    agent = aimu.Agent(aimu.client(f"openai:wire@{url}", max_retries=0))
    started = time.perf_counter()
    result = aimu.batch("Classify: {text}", items, agent=agent, progress=False, **options)
    elapsed = time.perf_counter() - started
    assert len(result) == len(items) and not result.failed, result
    print(f"  {label:<28} {elapsed:7.3f} s")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.delay)
        return

    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--delay", str(args.delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().strip()
        items = [{"text": f"ticket {i}: disk full"} for i in range(args.items)]
        print(f"{args.items} items, {args.delay * 1000:.0f} ms per model call, server {url}")
        timed("warm-up (concurrency 16)", items[:32], url, concurrency=16)
        serial = timed("concurrency 1", items, url, concurrency=1)
        parallel = timed("concurrency 16", items, url, concurrency=16)
        print(f"  speed-up 16 vs 1: {serial / parallel:.1f}x (goal >= 12x; ideal 16x)")
        if not args.skip_ray:
            import ray

            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            timed("ray warm-up (16)", items[:32], url, concurrency=16, backend="ray")
            local = timed("local, concurrency 16", items, url, concurrency=16)
            remote = timed("ray, concurrency 16", items, url, concurrency=16, backend="ray")
            per_item = (remote - local) / len(items) * 1000
            print(f"  ray / local: {remote / local:.2f}x; Ray adds {per_item:.2f} ms per item "
                  "(actors started during the warm-up)")  # fmt: skip
            ray.shutdown()
    finally:
        server.kill()


if __name__ == "__main__":
    main()
