"""Guided calls and stated answers on the embedded model: what keeps a 135M model on the request.

The pure parts (which runs of words an argument may quote, which tools a request names, how
a long result is focused) are checked directly; what they are for is checked on the real
SmolLM2 model: arguments come from the request, not from a docstring's example; the answer
after a tool call states the result without repeating the prompt's label.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from provider_wire import collect
from pydantic import BaseModel

import aimu
import aimu.aio
from aimu.models import TextDelta, ToolCallRequest
from aimu.models.base import GenerationOptions
from aimu.models.providers import _guide, local
from aimu.models.providers._local_prompt import RESULT_LABEL, render
from aimu.models.providers.local import LocalClient
from aimu.tools.builtin import fs


def asked(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


@aimu.tool
def open_report(path: str) -> str:
    """Open a report file and return its first line.

    Args:
        path: The report's path, e.g. "~/reports/2019-summary.txt".
    """
    return f"{path}: revenue grew 12% in the third quarter."


@aimu.tool
def count_letter(word: str, letter: str) -> int:
    """Count how often a letter occurs in a word.

    Args:
        word: The word to search, e.g. "banana".
        letter: The single letter to count, e.g. "a".
    """
    return word.lower().count(letter.lower())


@pytest.fixture(scope="module")
def model() -> LocalClient:
    return LocalClient(max_tokens=64, temperature=0.0, seed=7)


# -- which words an argument may quote ----------------------------------------------------------


@pytest.mark.parametrize(
    ("request_text", "offered"),
    [
        ("List the files in the folder /tmp/work-7.", ["/tmp/work-7"]),
        ("Ask a helper to work out 48 * 52.", ["48 * 52"]),
        ("Compare (2 + 3) * 4 with data/a.txt, then data/b.txt.",
         ["(2 + 3) * 4", "data/a.txt", "data/b.txt"]),
        ('Who wrote "Cheers, Grace Hopper"?', ["Cheers, Grace Hopper", "Grace Hopper"]),
        ("I live in New York. What time is it?", ["New York"]),
    ],
)  # fmt: skip
def test_what_a_request_names_specifically_is_told_apart(request_text, offered):
    quotes = _guide.quotable(asked(request_text))
    assert quotes.specific == offered
    assert set(offered) < set(quotes.every)


def test_a_request_of_plain_words_offers_every_run_within_a_sentence():
    quotes = _guide.quotable(asked("How many croissants are left? Count them."))
    runs = quotes.every
    assert quotes.specific == []
    assert "croissants" in runs and "How many croissants are left" in runs and "Count them" in runs
    assert not [run for run in runs if "left? Count" in run or "left Count" in run]


def test_a_pasted_document_is_too_long_to_enumerate_and_leaves_arguments_free():
    words = " ".join("".join("abcdefghij"[int(d)] for d in f"{i:04}") for i in range(2000))
    quotes = _guide.quotable(asked(words))
    assert quotes == _guide.Quotable([], [])
    parameters = open_report.__tool_spec__["function"]["parameters"]
    assert _guide.quote(parameters, quotes) == parameters


@pytest.mark.parametrize(
    "text",
    [
        " ".join(f"word{i}" for i in range(60_000)),  # distinct words: many runs
        "a " * 150_000,  # the same word: few distinct runs, many repeats
        "x" * 1_000_000,  # one huge word
        "Ship it to Ada. " * 20_000,  # short sentences, with specific words
    ],
    ids=["distinct-words", "one-word-repeated", "one-huge-word", "many-sentences"],
)
def test_quoting_a_huge_request_is_bounded_work(text):
    started = time.perf_counter()
    quotes = _guide.quotable(asked(text))
    assert time.perf_counter() - started < 1.0
    assert quotes.every == []
    assert len(quotes.specific) <= _guide.MOST_QUOTES


def test_only_required_free_strings_are_quoted_and_names_are_never_offered_for_themselves():
    parameters = {
        "type": "object",
        "properties": {
            "letter": {"type": "string"},
            "word": {"type": "string"},
            "unit": {"type": "string", "enum": ["C", "F"]},
            "note": {"type": "string"},
            "count": {"type": "integer"},
        },
        "required": ["letter", "word", "unit", "count"],
    }
    runs = ["letter", "the letter r", "r", "strawberry", "the word strawberry"]
    quoted = _guide.quote(parameters, _guide.Quotable([], runs), "count_letter")["properties"]
    assert quoted["letter"]["enum"] == ["r", "strawberry", "the word strawberry"]
    assert quoted["word"]["enum"] == ["r", "strawberry"]  # "letter" is in the tool's name
    assert quoted["unit"] == {"type": "string", "enum": ["C", "F"]}
    assert quoted["note"] == {"type": "string"} and quoted["count"] == {"type": "integer"}
    assert parameters["properties"]["letter"] == {"type": "string"}  # the spec is not changed


def test_runs_outside_a_strings_length_bounds_are_not_offered():
    parameters = {
        "type": "object",
        "properties": {"code": {"type": "string", "minLength": 3, "maxLength": 5}},
        "required": ["code"],
    }
    quotes = _guide.Quotable([], ["ab", "abc", "abcdef", "abcde"])
    assert _guide.quote(parameters, quotes)["properties"]["code"]["enum"] == ["abc", "abcde"]
    unquoted = _guide.quote(parameters, _guide.Quotable([], ["ab"]))  # none fit: left free
    assert unquoted["properties"]["code"] == parameters["properties"]["code"]


def test_the_first_string_quotes_what_is_specific_and_the_others_any_run():
    quotes = _guide.quotable(asked("Save a note saying hello to /tmp/work/note.txt."))
    spec = fs[2].__tool_spec__["function"]
    assert spec["name"] == "write_file"
    quoted = _guide.quote(spec["parameters"], quotes, "write_file")["properties"]
    assert quoted["path"]["enum"] == ["/tmp/work/note.txt"]
    assert "hello" in quoted["content"]["enum"] and "saying hello" in quoted["content"]["enum"]


def test_a_tool_named_in_plain_words_is_the_one_offered():
    specs = [tool.__tool_spec__ for tool in fs]
    named = _guide.named_tools(specs, asked("Read the file notes/todo.md and sum it up."))
    assert [s["function"]["name"] for s in named] == ["read_file"]
    unnamed = _guide.named_tools(specs, asked("What is in /tmp?"))
    assert unnamed == specs


# -- the real model ----------------------------------------------------------------------------


async def test_the_argument_is_the_path_the_user_gave_not_the_docstrings_example(model):
    events = await collect(
        model, asked("Open the report at /srv/reports/q3-summary.txt."), [open_report.__tool_spec__]
    )
    calls = [e for e in events if isinstance(e, ToolCallRequest)]
    assert [c.arguments for c in calls] == [{"path": "/srv/reports/q3-summary.txt"}]


async def test_every_string_argument_is_a_run_of_the_request(model):
    questions = [
        "How many times does the letter s occur in the word mississippi?",
        "Count the letter e in the word cheese.",
    ]
    for question in questions:
        events = await collect(model, asked(question), [count_letter.__tool_spec__])
        (call,) = [e for e in events if isinstance(e, ToolCallRequest)]
        for value in call.arguments.values():
            assert re.search(rf"\b{re.escape(value)}\b", question), (question, call.arguments)
        assert call.arguments["letter"] != "letter"


async def test_the_file_tool_the_request_names_is_called(model):
    agent = aimu.aio.Agent(model, tools=fs, max_iterations=2)
    await agent.run("Read the file /etc/hostname and tell me what it says.")
    called = [m["tool_calls"][0]["function"] for m in agent.messages if m.get("tool_calls")]
    assert called and called[0]["name"] == "read_file"
    assert json.loads(called[0]["arguments"])["path"] == "/etc/hostname"


async def test_guidance_can_be_switched_off_and_survives_a_clone():
    free = LocalClient(max_tokens=48, temperature=0.0, guide=False)
    assert free.clone().guide is False
    events = await collect(
        free, asked("Open the report at /srv/reports/q3-summary.txt."), [open_report.__tool_spec__]
    )
    assert [e for e in events if isinstance(e, ToolCallRequest)]  # a call, its path unchecked
    assert local.GUIDED_BELOW_PARAMETERS > 135_000_000  # the bundled model is guided by default


async def test_an_extracted_name_is_quoted_from_the_text(model):
    class Note(BaseModel):
        signed_by: str

    schema = {"name": "Note", "schema": Note.model_json_schema()}
    for text, name in [
        ('Who signed this note?\n\n"Thanks for the flowers! See you on Friday. Ada Lovelace"',
         "Ada Lovelace"),
        ('Who wrote this?\n\n"Dear team, the build is green again. Cheers, Grace Hopper"',
         "Grace Hopper"),
    ]:  # fmt: skip
        events = await collect(model, asked(text), None, GenerationOptions(response_format=schema))
        answer = json.loads("".join(e.text for e in events if isinstance(e, TextDelta)))
        assert answer == {"signed_by": name}


# -- the answer after a tool call ---------------------------------------------------------------


def tool_answered(question: str, name: str, result: str) -> list[dict]:
    return [
        *asked(question),
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": name, "content": result},
    ]  # fmt: skip


LEAVE = """# Leave

Sick leave is separate: report it to your manager before 10:00 on the first day.
Book leave at least two weeks ahead in the team calendar and tell your manager.
Every member of staff gets 25 days of paid leave a year, plus public holidays.
Up to 5 unused days may be carried over into the next year; the rest lapse on 31 March.
Leave requests for December must be in by 1 November, and the office is closed at Christmas.
"""


def test_a_long_result_reaches_the_model_with_the_line_that_answers_first():
    question = "How many days of paid leave do staff get? See /srv/handbook/leave.md."
    prompt = render(tool_answered(question, "read_file", LEAVE), None)[-1]["content"]
    shown = prompt.split(RESULT_LABEL, 1)[1].split("\n\n")[0].strip().splitlines()
    assert shown[0].startswith("Every member of staff gets 25 days")
    assert "Christmas" not in prompt and "Sick leave" not in prompt  # cut to what answers


async def test_the_stated_answer_has_the_value_and_not_the_prompts_label(model):
    for question, result, value in [
        ("How many days of paid leave do staff get?", LEAVE, "25"),
        ("How many croissants are in stock?", "croissant: 30 in stock, 1.60 euros each.", "30"),
        ("How many times does r occur in strawberry?", "3", "3"),
    ]:
        events = await collect(model, tool_answered(question, "lookup", result), None)
        answer = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert value in answer, answer
        assert not answer.lstrip().startswith(RESULT_LABEL) and answer == answer.lstrip()
        assert "\n\n" not in answer.strip()
