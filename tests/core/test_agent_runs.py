"""Per-run overrides (tool_approval, deps) and structured output (schema=...)."""

import dataclasses
from typing import TypedDict

import pydantic
import pytest

import aimu
from aimu import Agent, Denied, ToolContext, tool
from aimu.agents import StructuredOutputError
from aimu.models.errors import ModelError
from aimu.models.providers.scripted import ScriptedClient, call


@tool
def whoami(ctx: ToolContext) -> str:
    """Say which deps the run has."""
    return f"deps={ctx.deps}"


@tool
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def tool_results(agent):
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def test_tool_approval_given_to_run_applies_to_that_run_only():
    model = ScriptedClient([call("delete", path="a"), "refused", call("delete", path="b"), "done"])
    agent = Agent(model, tools=[delete])
    agent.run("delete a", tool_approval=lambda name, args: Denied("not today"))
    agent.run("delete b")
    results = tool_results(agent)
    assert "not today" in results[0] and "deleted" not in results[0]
    assert results[1] == "deleted b"


def test_deps_given_to_run_reach_tools_for_that_run_only():
    model = ScriptedClient([call("whoami"), "a", call("whoami"), "b"])
    agent = Agent(model, tools=[whoami], deps="agent-deps")
    agent.run("who?", deps="run-deps")
    agent.run("who now?")
    assert tool_results(agent) == ["deps=run-deps", "deps=agent-deps"]


async def test_async_agent_takes_the_same_run_overrides():
    model = ScriptedClient([call("whoami"), call("delete", path="x"), "ok"])
    agent = aimu.aio.Agent(model, tools=[whoami, delete])
    await agent.run("go", deps=42, tool_approval=lambda name, args: name != "delete")
    assert tool_results(agent)[0] == "deps=42"
    assert "deleted" not in tool_results(agent)[1]


def test_a_run_override_that_is_not_a_policy_is_refused_before_the_run():
    agent = Agent(ScriptedClient(["x"]))
    with pytest.raises(TypeError, match="tool_approval must be a callable"):
        agent.run("hi", tool_approval="yes")
    assert agent.messages == []


class City(pydantic.BaseModel):
    name: str
    population: int


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Pair(TypedDict):
    left: str
    right: str


@pytest.mark.parametrize(
    ("schema", "answer", "expected"),
    [
        (City, '{"name": "Lyon", "population": 522000}', City(name="Lyon", population=522000)),
        (Point, '```json\n{"x": 1.5, "y": -2}\n```', Point(1.5, -2.0)),
        (Pair, 'Here: {"left": "a", "right": "b"}', {"left": "a", "right": "b"}),
    ],
)
def test_schema_returns_a_validated_instance(schema, answer, expected):
    model = ScriptedClient([answer])
    result = Agent(model).run("describe", schema=schema)
    assert result == expected
    assert type(result) is type(expected)
    sent = model.requests[0]["options"].response_format
    assert sent["name"] == schema.__name__
    assert sent["schema"]["type"] == "object"


def test_schema_response_format_is_the_json_schema_of_the_model():
    model = ScriptedClient(['{"name": "Oslo", "population": 700000}'])
    Agent(model).run("describe", schema=City)
    assert model.requests[0]["options"].response_format == {
        "name": "City",
        "schema": City.model_json_schema(),
    }


def test_an_invalid_answer_is_retried_with_the_error_and_tools_off():
    model = ScriptedClient(
        [
            call("whoami"),
            '{"name": "Lyon", "population": "many"}',
            '{"name": "Lyon", "population": 522000}',
        ]
    )
    agent = Agent(model, tools=[whoami])
    assert agent.run("describe", schema=City) == City(name="Lyon", population=522000)
    retry = model.requests[2]
    assert retry["tools"] is None
    feedback = retry["messages"][-1]
    assert feedback["role"] == "user" and "population" in feedback["content"]
    assert "City schema" in feedback["content"]


def test_structured_output_error_after_the_retries():
    model = ScriptedClient(["not json", "still not", "nope", "never reached"])
    agent = Agent(model)
    with pytest.raises(StructuredOutputError, match="did not match the City schema after 3 tries"):
        agent.run("describe", schema=City)
    assert issubclass(StructuredOutputError, ModelError)
    assert model.remaining == 1
    assert agent.messages[-1]["role"] == "assistant"


def test_stream_with_schema_ends_with_the_validated_data():
    chunks = list(Agent(ScriptedClient(['{"x": 1, "y": 2}'])).run("p", stream=True, schema=Point))
    assert chunks[-1].content["output"] == {"x": 1, "y": 2}


async def test_async_agent_returns_a_schema_instance():
    agent = aimu.aio.Agent(ScriptedClient(['{"left": "l", "right": "r"}']))
    assert await agent.run("pair", schema=Pair) == {"left": "l", "right": "r"}


def test_a_schema_that_is_not_an_object_type_is_refused():
    with pytest.raises(TypeError, match="pydantic model, a dataclass or a TypedDict"):
        Agent(ScriptedClient(["1"])).run("n", schema=int)


async def test_a_keyword_a_run_does_not_take_is_refused_before_the_run():
    agent = Agent(ScriptedClient(["x"]))
    with pytest.raises(TypeError, match="temperature"):
        agent.run("hi", temperature=0.2)
    async_agent = aimu.aio.Agent(ScriptedClient(["x"]))
    with pytest.raises(TypeError, match="temperature"):
        await async_agent.run("hi", temperature=0.2)
    assert agent.messages == [] and async_agent.messages == []
