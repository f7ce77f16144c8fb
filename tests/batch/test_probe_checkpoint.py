"""Batch edges: a checkpoint record that no longer fits runs again; a bad item is named."""

import json

import pytest
from pydantic import BaseModel
from summaries import recorder

import aimu
from aimu import Agent
from aimu.models.providers.scripted import ScriptedClient


class Count(BaseModel):
    x: int


class Label(BaseModel):
    y: str


def test_a_checkpoint_written_for_another_schema_is_run_again(tmp_path):
    checkpoint = tmp_path / "runs.jsonl"
    first = Agent(ScriptedClient(['{"x": 1}', '{"x": 2}']))
    aimu.batch("Do {item}", ["one", "two"], agent=first, schema=Count, checkpoint=checkpoint,
               concurrency=1)  # fmt: skip
    model = ScriptedClient(['{"y": "a"}', '{"y": "b"}'])
    result = aimu.batch("Do {item}", ["one", "two"], agent=Agent(model), schema=Label,
                        checkpoint=checkpoint, concurrency=1)  # fmt: skip
    assert [item.value for item in result] == [Label(y="a"), Label(y="b")]
    assert len(model.requests) == 2


def test_a_hand_edited_record_is_run_again(tmp_path):
    checkpoint = tmp_path / "runs.jsonl"
    aimu.batch("Do {item}", ["one"], agent=Agent(ScriptedClient(["done"])),
               checkpoint=checkpoint)  # fmt: skip
    record = json.loads(checkpoint.read_text())
    record.update(usage=5, attempts="many")
    checkpoint.write_text(json.dumps(record) + "\n")
    result = aimu.batch("Do {item}", ["one"], agent=Agent(ScriptedClient(["again"])),
                        checkpoint=checkpoint)  # fmt: skip
    assert [(item.status, item.answer) for item in result] == [("ok", "again")]


def test_an_item_whose_value_does_not_fit_a_format_spec_is_named():
    with pytest.raises(ValueError, match=r"item 1 cannot fill the task: .*format code 'f'"):
        aimu.batch("Score {n:.2f}", [{"n": 1.5}, {"n": "high"}],
                   agent=Agent(ScriptedClient(["ok"])))  # fmt: skip


@pytest.mark.parametrize(
    "edit",
    [
        {"usage": {"input_tokens": "5"}},
        {"attempts": float("inf")},
        {"answer": ["not", "text"]},
        {"usage": {"input_tokens": True}},
    ],
    ids=["usage-as-text", "infinite-attempts", "answer-not-text", "usage-bool"],
)
def test_a_record_whose_fields_do_not_fit_runs_again_instead_of_raising(tmp_path, edit):
    checkpoint = tmp_path / "runs.jsonl"
    aimu.batch("Do {item}", ["one"], agent=Agent(ScriptedClient(["done"])),
               checkpoint=checkpoint)  # fmt: skip
    record = json.loads(checkpoint.read_text())
    record.update(edit)
    checkpoint.write_text(json.dumps(record) + "\n")  # json writes inf as Infinity
    model = ScriptedClient(["again"])
    result = aimu.batch("Do {item}", ["one"], agent=Agent(model), checkpoint=checkpoint)
    assert [(item.status, item.answer, item.resumed) for item in result] == [("ok", "again", False)]


def test_a_checkpoint_of_another_system_message_is_ignored_and_says_so(tmp_path, caplog):
    checkpoint = tmp_path / "runs.jsonl"
    first = Agent(ScriptedClient(["A1", "A2"]), system_message="Answer in English.")
    aimu.batch("Do {item}", ["one", "two"], agent=first, checkpoint=checkpoint, concurrency=1)

    seen = []

    Recorder = recorder(seen)

    model = ScriptedClient(["B1", "B2"])
    other = Agent(model, system_message="Answer in French.")
    with caplog.at_level("WARNING", logger="aimu.batch"):
        result = aimu.batch("Do {item}", ["one", "two"], agent=other, checkpoint=checkpoint,
                            concurrency=1, progress=Recorder)  # fmt: skip
    assert [item.answer for item in result] == ["B1", "B2"] and len(model.requests) == 2
    assert "2 checkpoint records of another configuration ignored" in seen[0]
    assert "written by another configuration" in caplog.text

    again = aimu.batch("Do {item}", ["one", "two"], agent=Agent(ScriptedClient([]),
                       system_message="Answer in French."), checkpoint=checkpoint)  # fmt: skip
    assert [item.answer for item in again] == ["B1", "B2"] and all(it.resumed for it in again)


@pytest.mark.parametrize(
    "change",
    [
        {"tools": "tool"},
        {"generate_kwargs": {"temperature": 0.9}},
        {"model": "other-model"},
    ],
)
def test_a_checkpoint_of_other_tools_options_or_model_is_not_reused(tmp_path, change):
    checkpoint = tmp_path / "runs.jsonl"
    aimu.batch("Do {item}", ["one"], agent=Agent(ScriptedClient(["old"], model="m")),
               checkpoint=checkpoint)  # fmt: skip

    @aimu.tool
    def lookup(word: str) -> str:
        """Look a word up."""
        return word

    options = {
        "tools": [lookup] if "tools" in change else [],
        "generate_kwargs": change.get("generate_kwargs"),
    }
    model = ScriptedClient(["new"], model=change.get("model", "m"))
    result = aimu.batch("Do {item}", ["one"], agent=Agent(model, **options), checkpoint=checkpoint)
    assert [item.answer for item in result] == ["new"]
