"""``aimu.client()`` names, the default model, and what a missing SDK says."""

from __future__ import annotations

import itertools
import json
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from provider_wire import tool_spec

import aimu
from aimu.models import ProviderNotInstalledError, TextDelta, ThinkingDelta
from aimu.models.errors import NoDefaultModelError
from aimu.models.providers import _grammar
from aimu.models.providers._think import ThinkSplitter
from aimu.models.providers.local import LocalClient
from aimu.models.registry import default_model, providers, set_default_model


@pytest.fixture(autouse=True)
def no_default():
    set_default_model(None)
    yield
    set_default_model(None)


def test_every_provider_of_the_issue_is_registered():
    assert {"openai", "anthropic", "ollama", "local", "llamacpp", "scripted"} <= set(providers())


def test_default_is_local_when_the_embedded_model_is_installed():
    assert default_model() == "local"
    assert isinstance(aimu.client(), LocalClient)


def test_aimu_model_variable_wins_over_local(monkeypatch):
    monkeypatch.setenv("AIMU_MODEL", "scripted")
    assert default_model() == "scripted"
    assert aimu.client().provider == "scripted"


def test_configured_default_wins_over_the_variable(monkeypatch):
    monkeypatch.setenv("AIMU_MODEL", "openai:gpt-4o-mini")
    set_default_model("ollama:qwen3:8b")
    assert default_model() == "ollama:qwen3:8b"


def test_without_any_model_one_message_says_how_to_choose(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # llama-cpp-python not installed
    with pytest.raises(NoDefaultModelError) as caught:
        aimu.client()
    message = str(caught.value)
    assert "AIMU_MODEL" in message
    assert "pip install 'aimu-jupyter[local]'" in message


@pytest.mark.parametrize(
    ("spec", "module", "extra"),
    [
        ("openai:gpt-4o-mini", "openai", "openai"),
        ("anthropic:claude-sonnet-4-5", "anthropic", "anthropic"),
        ("ollama:qwen3", "ollama", "ollama"),
        ("local", "llama_cpp", "local"),
    ],
)
def test_missing_sdk_names_the_pip_command(monkeypatch, spec, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # what an absent package looks like
    with pytest.raises(ProviderNotInstalledError, match=rf"pip install 'aimu-jupyter\[{extra}\]'"):
        aimu.client(spec)


def test_set_default_model_refuses_non_strings():
    with pytest.raises(TypeError):
        set_default_model(42)  # type: ignore[arg-type]


@given(st.lists(st.integers(min_value=0, max_value=40), max_size=6))
def test_think_block_split_anywhere_separates_reasoning_from_answer(cuts):
    text = "  <think>weigh the options</think>\n\nThe answer is 4."
    bounds = sorted({0, len(text), *(min(c, len(text)) for c in cuts)})
    splitter = ThinkSplitter()
    events = []
    for start, end in itertools.pairwise(bounds):
        events += splitter.feed(text[start:end])
    events += splitter.flush()
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "weigh the options"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The answer is 4."


def test_think_tag_later_in_the_answer_is_plain_text():
    splitter = ThinkSplitter()
    events = splitter.feed("Use <think> tags") + splitter.flush()
    assert events == [TextDelta("Use <think> tags")]


def test_decision_schema_accepts_valid_calls_and_answers_only():
    import jsonschema
    import llama_cpp

    nested = tool_spec("plan", step={"$ref": "#/$defs/Step"})
    nested["function"]["parameters"]["$defs"] = {
        "Step": {"type": "object", "properties": {"title": {"type": "string"}},
                 "required": ["title"], "additionalProperties": False}
    }  # fmt: skip
    schema = _grammar.decision_schema([tool_spec(), nested])
    valid = [
        {"answer": "hello"},
        {"tool_call": {"name": "add", "arguments": {"a": 1, "b": 2}}},
        {"tool_call": {"name": "plan", "arguments": {"step": {"title": "x"}}}},
    ]
    invalid = [
        {"tool_call": {"name": "add", "arguments": {"a": "one", "b": 2}}},
        {"tool_call": {"name": "nope", "arguments": {}}},
        {"tool_call": {"name": "plan", "arguments": {"step": {"title": 1}}}},
        {"answer": "x", "extra": 1},
    ]
    for instance in valid:
        jsonschema.validate(instance, schema)
    for instance in invalid:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(instance, schema)
    llama_cpp.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
