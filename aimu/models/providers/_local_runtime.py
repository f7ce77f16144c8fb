"""The embedded model's process, seen from here: start it, ask it, stop it, outlive it.

llama-cpp-python runs in :mod:`._local_worker`, a process of its own, so that a fault in
native code (a CPU feature the OS lists but the machine does not enable, a build for
another CPU) costs the model and never the caller: a Jupyter kernel keeps the user's
variables, a test suite reports one failing test. A crash is a :class:`RuntimeCrashed` that
says what happened and how to go on; the next request starts a new process.

Before the first process on a machine loads a model with llama.cpp's extra buffer types
(weight repacking, AMX tiles: the path that faulted on a Xeon VM), a probe process proves
that they work here; the verdict is kept per CPU and build in the user's cache folder.
The bundled Q4_1 model is converted once to Q8_0 (a second, larger file in the same cache),
which has llama.cpp's fast matrix path for prompts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import selectors
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aimu._child_env import child_env
from aimu.models.errors import ModelError

WORKER = Path(__file__).with_name("_local_worker.py")
#: Variables the model's process needs besides the allowlist (to find its packages and
#: to keep the OpenBLAS settings this machine may need). No secret is among them.
PASSTHROUGH = ("PYTHONPATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "OPENBLAS_CORETYPE",
               "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "XDG_CACHE_HOME")  # fmt: skip
STARTUP_TIMEOUT = 120.0
PROBE_TIMEOUT = 120.0
_POLL = 0.05
_REINSTALL = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall --no-cache-dir llama-cpp-python'
)


class RuntimeCrashed(ModelError):
    """The embedded model's process ended while it was loading or answering.

    The caller's process is unharmed; the next request starts the model again.
    """


class WorkerError(ModelError):
    """The model's process reported an exception (``kind`` is its type name)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class LoadOptions:
    """What identifies one loaded model: the file and how its context is set up."""

    path: str
    n_ctx: int
    n_threads: int | None
    n_gpu_layers: int
    chat_format: str | None


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/aimu`` (default ``~/.cache/aimu``): probe verdicts, fast copies."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "aimu"


def _spawn(*args: str) -> subprocess.Popen:
    env = child_env(PASSTHROUGH)
    return subprocess.Popen(
        [sys.executable, "-u", str(WORKER), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        close_fds=True,
    )


def _ending(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"crashed ({signal.Signals(-returncode).name})"
        return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _build_key() -> str:
    """This CPU and this build of llama-cpp-python, as a short digest."""
    import llama_cpp

    try:
        cpu = Path("/proc/cpuinfo").read_text(errors="replace")
        flags = sorted(
            {
                line
                for line in cpu.splitlines()
                if line.startswith(("flags", "Features", "model name"))
            }
        )
    except OSError:
        flags = [platform.processor()]
    library = Path(llama_cpp.__file__).parent / "lib"
    builds = sorted(
        f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in library.glob("*.so*")
    )
    text = json.dumps([platform.machine(), flags, llama_cpp.__version__, builds])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


_verdicts: dict[str, bool] = {}
_verdict_lock = threading.Lock()


def extra_buffers_proven(model: str) -> bool:
    """Whether llama.cpp's extra buffer types run here: proven once per CPU and build.

    The probe is a process of its own that loads ``model`` with them and runs one prompt;
    a fault there only means "not here". ``AIMU_LOCAL_EXTRA_BUFFERS=0|1`` decides instead.
    """
    chosen = os.environ.get("AIMU_LOCAL_EXTRA_BUFFERS", "").strip()
    if chosen in ("0", "1"):
        return chosen == "1"
    with _verdict_lock:
        key = _build_key()
        if key in _verdicts:
            return _verdicts[key]
        record = cache_folder() / "probes" / f"extra-buffers-{key}.json"
        try:
            verdict = bool(json.loads(record.read_text())["works"])
        except (OSError, ValueError, KeyError, TypeError):
            verdict = _probe(model)
            with contextlib.suppress(OSError):
                record.parent.mkdir(parents=True, exist_ok=True)
                record.write_text(json.dumps({"works": verdict}))
        _verdicts[key] = verdict
        return verdict


def _probe(model: str) -> bool:
    process = _spawn("--probe", model)
    try:
        process.communicate(timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return False
    return process.returncode == 0


def fast_copy(path: Path) -> Path:
    """``path`` converted once to Q8_0 in the cache folder (``path`` when that fails).

    Q4_1 has no fast matrix path for prompt processing in llama.cpp's CPU backend; Q8_0
    processes prompts about 1.7× as fast for a file 1.5× the size. The conversion runs in
    the model's own process and is written under a temporary name, then renamed.
    """
    stat = path.stat()
    digest = hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    target = cache_folder() / "models" / f"{path.stem}.{digest.hexdigest()[:12]}.q8_0.gguf"
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return path
    partial = target.with_suffix(f".{os.getpid()}.partial")
    process = _spawn("--quantize", str(path), str(partial))
    try:
        process.communicate(timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
    if process.returncode == 0 and partial.is_file():
        os.replace(partial, target)
        return target
    with contextlib.suppress(OSError):
        partial.unlink()
    return path


class Runtime:
    """One model in its own process; requests run one at a time on :attr:`thread`."""

    def __init__(self, options: LoadOptions, *, extra_buffers: bool):
        self.options = options
        self.extra_buffers = extra_buffers
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="aimu-local")
        self.parameters = 0
        #: ``(prompt, completion, finish)`` of the last completion, cancelled ones included.
        self.last_end: tuple[int, int, str | None] | None = None
        self._process: subprocess.Popen | None = None
        self._buffer = b""
        self._stderr: deque[str] = deque(maxlen=20)
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The model process's id while one runs."""
        process = self._process
        return process.pid if process and process.poll() is None else None

    def start(self) -> None:
        """Start the process and load the model, unless that is done (call on :attr:`thread`)."""
        if self._process is not None and self._process.poll() is None:
            return
        if self._closed:
            raise ModelError("the local model was closed")
        self._buffer = b""
        self._process = _spawn()
        threading.Thread(target=self._drain, args=(self._process,), daemon=True).start()
        options = self.options
        self._send({"op": "load", "path": options.path, "n_ctx": options.n_ctx,
                    "n_threads": options.n_threads, "n_gpu_layers": options.n_gpu_layers,
                    "chat_format": options.chat_format,
                    "extra_bufts": self.extra_buffers})  # fmt: skip
        reply = next(self._replies(threading.Event(), timeout=STARTUP_TIMEOUT))
        if "error" in reply:
            self._stop()
            raise WorkerError(reply["error"]["type"], reply["error"]["message"])
        self.parameters = int(reply["loaded"]["parameters"])

    def complete(
        self,
        messages: list[dict[str, Any]],
        schema: str | None,
        params: dict[str, Any],
        on_text: Callable[[str], None],
        stop: threading.Event,
    ) -> tuple[int, int, str | None]:
        """Run one chat completion; ``on_text`` gets each piece; ``stop`` cancels it."""
        self.start()
        self._send({"op": "complete", "messages": messages, "schema": schema, "params": params})
        for reply in self._replies(stop):
            if "text" in reply:
                on_text(reply["text"])
            elif "end" in reply:
                prompt, completion, finish = reply["end"]
                self.last_end = (int(prompt), int(completion), finish)
                return self.last_end
            else:
                raise WorkerError(reply["error"]["type"], reply["error"]["message"])
        raise AssertionError("unreachable: replies end in a reply or raise")

    def close(self) -> None:
        self._closed = True
        self.thread.shutdown(wait=True, cancel_futures=True)
        self._stop()

    def _send(self, message: dict[str, Any]) -> None:
        process = self._process
        assert process is not None and process.stdin is not None
        try:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._crashed() from None

    def _replies(self, stop: threading.Event, timeout: float | None = None):
        """Replies as they arrive; a stop is sent on as a cancel (once)."""
        process = self._process
        assert process is not None and process.stdout is not None
        fd = process.stdout.fileno()
        waited = 0.0
        cancelled = False
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                while b"\n" in self._buffer:
                    line, _, self._buffer = self._buffer.partition(b"\n")
                    yield json.loads(line)
                if stop.is_set() and not cancelled:
                    cancelled = True
                    self._send({"op": "cancel"})
                if not selector.select(_POLL):
                    waited += _POLL
                    if timeout is not None and waited > timeout:
                        self._stop()
                        raise self._crashed()
                    continue
                data = os.read(fd, 1 << 16)
                if not data:
                    raise self._crashed()
                self._buffer += data

    def _crashed(self) -> RuntimeCrashed:
        process = self._process
        returncode = None
        if process is not None:
            try:
                returncode = process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._stop()
        self._process = None
        import llama_cpp

        name = Path(self.options.path).name
        return RuntimeCrashed(
            f"the embedded model's runtime {_ending(returncode)} while running {name} "
            f"(llama-cpp-python {llama_cpp.__version__}); this kernel and its variables are "
            "fine, and the next request starts the model again. If it happens again, this "
            f"build of llama-cpp-python does not suit this CPU: reinstall it portably "
            f"({_REINSTALL}), or use another model (AIMU_MODEL=openai:gpt-4o-mini, "
            "ollama:qwen3:8b, or %%agent --model ...)"
        )

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _drain(self, process: subprocess.Popen) -> None:
        """Keep the last lines the native library wrote to stderr (for :meth:`stderr`)."""
        assert process.stderr is not None
        for line in process.stderr:
            self._stderr.append(line.decode(errors="replace").rstrip())

    def stderr(self) -> list[str]:
        """The last lines the model's process wrote to stderr."""
        return list(self._stderr)
