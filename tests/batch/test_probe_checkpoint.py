"""Batch edges: a checkpoint record that no longer fits runs again; a bad item is named."""

import json

import pytest
from pydantic import BaseModel

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
