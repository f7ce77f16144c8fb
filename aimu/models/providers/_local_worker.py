"""The embedded model's own process: llama-cpp-python runs here, never in the caller's.

    python _local_worker.py                     # serve requests on stdin/stdout
    python _local_worker.py --probe MODEL.gguf  # exit 0: the extra buffer types work here
    python _local_worker.py --quantize MODEL.gguf COPY.gguf

Native code can fault on CPUs whose features the OS lists but the machine does not enable
(AMX tile instructions on some Xeon VMs): in this process a fault costs only the model, and
the caller (:mod:`._local_runtime`) reports it and starts a new one on the next call.

Requests and replies are JSON lines. ``{"op": "load", ...}`` loads a model and answers
``{"loaded": {"parameters": N}}``; ``{"op": "complete", "messages", "schema", "params"}``
streams ``{"text": piece}`` lines, then ``{"end": [prompt, completion, finish]}`` or
``{"error": {...}}``; ``{"op": "cancel"}`` stops the completion under way at its next token.
It is started by path, not as a module, so it imports nothing of ``aimu``.
The protocol has its own file descriptor: whatever the native library prints goes to stderr.
SIGINT is ignored (a kernel interrupt signals the whole process group): the caller cancels.

``--quantize SOURCE TARGET`` writes a Q8_0 copy of a model. ``--probe`` loads the model
*with* the extra buffer types (weight repacking, AMX) and runs one prompt: exit status 0
proves that path works on this CPU with this build.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import queue
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

#: Enough tokens to go through the batched matrix paths (where AMX faulted) in a probe.
PROBE_PROMPT = " ".join(["The lighthouse keeper counted the ships that passed the rock."] * 6)


@contextlib.contextmanager
def _extra_buffer_types(enabled: bool) -> Iterator[None]:
    """Load models with (or without) llama.cpp's extra buffer types (repacking, AMX)."""
    import llama_cpp.llama_cpp as native

    original = native.llama_model_default_params

    def params() -> Any:
        chosen = original()
        if hasattr(chosen, "use_extra_bufts"):
            chosen.use_extra_bufts = enabled
        return chosen

    native.llama_model_default_params = params
    try:
        yield
    finally:
        native.llama_model_default_params = original


def load(request: dict[str, Any]) -> Any:
    """A ``llama_cpp.Llama`` as the load request describes, with its prefix cache set."""
    import llama_cpp

    with _extra_buffer_types(bool(request.get("extra_bufts"))):
        llm = llama_cpp.Llama(
            model_path=request["path"],
            n_ctx=request["n_ctx"],
            n_threads=request.get("n_threads"),
            n_threads_batch=request.get("n_threads"),
            n_gpu_layers=request["n_gpu_layers"],
            chat_format=request.get("chat_format"),
            verbose=False,
        )
    # States by token prefix: a conversation's next turn, and the answer after a decision,
    # start from the longest prefix already computed instead of from the first token.
    llm.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=request.get("cache_bytes", 256 << 20)))
    return llm


@functools.lru_cache(maxsize=32)
def _grammar(schema: str) -> Any:
    import llama_cpp

    return llama_cpp.LlamaGrammar.from_json_schema(schema, verbose=False)


class Worker:
    """Serves one loaded model to the requests of one caller, one completion at a time."""

    def __init__(self, replies: BinaryIO):
        self.replies = replies
        self.llm: Any = None
        self.stop = threading.Event()
        self.requests: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def send(self, message: dict[str, Any]) -> None:
        self.replies.write(json.dumps(message).encode() + b"\n")
        self.replies.flush()

    def read(self, source: BinaryIO) -> None:
        """Queue requests from ``source``; a cancel acts at once. The caller gone: exit."""
        for line in source:
            request = json.loads(line)
            if request.get("op") == "cancel":
                self.stop.set()
            else:
                self.requests.put(request)
        os._exit(0)

    def serve(self) -> None:
        while (request := self.requests.get()) is not None:
            try:
                if request["op"] == "load":
                    self.llm = load(request)
                    import llama_cpp

                    parameters = llama_cpp.llama_model_n_params(self.llm.model)
                    self.send({"loaded": {"parameters": parameters}})
                elif request["op"] == "complete":
                    self.stop.clear()
                    self.complete(request)
                else:
                    raise ValueError(f"unknown request {request['op']!r}")
            except Exception as exc:
                self.send({"error": {"type": type(exc).__name__, "message": str(exc)}})

    def complete(self, request: dict[str, Any]) -> None:
        llm = self.llm
        schema = request.get("schema")
        chunks = llm.create_chat_completion(
            messages=request["messages"],
            grammar=_grammar(schema) if schema else None,
            stream=True,
            **request.get("params", {}),
        )
        produced = 0
        finish = None
        try:
            for chunk in chunks:
                choice = chunk["choices"][0]
                text = choice["delta"].get("content")
                if text:
                    produced += 1
                    self.send({"text": text})
                finish = choice.get("finish_reason") or finish
                if self.stop.is_set():
                    break
        finally:
            chunks.close()
        self.send({"end": [max(llm.n_tokens - produced, 0), produced, finish]})


def probe(path: str) -> int:
    """Exit status 0 when a prompt runs with the extra buffer types on this CPU."""
    llm = load({"path": path, "n_ctx": 512, "n_gpu_layers": 0, "extra_bufts": True})
    llm.create_completion(PROBE_PROMPT, max_tokens=4, temperature=0.0)
    return 0


def quantize(source: str, target: str) -> int:
    """Write ``source`` requantized to Q8_0 at ``target``; exit status 0 on success."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    params.nthread = _threads()
    return int(
        llama_cpp.llama_model_quantize(source.encode(), target.encode(), ctypes.byref(params))
    )


def _threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The protocol keeps the real stdout; anything native code prints lands on stderr.
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    if argv[:1] == ["--probe"]:
        return probe(argv[1])
    if argv[:1] == ["--quantize"]:
        return quantize(argv[1], argv[2])
    worker = Worker(replies)
    threading.Thread(target=worker.read, args=(sys.stdin.buffer,), daemon=True).start()
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
