"""GenerationOptions on the embedded model: a schema-constrained answer, refused thinking,
checked sampling options, the window an overflow names (a real llama.cpp model each time)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from provider_wire import collect

from aimu.models import ContextOverflowError, TextDelta
from aimu.models.base import GenerationOptions
from aimu.models.errors import UnsupportedOptionError
from aimu.models.providers.local import LocalClient

BOOKING = {
    "name": "booking",
    "schema": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "people": {"type": "integer"},
            "day": {"type": "string", "enum": ["Monday", "Friday", "Sunday"]},
        },
        "required": ["name", "people", "day"],
        "additionalProperties": False,
    },
}


@pytest.fixture(scope="module")
def model() -> LocalClient:
    return LocalClient(max_tokens=64, temperature=0.0, seed=7)


async def test_response_format_constrains_the_answer_to_the_schema(model):
    ask = [{"role": "user", "content": 'Extract the booking: "This is Ada. A table for 4 on '
            'Friday, please."'}]  # fmt: skip
    events = await collect(model, ask, None, GenerationOptions(response_format=BOOKING))
    answer = json.loads("".join(e.text for e in events if isinstance(e, TextDelta)))
    jsonschema.validate(answer, BOOKING["schema"])
    assert answer["people"] == 4 and answer["day"] == "Friday"


async def test_thinking_on_the_embedded_model_is_a_clear_error(model):
    with pytest.raises(UnsupportedOptionError, match="local: this embedded model cannot think"):
        await collect(model, [{"role": "user", "content": "hi"}], None, GenerationOptions("high"))


async def test_thinking_false_is_accepted_since_the_model_never_thinks(model):
    events = await collect(
        model, [{"role": "user", "content": "Say hi."}], None, GenerationOptions(thinking=False)
    )
    assert any(isinstance(e, TextDelta) for e in events)


async def test_generate_kwargs_reach_the_model_and_unknown_ones_are_named(model):
    few = GenerationOptions(generate_kwargs={"max_tokens": 3})
    events = await collect(model, [{"role": "user", "content": "Tell me a story."}], None, few)
    assert events[-1].usage.output_tokens <= 3
    bad = GenerationOptions(generate_kwargs={"temprature": 0})
    with pytest.raises(UnsupportedOptionError, match=r"local: .*'temprature'.*temperature"):
        await collect(model, [{"role": "user", "content": "hi"}], None, bad)


def test_default_generate_kwargs_are_checked_when_the_client_is_built():
    with pytest.raises(UnsupportedOptionError, match="'seeed'"):
        LocalClient(default_generate_kwargs={"seeed": 1})


async def test_overflow_names_the_loaded_window():
    small = LocalClient(n_ctx=256, temperature=0.0)
    with pytest.raises(ContextOverflowError, match="256 tokens") as caught:
        await collect(small, [{"role": "user", "content": "word " * 2000}])
    assert caught.value.window == 256


async def test_answers_repeat_unless_a_temperature_or_seed_asks_for_variety():
    ask = [{"role": "user", "content": "Write a short poem about the sea."}]
    fixed = LocalClient(max_tokens=24)
    first, second = [
        "".join(e.text for e in await collect(fixed, ask) if isinstance(e, TextDelta))
        for _ in range(2)
    ]
    assert first == second and first.strip()
    varied = LocalClient(max_tokens=24, temperature=1.5, top_k=0, top_p=1.0)
    answers = {
        "".join(e.text for e in await collect(varied, ask) if isinstance(e, TextDelta))
        for _ in range(4)
    }
    assert len(answers) > 1  # four samples at temperature 1.5 are not all the same
