"""Tool groups cost one line of context until loaded; loaded tools come from the next turn."""

import pytest

from aimu import Agent, tool
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.tools import ToolGroup


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool
def today() -> str:
    """Today's date."""
    return "2026-12-01"


MATH = ToolGroup("math", "Arithmetic on integers", [add, mul])
DATES = ToolGroup("dates", "Calendar lookups", [today])


def names(request):
    return [spec["function"]["name"] for spec in request["tools"] or ()]


def test_load_tools_lists_groups_and_their_tools_arrive_next_turn():
    model = ScriptedClient(
        [
            reply(tool_calls=[call("load_tools", group="math"), call("mul", a=2, b=3)]),
            call("mul", a=6, b=7),
            "42",
        ]
    )
    agent = Agent(model, tools=[today], tool_groups=[MATH])
    assert agent.run("6*7?") == "42"
    first = model.requests[0]
    assert names(first) == ["today", "load_tools"]
    description = first["tools"][1]["function"]["description"]
    assert "- math: Arithmetic on integers" in description
    assert "add" not in description.split("Groups:")[0]
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert results[0].startswith("Loaded tool group 'math': add, mul.")
    assert results[1].startswith("Unknown tool 'mul'")  # not in the turn that loaded it
    assert names(model.requests[1]) == ["today", "load_tools", "add", "mul"]
    assert results[2] == "42"


def test_loading_an_unknown_group_is_an_argument_error_the_model_reads():
    model = ScriptedClient([call("load_tools", group="chemistry"), "sorry"])
    agent = Agent(model, tool_groups=[MATH, DATES])
    agent.run("go")
    result = next(m["content"] for m in agent.messages if m["role"] == "tool")
    assert "chemistry" in result and "math" in result


def test_a_group_tool_named_like_an_existing_tool_is_skipped_and_reported():
    model = ScriptedClient(
        [call("load_tools", group="math"), call("load_tools", group="math"), "x"]
    )
    agent = Agent(model, tools=[add], tool_groups=[MATH])
    agent.run("go")
    first, second = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert "Loaded tool group 'math': mul." in first and "Skipped" in first and "add" in first
    assert "already loaded" in second


def test_loads_belong_to_one_agent():
    one = Agent(ScriptedClient([call("load_tools", group="dates"), "x"]), tool_groups=[DATES])
    other_model = ScriptedClient(["y"])
    other = Agent(other_model, tool_groups=[DATES])
    one.run("go")
    other.run("go")
    assert names(other_model.requests[0]) == ["load_tools"]


def test_load_tools_is_a_read_only_tool():
    agent = Agent(ScriptedClient(["x"]), tool_groups=[MATH])
    assert agent.tool_groups.tool.__tool_read_only__ is True


def test_groups_are_checked_when_the_agent_is_built():
    with pytest.raises(TypeError, match="not a tool"):
        ToolGroup("bad", "plain functions", [len])
    with pytest.raises(ValueError, match="twice"):
        Agent(ScriptedClient([]), tool_groups=[MATH, MATH])
    with pytest.raises(TypeError, match="list of ToolGroup"):
        Agent(ScriptedClient([]), tool_groups=MATH)
    with pytest.raises(ValueError, match="non-empty name"):
        ToolGroup(" ", "x", [])
