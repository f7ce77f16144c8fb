"""Structured output against hostile answers: each ends in StructuredOutputError, never raw."""

import pytest
from pydantic import BaseModel

from aimu import Agent
from aimu.agents.structured import StructuredOutputError
from aimu.models.providers.scripted import ScriptedClient


class City(BaseModel):
    name: str
    population: int


DEEP_ARRAY = '{"name": ' + "[" * 100_000 + "]" * 100_000 + ', "population": 1}'
DEEP_OBJECT = '{"name": "x", "z": ' + '{"a":' * 5_000 + "1" + "}" * 5_000 + "}"


@pytest.mark.parametrize("answer", [DEEP_ARRAY, DEEP_OBJECT], ids=["array", "object"])
def test_a_deeply_nested_answer_is_a_structured_output_error(answer):
    agent = Agent(ScriptedClient([answer] * 3))
    with pytest.raises(StructuredOutputError, match="City schema"):
        agent.run("describe", schema=City)


class Node(BaseModel):
    name: str
    children: list["Node"] = []


def test_a_self_referencing_model_is_a_schema_whose_root_is_an_object():
    model = ScriptedClient(['{"name": "root", "children": [{"name": "leaf"}]}'])
    tree = Agent(model).run("draw a tree", schema=Node)
    assert tree == Node(name="root", children=[Node(name="leaf")])
    sent = model.requests[0]["options"].response_format["schema"]
    assert sent["type"] == "object" and "$ref" not in sent
    assert sent["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "Node" in sent["$defs"]


@pytest.mark.parametrize("spaces", [200_000, 800_000])
def test_an_unclosed_fence_before_a_long_run_of_spaces_is_read_in_linear_time(spaces):
    import time

    hostile = "```" + " " * spaces + "no closing fence"
    agent = Agent(
        ScriptedClient([hostile, hostile, '```json\n{"name": "Oslo", "population": 7}\n```'])
    )
    started = time.perf_counter()
    city = agent.run("describe", schema=City)
    assert city == City(name="Oslo", population=7)
    assert time.perf_counter() - started < 2.0  # the quadratic parse took 15 s at 60k spaces
