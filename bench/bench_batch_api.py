"""Batch API benchmark, run by hand: the provider batch backend against the concurrent one.

1,000 single-turn items, each with 500 input and 50 output tokens, priced as gpt-4o-mini
($0.15 / $0.60 per million tokens; the Batch API bills half):

1. ``backend="openai-batch"`` against the OpenAI Batch API fake
   (``tests/providers/batch_wire.py``), whose batch takes 60 simulated seconds to complete.
   The fake's clock runs ``--speed`` times faster than real time, so the minute passes in a
   second or so; the figure at real speed is the simulated completion plus the measured
   overhead.
2. the same items on the concurrent local backend (concurrency 16) against a Chat
   Completions server taking ``--delay`` seconds per call (``tests/batch/ticket_server.py``).

For each: HTTP requests made, wall time, and cost (list vs batch prices), measured in the
same run.

    .venv/bin/python bench/bench_batch_api.py [--items 1000] [--speed 60] [--delay 0.2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "batch"))
sys.path.insert(0, str(ROOT / "tests" / "providers"))

USAGE = (500, 50)
COMPLETION = 60.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--speed", type=float, default=60.0)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()

    from batch_wire import Clock, OpenAIBatchFake
    from ticket_server import TicketServer

    import aimu

    aimu.prices["openai:wire"] = (0.15, 0.60)  # gpt-4o-mini's list price
    items = [{"text": f"ticket {i}: disk full"} for i in range(args.items)]
    print(f"{args.items} single-turn items, {USAGE[0]} in / {USAGE[1]} out tokens each, "
          "priced as gpt-4o-mini")  # fmt: skip

    fake = OpenAIBatchFake(latency=COMPLETION, clock=Clock(speed=args.speed), usage=USAGE)
    agent = aimu.Agent(aimu.client("openai:wire", base_url=fake.url, api_key="sk-bench"))
    poll = 0.25
    started = time.perf_counter()
    batched = aimu.batch("Classify: {text}", items, agent=agent, backend="openai-batch",
                         poll_interval=poll, progress=False)  # fmt: skip
    batch_wall = time.perf_counter() - started
    fake.close()
    assert len(batched) == args.items and not batched.failed, batched
    overhead = max(0.0, batch_wall - COMPLETION / args.speed)
    batch_requests = len(fake.requests)

    server = TicketServer(delay=args.delay, usage=USAGE)
    agent = aimu.Agent(aimu.client(f"openai:wire@{server.url}", max_retries=0))
    started = time.perf_counter()
    direct = aimu.batch("Classify: {text}", items, agent=agent, concurrency=args.concurrency,
                        progress=False)  # fmt: skip
    direct_wall = time.perf_counter() - started
    server.wire.close()
    assert len(direct) == args.items and not direct.failed, direct
    direct_requests = len(server.wire.requests)

    print(f"  openai-batch: {batch_requests:>5} requests (1 upload, 1 create, polls every "
          f"{poll} s, output download), wall {batch_wall:6.2f} s (the "
          f"{COMPLETION:.0f} s completion "
          f"compressed to {COMPLETION / args.speed:.1f} s; at real speed {COMPLETION:.0f} s + "
          f"{overhead:.2f} s of local work), "
          f"cost ${batched.cost:.4f} (batch prices)")  # fmt: skip
    print(f"  concurrent:   {direct_requests:>5} requests ({args.concurrency} at once, "
          f"{args.delay * 1000:.0f} ms each), wall {direct_wall:6.2f} s, "
          f"cost ${direct.cost:.4f} (list prices)")  # fmt: skip
    print(f"  batch / concurrent: requests {batch_requests / direct_requests:.3f}x, "
          f"cost {batched.cost / direct.cost:.2f}x, wall at real speed "
          f"{(COMPLETION + overhead) / direct_wall:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
