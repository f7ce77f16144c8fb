"""Built-in tools: execute_python round trip and calculate throughput, vs aimu 0.38.

Run by hand from the repository root:

    .venv/bin/python bench/bench_builtin.py

The peer is aimu 0.38 from PyPI in its own virtualenv, bench/.venvs/aimu038 (created here
under a file lock if no other bench has made it yet). Both sides run the same worker script,
each in its own interpreter started from a scratch directory, in alternating rounds; the best
round of each is reported (this machine is shared, so the best round is the least disturbed).
calculate's throughput is the best of 20 batches of 2,000 calls over five expressions.
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PEER = ROOT / ".venvs" / "aimu038"
PEER_PYTHON = PEER / "bin" / "python"
OURS_PYTHON = Path(sys.executable)
ROUNDS = 3

WORKER = r"""
import json, statistics, sys, time
from aimu.tools.builtin import calculate, execute_python, execute_python_in_process

SNIPPET = "x = 21\nprint(x * 2)"
EXPRESSIONS = ["(1250 * 1.08) / 12", "round(2**0.5, 4)", "sqrt(16) + log10(1000)",
               "2**100 % 7", "max(3, 1, 2) * pi"]

def latencies(fn, arg, n):
    fn(arg)
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn(arg)
        out.append(time.perf_counter() - start)
    return out

def throughput(fn, args, batches=20, loops=400):
    best = float("inf")
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(loops):
            for a in args:
                fn(a)
        best = min(best, time.perf_counter() - start)
    return loops * len(args) / best

sub = latencies(execute_python, SNIPPET, int(sys.argv[1]))
inproc = latencies(execute_python_in_process, SNIPPET, 2000)
print(json.dumps({
    "execute_python_median_ms": statistics.median(sub) * 1e3,
    "execute_python_p90_ms": statistics.quantiles(sub, n=10)[-1] * 1e3,
    "in_process_median_us": statistics.median(inproc) * 1e6,
    "calculate_calls_per_s": throughput(calculate, EXPRESSIONS),
}))
"""


def ensure_peer() -> None:
    """Create the aimu 0.38 virtualenv once, under the lock other bench scripts also take."""
    PEER.parent.mkdir(parents=True, exist_ok=True)
    with open(PEER.parent / "aimu038.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        check = [str(PEER_PYTHON), "-I", "-c", "import aimu.tools.builtin"]
        if PEER_PYTHON.exists() and subprocess.run(check, capture_output=True).returncode == 0:
            return
        venv.create(PEER, with_pip=True)
        pip = [str(PEER_PYTHON), "-m", "pip", "install", "--quiet", "aimu==0.38.0"]
        subprocess.run(pip, check=True)


def measure(python: Path, scratch: str, n: int) -> dict:
    done = subprocess.run(
        [str(python), "-I", "-c", WORKER, str(n)],
        cwd=scratch,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{python} worker failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def best(rounds: list[dict]) -> dict:
    return {
        "execute_python_median_ms": min(r["execute_python_median_ms"] for r in rounds),
        "execute_python_p90_ms": min(r["execute_python_p90_ms"] for r in rounds),
        "in_process_median_us": min(r["in_process_median_us"] for r in rounds),
        "calculate_calls_per_s": max(r["calculate_calls_per_s"] for r in rounds),
    }


def main() -> None:
    ensure_peer()
    ours_rounds, peer_rounds = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(ROUNDS):
            ours_rounds.append(measure(OURS_PYTHON, scratch, 40))
            peer_rounds.append(measure(PEER_PYTHON, scratch, 40))
    ours, peer = best(ours_rounds), best(peer_rounds)
    rows = [
        ("execute_python round trip, median", "execute_python_median_ms", "ms", False),
        ("execute_python round trip, p90", "execute_python_p90_ms", "ms", False),
        ("execute_python_in_process, median", "in_process_median_us", "us", False),
        ("calculate throughput", "calculate_calls_per_s", "calls/s", True),
    ]
    print(f"{'':36} {'ours':>18} {'aimu 0.38':>18}   ratio (>1: ours better)")
    for label, key, unit, higher_is_better in rows:
        ratio = ours[key] / peer[key] if higher_is_better else peer[key] / ours[key]
        mine, theirs = f"{ours[key]:.1f} {unit}", f"{peer[key]:.1f} {unit}"
        print(f"{label:36} {mine:>18} {theirs:>18}   {ratio:.2f}x")


if __name__ == "__main__":
    main()
