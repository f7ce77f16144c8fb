"""GenerationOptions on the wire: thinking, sampling options, response formats, overflow.

Each provider runs against a loopback server speaking its real wire format; the assertions
read the JSON request body the server received and the events the client produced.
"""

from __future__ import annotations

import json

import pytest
from provider_wire import (
    anthropic_turn,
    collect,
    json_error,
    ollama_ndjson,
    ollama_turn,
    openai_chunk,
    openai_sse,
    openai_turn,
    tool_spec,
)

import aimu
from aimu.models import ContextOverflowError, TextDelta, ThinkingDelta, ToolCallRequest, TurnEnd
from aimu.models.base import GenerationOptions
from aimu.models.errors import UnsupportedOptionError

ASK = [{"role": "user", "content": "Who booked?"}]
BOOKING = {
    "name": "booking",
    "schema": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "people": {"type": "integer"}},
        "required": ["name", "people"],
        "additionalProperties": False,
    },
}


def openai(server, **options):
    return aimu.client(f"openai:wire-model@{server.url}/v1", **options)


def claude(server, **options):
    return aimu.client("anthropic:claude-wire", base_url=server.url, api_key="k-1234", **options)


def ollama(server, **options):
    return aimu.client(f"ollama:qwen3:8b@{server.url}", retry_backoff=0.01, **options)


def text_of(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def thinking_of(events) -> str:
    return "".join(e.text for e in events if isinstance(e, ThinkingDelta))


# -- options are frozen values that check themselves ------------------------------------------


def test_thinking_levels_are_checked_and_true_means_medium():
    assert GenerationOptions(thinking=True).thinking_level == "medium"
    assert GenerationOptions(thinking="high").thinking_level == "high"
    assert GenerationOptions(thinking=False).thinking_level is None
    with pytest.raises(ValueError, match="low, medium, high"):
        GenerationOptions(thinking="extreme")


def test_response_format_must_name_a_schema():
    with pytest.raises(ValueError, match='"name": str, "schema"'):
        GenerationOptions(response_format={"schema": {}})


async def test_scripted_model_records_the_options_it_received():
    model = aimu.client("scripted", turns=["ok"], default_generate_kwargs={"seed": 2})
    options = GenerationOptions(thinking="low", generate_kwargs={"temperature": 0.1})
    await collect(model, ASK, None, options)
    assert model.requests[0]["options"] is options
    assert model.clone().default_generate_kwargs == {"seed": 2}


# -- OpenAI and compatible servers --------------------------------------------------------------


async def test_openai_request_carries_reasoning_effort_sampling_and_json_schema(server):
    server.script(openai_turn('{"name": "Ada", "people": 2}', reasoning="Read the note."))
    client = openai(server, default_generate_kwargs={"temperature": 0.7, "seed": 1})
    options = GenerationOptions(
        thinking="high",
        generate_kwargs={"temperature": 0.2, "max_tokens": 50, "stop": ["\n\n"]},
        response_format=BOOKING,
    )
    events = await collect(client, ASK, None, options)
    body = server.bodies[0]
    assert body["reasoning_effort"] == "high"
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.2, 1, 50)
    assert body["stop"] == ["\n\n"]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "booking", "schema": BOOKING["schema"], "strict": True},
    }
    assert thinking_of(events) == "Read the note."
    assert json.loads(text_of(events)) == {"name": "Ada", "people": 2}


async def test_openai_thinking_true_is_medium_and_false_is_none(server):
    server.script(openai_turn("a"), openai_turn("b"))
    client = openai(server)
    await collect(client, ASK, None, GenerationOptions(thinking=True))
    await collect(client, ASK, None, GenerationOptions(thinking=False))
    assert [b["reasoning_effort"] for b in server.bodies] == ["medium", "none"]


async def test_openai_schema_that_strict_mode_refuses_is_sent_not_strict(server):
    server.script(openai_turn("{}"))
    loose = {"name": "notes", "schema": {"type": "object", "properties": {"x": {}}}}
    await collect(openai(server), ASK, None, GenerationOptions(response_format=loose))
    assert server.bodies[0]["response_format"]["json_schema"]["strict"] is False


async def test_openai_reasoning_field_of_compatible_servers_streams_as_thinking(server):
    chunks = [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"reasoning": "vLLM and Ollama /v1 "}),
        openai_chunk({"reasoning": "call it reasoning."}),
        openai_chunk({"content": "Done."}),
        openai_chunk({}, "stop"),
    ]
    server.script(openai_sse(chunks))
    events = await collect(openai(server), ASK, None, GenerationOptions(thinking="low"))
    assert thinking_of(events) == "vLLM and Ollama /v1 call it reasoning."
    assert text_of(events) == "Done."


async def test_openai_tools_and_response_format_go_in_one_request(server):
    server.script(openai_turn("", [("call_1", "add", '{"a": 1, "b": 2}')]))
    options = GenerationOptions(response_format=BOOKING)
    events = await collect(openai(server), ASK, [tool_spec()], options)
    assert server.bodies[0]["tools"][0]["function"]["name"] == "add"
    assert server.bodies[0]["response_format"]["type"] == "json_schema"
    assert any(isinstance(e, ToolCallRequest) for e in events)


async def test_openai_unknown_generation_option_names_the_provider_and_accepted_names(server):
    with pytest.raises(UnsupportedOptionError, match=r"openai: unknown generation option 'tempo'"):
        await collect(openai(server), ASK, None, GenerationOptions(generate_kwargs={"tempo": 1}))
    with pytest.raises(UnsupportedOptionError, match=r"accepted: .*temperature"):
        openai(server, default_generate_kwargs={"tempo": 1})
    assert server.requests == []


async def test_openai_server_refusing_reasoning_effort_is_a_clear_error(server):
    refusal = {
        "error": {
            "message": "Unsupported parameter: 'reasoning_effort' is not supported with this "
            "model.",
            "type": "invalid_request_error",
            "param": "reasoning_effort",
            "code": "unsupported_parameter",
        }
    }
    server.script(json_error(400, refusal))
    with pytest.raises(UnsupportedOptionError, match="cannot think as asked"):
        await collect(openai(server), ASK, None, GenerationOptions(thinking=True))


async def test_openai_context_length_exceeded_names_the_window(server):
    server.script(
        json_error(
            400,
            {"error": {"message": "This model's maximum context length is 8,192 tokens. However, "
                       "your messages resulted in 9,100 tokens.",
                       "code": "context_length_exceeded"}},
        )
    )  # fmt: skip
    with pytest.raises(ContextOverflowError, match="8192 tokens") as caught:
        await collect(openai(server), ASK)
    assert caught.value.window == 8192


async def test_llama_cpp_server_overflow_takes_the_window_from_n_ctx(server):
    server.script(
        json_error(
            400,
            {"error": {"code": 400, "message": "the request exceeds the available context size, "
                       "try increasing it", "type": "exceed_context_size_error",
                       "n_prompt_tokens": 5000, "n_ctx": 4096}},
        )
    )  # fmt: skip
    with pytest.raises(ContextOverflowError) as caught:
        await collect(openai(server), ASK)
    assert caught.value.window == 4096


# -- Anthropic ------------------------------------------------------------------------------------


async def test_anthropic_thinking_gets_a_budget_and_max_tokens_beyond_it(server):
    server.script(anthropic_turn("Ada.", thinking="The note is signed."))
    client = claude(server, max_tokens=1000)
    options = GenerationOptions(thinking="low", generate_kwargs={"stop": "END"})
    events = await collect(client, ASK, None, options)
    body = server.bodies[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 1000 + 2048
    assert body["stop_sequences"] == ["END"]
    assert thinking_of(events) == "The note is signed."
    assert text_of(events) == "Ada."


async def test_anthropic_thinking_false_disables_it(server):
    server.script(anthropic_turn("ok"))
    await collect(claude(server), ASK, None, GenerationOptions(thinking=False))
    assert server.bodies[0]["thinking"] == {"type": "disabled"}


async def test_anthropic_sampling_options_the_sdk_lacks_are_named_unknown(server):
    options = GenerationOptions(generate_kwargs={"temperature": 0.2, "seed": 3})
    with pytest.raises(UnsupportedOptionError, match=r"anthropic: .*'temperature'.*stop_sequences"):
        await collect(claude(server), ASK, None, options)
    assert server.requests == []


async def test_anthropic_response_format_forces_an_answer_tool_streamed_as_text(server):
    server.script(anthropic_turn("", [("toolu_1", "booking", '{"name": "Ada", "people": 2}')]))
    events = await collect(claude(server), ASK, None, GenerationOptions(response_format=BOOKING))
    body = server.bodies[0]
    assert body["tool_choice"] == {"type": "tool", "name": "booking"}
    assert body["tools"][-1]["input_schema"] == BOOKING["schema"]
    assert json.loads(text_of(events)) == {"name": "Ada", "people": 2}
    assert not any(isinstance(e, ToolCallRequest) for e in events)
    assert events[-1].stop_reason == "end_turn"


async def test_anthropic_response_format_with_tools_requires_some_tool_call(server):
    server.script(anthropic_turn("", [("toolu_2", "add", '{"a": 1, "b": 2}')]))
    options = GenerationOptions(response_format=BOOKING)
    events = await collect(claude(server), ASK, [tool_spec()], options)
    body = server.bodies[0]
    assert body["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in body["tools"]] == ["add", "booking"]
    assert [e.name for e in events if isinstance(e, ToolCallRequest)] == ["add"]
    assert events[-1].stop_reason == "tool_use"


async def test_anthropic_response_format_with_thinking_is_refused(server):
    options = GenerationOptions(thinking=True, response_format=BOOKING)
    with pytest.raises(UnsupportedOptionError, match="forced tool call"):
        await collect(claude(server), ASK, None, options)


async def test_anthropic_prompt_too_long_names_the_window(server):
    too_long = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 208310 tokens > 200000 maximum",
        },
    }
    server.script(json_error(400, too_long))
    with pytest.raises(ContextOverflowError, match="200000 tokens") as caught:
        await collect(claude(server), ASK)
    assert caught.value.window == 200000


# -- Ollama ---------------------------------------------------------------------------------------


async def test_ollama_request_carries_think_options_and_format(server):
    server.script(ollama_turn('{"name": "Ada", "people": 2}', thinking="Signed by Ada."))
    client = ollama(server, num_ctx=8192, default_generate_kwargs={"seed": 5})
    options = GenerationOptions(
        thinking=True, generate_kwargs={"max_tokens": 40, "temperature": 0}, response_format=BOOKING
    )
    events = await collect(client, ASK, None, options)
    body = server.bodies[0]
    assert body["think"] == "medium"
    assert body["format"] == BOOKING["schema"]
    assert body["options"] == {"num_ctx": 8192, "seed": 5, "num_predict": 40, "temperature": 0}
    assert thinking_of(events) == "Signed by Ada."
    assert json.loads(text_of(events)) == {"name": "Ada", "people": 2}


async def test_ollama_thinking_false_sends_think_false(server):
    server.script(ollama_turn("ok"))
    await collect(ollama(server), ASK, None, GenerationOptions(thinking=False))
    assert server.bodies[0]["think"] is False


async def test_ollama_model_that_cannot_think_is_a_clear_error(server):
    server.script(json_error(400, {"error": '"llama3.2" does not support thinking'}))
    with pytest.raises(UnsupportedOptionError, match="cannot think as asked"):
        await collect(ollama(server), ASK, None, GenerationOptions(thinking=True))


async def test_ollama_unknown_option_names_the_provider(server):
    with pytest.raises(UnsupportedOptionError, match="ollama: unknown generation option 'tmp'"):
        await collect(ollama(server), ASK, None, GenerationOptions(generate_kwargs={"tmp": 1}))


async def test_ollama_context_overflow_names_num_ctx_as_the_window(server):
    server.script(json_error(400, {"error": "the input length exceeds the context length"}))
    with pytest.raises(ContextOverflowError, match="2048 tokens") as caught:
        await collect(ollama(server, num_ctx=2048), ASK)
    assert caught.value.window == 2048


async def test_ollama_stream_still_ends_with_a_turn_end(server):
    server.script(ollama_ndjson([{"model": "m", "message": {"role": "assistant", "content": "hi"},
                                  "done": True, "done_reason": "stop"}]))  # fmt: skip
    events = await collect(ollama(server), ASK, None, GenerationOptions(generate_kwargs={}))
    assert isinstance(events[-1], TurnEnd)
