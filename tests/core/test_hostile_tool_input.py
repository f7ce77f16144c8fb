"""Input a model controls, or values a tool returns, never end a run with a raw exception:
each becomes a tool error the model reads (or a ToolSignatureError at decoration), and the
transcript stays one a provider accepts."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Any

import pytest

from aimu import Agent
from aimu.models.base import MAX_ARGUMENT_DEPTH, ToolCallRequest
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.tools import ToolSignatureError, tool


@tool(read_only=True)
def echo_value(value: Any = None) -> str:
    """Echo a value."""
    return "echoed"


def assert_valid_transcript(messages: list[dict]) -> None:
    """Each tool call answered exactly once, right after its turn; every id distinct."""
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        ids = [c["id"] for c in calls]
        assert len(ids) == len(set(ids))
        answers = messages[index + 1 : index + 1 + len(ids)]
        assert [m["role"] for m in answers] == ["tool"] * len(ids)
        assert sorted(m["tool_call_id"] for m in answers) == sorted(ids)
        for c in calls:
            json.loads(c["function"]["arguments"])  # every provider can decode what we send back
    assert messages[-1]["role"] == "assistant"


def run(turns, tools, **kwargs):
    model = ScriptedClient(turns)
    agent = Agent(model, tools=tools, **kwargs)
    answer = agent.run("go")
    assert_valid_transcript(agent.messages)
    return answer, [m for m in agent.messages if m["role"] == "tool"], model


@pytest.mark.parametrize("depth", [10_000, MAX_ARGUMENT_DEPTH + 1])
def test_deeply_nested_json_arguments_become_an_error_the_model_reads(depth):
    deep = '{"value": ' + "[" * depth + "]" * depth + "}"
    answer, results, model = run([call("echo_value", deep), "recovered"], [echo_value])
    assert answer == "recovered"
    assert results[0]["content"] == (
        f"Tool 'echo_value' was not called: the arguments are nested more than "
        f"{MAX_ARGUMENT_DEPTH} levels deep; send a flatter JSON object."
    )
    assert model.requests[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_nesting_within_the_limit_is_passed_to_the_tool():
    depth = MAX_ARGUMENT_DEPTH - 1
    nested = '{"value": ' + "[" * depth + "]" * depth + "}"
    _, results, _ = run([call("echo_value", nested), "ok"], [echo_value])
    assert results[0]["content"] == "echoed"


@pytest.mark.parametrize("raw", [[1, 2], 7, {"a": 1}])
def test_arguments_of_any_shape_are_decoded_without_raising(raw):
    request = ToolCallRequest.from_json("c1", "t", raw)
    if isinstance(raw, dict):
        assert request.arguments == raw and request.error is None
    else:
        assert (
            request.error == (f"the arguments must be a JSON object, not {type(raw).__name__}")
            and request.arguments == {}
        )


def test_a_tool_returning_an_integer_too_long_to_print_gives_a_tool_error():
    @tool
    def big() -> int:
        """A big number."""
        return 10**5000

    answer, results, _ = run([call("big"), "fine"], [big])
    assert answer == "fine"
    assert results[0]["content"].startswith(
        "Tool 'big' returned a value that cannot be turned into text: ValueError:"
    )


def test_a_tool_returning_a_list_that_contains_itself_gives_a_tool_error():
    @tool
    def loop() -> list:
        """A loop."""
        items: list = []
        items.append(items)
        return items

    answer, results, _ = run([call("loop"), "fine"], [loop])
    assert answer == "fine"
    assert "cannot be turned into text: ValueError: Circular reference" in results[0]["content"]


def test_a_streaming_tool_yielding_a_list_that_contains_itself_keeps_its_result():
    @tool
    def progress():
        """Report progress."""
        items: list = []
        items.append(items)
        yield items
        return "all done"

    model = ScriptedClient([call("progress"), "fine"])
    agent = Agent(model, tools=[progress])
    chunks = list(agent.run("go", stream=True))
    shown = next(c for c in chunks if c.phase is Phase.TOOL_PROGRESS).content["progress"]
    json.dumps(shown)
    result = next(c for c in chunks if c.phase is Phase.TOOL_RESULT).content
    assert result["result"] == "all done" and not result["is_error"]


def test_a_set_of_dicts_is_refused_at_decoration():
    with pytest.raises(ToolSignatureError, match="hashable"):

        @tool
        def tags(items: set[dict]) -> str:
            """Tags."""
            return ""


def test_a_set_given_objects_is_an_argument_error_the_model_reads():
    @tool
    def tags(items: set[Any]) -> str:
        """Tags."""
        return str(len(items))

    answer, results, _ = run(
        [call("tags", items=[{"a": 1}, {"b": 2}]), call("tags", items=["a", "b", "a"]), "done"],
        [tags],
    )
    assert answer == "done"
    assert "'items': expected array" in results[0]["content"]
    assert "plain values, not objects or arrays" in results[0]["content"]
    assert results[1]["content"] == "2"


def test_annotated_with_unhashable_metadata_is_read_as_its_type():
    @tool
    def double(n: Annotated[int, {}]) -> int:
        """Double n."""
        return n * 2

    assert double.__tool_spec__["function"]["parameters"]["properties"]["n"] == {"type": "integer"}
    _, results, _ = run([call("double", n="21"), "ok"], [double])
    assert results[0]["content"] == "42"


class Broken:
    """A model-like class whose schema cannot be produced."""

    @classmethod
    def model_json_schema(cls):
        raise RuntimeError("cannot describe myself")

    @classmethod
    def model_validate(cls, value):
        return value


@dataclasses.dataclass
class Range:
    low: int
    high: int

    def __post_init__(self):
        if self.low > self.high:
            raise ValueError("low must not exceed high")


def test_an_annotation_that_breaks_while_being_read_is_a_signature_error():
    with pytest.raises(ToolSignatureError, match=r"cannot be read.*cannot describe myself"):

        @tool
        def use(thing: Broken) -> str:
            """Use it."""
            return ""


def test_a_type_whose_constructor_refuses_the_value_is_an_argument_error():
    @tool
    def span(r: Range) -> int:
        """Width of a range."""
        return r.high - r.low

    answer, results, _ = run([call("span", r={"low": 5, "high": 1}), "ok"], [span])
    assert answer == "ok"
    assert "low must not exceed high" in results[0]["content"]
    assert results[0]["content"].startswith("Invalid arguments for tool 'span':")
