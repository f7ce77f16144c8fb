"""The embedded model on this machine: llama.cpp driven directly, against ours, in one run.

1. llama.cpp itself (llama-cpp-python, in a process of its own) on the shipped Q4_1 file
   and on the Q8_0 copy ``local`` loads: prompt processing and decoding, tokens per second.
2. Our overhead per turn: the same chat request through ``LocalClient`` (its own model
   process, JSON lines in between) and through ``Llama.create_chat_completion`` directly.
3. Notebook 1's local cells, executed headless as ``scripts/run`` does, each run's time from
   its record: with another tree's code first on the path (``--before /path/to/tree``, e.g.
   the last release's checkout) and with this one's.

    .venv/bin/python bench/bench_local.py [--before ../main] [--rounds 3]

Runs interleave, so both sides share the machine's state; medians are printed with ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DIRECT = textwrap.dedent(
    """
    import json, sys, time
    import llama_cpp
    path, rounds = sys.argv[1], int(sys.argv[2])
    llm = llama_cpp.Llama(path, n_ctx=4096, n_threads=2, n_threads_batch=2, verbose=False)
    text = " ".join(["The lighthouse keeper counted the ships that passed the rock."] * 75)
    tokens = llm.tokenize(text.encode())[:932]  # the size of notebook 1's date prompt
    prompt, decode = [], []
    for _ in range(rounds):
        llm.reset()
        start = time.perf_counter()
        llm.eval(tokens)
        prompt.append(len(tokens) / (time.perf_counter() - start))
        start = time.perf_counter()
        n = 0
        for _ in llm.generate(tokens[:64], temp=0.0, reset=True):
            n += 1
            if n == 128:
                break
        decode.append(n / (time.perf_counter() - start))
    print(json.dumps({"prompt": prompt, "decode": decode}))
    """
)

TURN = textwrap.dedent(
    """
    import asyncio, json, sys, time
    import llama_cpp
    from aimu.models.providers import local
    from aimu.models.providers._local_runtime import fast_copy
    rounds = int(sys.argv[1])
    messages = [{"role": "user", "content": "Say this more simply: The meeting is postponed."}]
    client = local.LocalClient(temperature=0.0, seed=1, max_tokens=32)

    async def ours():
        start = time.perf_counter()
        async for _ in client.stream(messages):
            pass
        return time.perf_counter() - start

    asyncio.run(ours())  # start the model process, warm up
    llm = llama_cpp.Llama(str(fast_copy(client.path)), n_ctx=4096, n_threads=2,
                          n_threads_batch=2, verbose=False)
    prompt = local.render(messages, None)

    def direct():
        start = time.perf_counter()
        for _ in llm.create_chat_completion(prompt, stream=True, temperature=0.0, seed=1,
                                            max_tokens=32, repeat_penalty=1.1):
            pass
        return time.perf_counter() - start

    direct()
    rows = {"ours": [], "direct": []}
    for _ in range(rounds):
        rows["ours"].append(asyncio.run(ours()))
        rows["direct"].append(direct())
    print(json.dumps(rows))
    """
)


def python_with(tree: Path | None) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return [sys.executable, "-c"], env


def run_json(code: str, *args: str, tree: Path | None = None) -> dict:
    command, env = python_with(tree)
    out = subprocess.run([*command, code, *args], capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def notebook_runs(tree: Path) -> list[tuple[str, float]]:
    """``(prompt's first line, seconds)`` of each local run of notebook 1, run with ``tree``."""
    code = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {str(tree / "scripts")!r})
        import course
        nb = course.execute(course.FIRST)
        print(json.dumps([[r["prompt"].splitlines()[0][:60], r["duration_s"]]
                          for _, r, _ in course.agent_runs(nb) if r["model"] == "local"]))
        """
    )
    return [tuple(row) for row in run_json(code, tree=tree)]


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout to compare notebook 1 with")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from aimu.models.providers import local
    from aimu.models.providers._local_runtime import fast_copy

    shipped = local.model_path()
    q8 = fast_copy(shipped)
    print(f"1. llama.cpp directly, 2 threads, a 932-token prompt, {args.rounds} rounds (median)")
    rows = {name: run_json(DIRECT, str(path), str(args.rounds))
            for name, path in (("Q4_1 (shipped)", shipped), ("Q8_0 (loaded)", q8))}  # fmt: skip
    for name, row in rows.items():
        print(f"   {name:15} prompt {median(row['prompt']):6.0f} tok/s   "
              f"decode {median(row['decode']):5.1f} tok/s")  # fmt: skip
    q4, q8row = rows["Q4_1 (shipped)"], rows["Q8_0 (loaded)"]
    print(f"   ratio Q8_0 / Q4_1: prompt {median(q8row['prompt']) / median(q4['prompt']):.2f}x, "
          f"decode {median(q8row['decode']) / median(q4['decode']):.2f}x")  # fmt: skip

    turn = run_json(TURN, str(args.rounds * 3), tree=ROOT)
    ours, direct = median(turn["ours"]), median(turn["direct"])
    print("\n2. One short turn (32 tokens at most), ours against create_chat_completion")
    print(f"   ours {ours * 1000:7.1f} ms   direct {direct * 1000:7.1f} ms   "
          f"overhead {(ours - direct) * 1000:+.1f} ms ({ours / direct:.2f}x)")  # fmt: skip

    print("\n3. Notebook 1's local cells, seconds per run (executed headless, fresh kernel)")
    trees = [("before", args.before.resolve())] if args.before else []
    trees.append(("now", ROOT))
    timings: dict[str, list[list[tuple[str, float]]]] = {name: [] for name, _ in trees}
    for _ in range(max(1, args.rounds // 2)):
        for name, tree in trees:
            timings[name].append(notebook_runs(tree))
    prompts = [prompt for prompt, _ in timings["now"][0]]
    header = "   " + "".join(f"{name:>9}" for name, _ in trees) + "   prompt"
    print(header)
    for i, prompt in enumerate(prompts):
        cells = "".join(
            f"{median([runs[i][1] for runs in timings[name]]):9.2f}" for name, _ in trees
        )
        print(f"   {cells}   {prompt}")
    slowest = max(median([runs[i][1] for runs in timings["now"]]) for i in range(len(prompts)))
    print(f"   slowest local cell now: {slowest:.2f} s (goal: under 1.5 s)")


if __name__ == "__main__":
    main()
