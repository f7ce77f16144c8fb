"""Thinking and generation options reach the model as GenerationOptions on every request,
over the client's own defaults, and a run's overrides last for that run only."""

import pytest

import aimu
from aimu import Agent, tool
from aimu.models.base import GenerationOptions
from aimu.models.providers.scripted import ScriptedClient, call, reply


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_thinking_and_generate_kwargs_go_with_every_request():
    model = ScriptedClient([reply(tool_calls=[call("add", a=1, b=2)]), "3"])
    agent = Agent(model, tools=[add], thinking="high", generate_kwargs={"temperature": 0.2})
    assert agent.run("1+2?") == "3"
    expected = GenerationOptions("high", {"temperature": 0.2}, None)
    assert [r["options"] for r in model.requests] == [expected, expected]


def test_run_overrides_apply_to_that_run_only():
    model = ScriptedClient(["one", "two"])
    agent = Agent(model, thinking=False, generate_kwargs={"max_tokens": 50})
    agent.run("first", thinking="low", generate_kwargs={"max_tokens": 10, "top_p": 0.5})
    agent.run("second")
    assert model.requests[0]["options"] == GenerationOptions(
        "low", {"max_tokens": 10, "top_p": 0.5}
    )
    assert model.requests[1]["options"] == GenerationOptions(False, {"max_tokens": 50})


def test_without_options_a_client_is_called_with_messages_and_tools_only():
    class TwoArgumentClient(ScriptedClient):
        async def stream(self, messages, tools=None):
            async for event in super().stream(messages, tools):
                yield event

    assert Agent(TwoArgumentClient(["plain"])).run("hi") == "plain"


@pytest.mark.parametrize("bad", ["extreme", 3, "HIGH"])
def test_a_thinking_value_outside_the_levels_is_refused(bad):
    with pytest.raises(ValueError, match="thinking must be None, True, False or one of low"):
        Agent(ScriptedClient(["x"]), thinking=bad)
    agent = Agent(ScriptedClient(["x"]))
    with pytest.raises(ValueError, match="thinking"):
        agent.run("hi", thinking=bad)
    assert agent.messages == []


def test_generate_kwargs_must_be_a_dict():
    with pytest.raises(TypeError, match="generate_kwargs must be a dict"):
        Agent(ScriptedClient(["x"]), generate_kwargs=[("temperature", 0)])


async def test_async_agent_sends_the_same_options():
    model = ScriptedClient(["ok"])
    agent = aimu.aio.Agent(model, thinking=True)
    assert await agent.run("hi", generate_kwargs={"stop": ["\n"]}) == "ok"
    assert model.requests[0]["options"] == GenerationOptions(True, {"stop": ["\n"]})
