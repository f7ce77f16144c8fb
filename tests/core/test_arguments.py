"""coerce_tool_arguments: lax coercion, and one message listing every problem."""

import dataclasses
import datetime as dt
import enum
from typing import Literal, TypedDict

import pydantic
import pytest

from aimu.tools import ToolArgumentError, coerce_tool_arguments, tool


@tool
def sample(
    count: int,
    ratio: float,
    flag: bool,
    label: str,
    ids: list[int] | None = None,
    opts: dict | None = None,
):
    """Sample."""


def test_lax_coercion_of_scalars():
    out = coerce_tool_arguments(sample, {"count": "5", "ratio": "0.5", "flag": "true", "label": 5})
    assert out == {"count": 5, "ratio": 0.5, "flag": True, "label": "5"}
    assert type(out["count"]) is int and type(out["label"]) is str


def test_integral_float_becomes_int_but_fraction_is_rejected():
    assert (
        coerce_tool_arguments(sample, {"count": 3.0, "ratio": 1, "flag": 0, "label": ""})["count"]
        == 3
    )
    with pytest.raises(ToolArgumentError, match=r"'count': expected integer, got 3.5"):
        coerce_tool_arguments(sample, {"count": 3.5, "ratio": 1, "flag": False, "label": ""})


def test_json_strings_are_accepted_for_containers():
    out = coerce_tool_arguments(
        sample,
        {
            "count": 1,
            "ratio": 1,
            "flag": "no",
            "label": "x",
            "ids": '[1, "2"]',
            "opts": '{"a": 1}',
        },
    )
    assert out["ids"] == [1, 2] and out["opts"] == {"a": 1} and out["flag"] is False


def test_one_message_lists_every_problem_and_names_the_tool():
    with pytest.raises(ToolArgumentError) as info:
        coerce_tool_arguments(
            sample, {"count": "many", "ratio": 1.0, "flag": "perhaps", "colour": "red"}
        )
    message = str(info.value)
    assert message.startswith("Invalid arguments for tool 'sample':")
    assert "unknown argument 'colour'" in message
    assert "the tool takes: count, ratio, flag, label, ids, opts" in message
    assert "'count': expected integer, got \"many\"" in message
    assert "'flag': expected boolean" in message
    assert "missing required argument 'label' (string)" in message
    assert isinstance(info.value, ValueError)


def test_list_item_errors_say_which_item():
    with pytest.raises(ToolArgumentError, match=r"item 1: expected integer"):
        coerce_tool_arguments(
            sample, {"count": 1, "ratio": 1, "flag": True, "label": "", "ids": [1, "x"]}
        )


def test_huge_values_are_previewed_not_echoed_whole():
    with pytest.raises(ToolArgumentError) as info:
        coerce_tool_arguments(sample, {"count": "x" * 100_000, "ratio": 1, "flag": 1, "label": ""})
    assert len(str(info.value)) < 500


def test_non_dict_arguments_are_rejected_clearly():
    with pytest.raises(ToolArgumentError, match="expected a JSON object"):
        coerce_tool_arguments(sample, ["count", 1])


def test_literal_and_enum_coercion():
    class Mode(enum.Enum):
        FAST = "fast"
        SLOW = "slow"

    @tool
    def f(level: Literal[1, 2, 3], mode: Mode, unit: Literal["c", "f"] = "c"):
        """F."""

    out = coerce_tool_arguments(f, {"level": "2", "mode": "slow"})
    assert out == {"level": 2, "mode": Mode.SLOW}
    assert coerce_tool_arguments(f, {"level": 1, "mode": "FAST"})["mode"] is Mode.FAST
    with pytest.raises(ToolArgumentError, match=r"'unit': expected one of \"c\", \"f\""):
        coerce_tool_arguments(f, {"level": 1, "mode": "fast", "unit": "kelvin"})


def test_union_prefers_the_member_the_value_already_is():
    @tool
    def f(value: int | str):
        """F."""

    assert coerce_tool_arguments(f, {"value": "5"}) == {"value": "5"}
    assert coerce_tool_arguments(f, {"value": 5}) == {"value": 5}


def test_structured_values_are_built_into_their_types():
    class Address(pydantic.BaseModel):
        street: str
        number: int = 1

    class Point(TypedDict):
        x: float
        y: float

    @dataclasses.dataclass
    class Window:
        start: int
        end: int = 10

    @tool
    def f(address: Address, point: Point, window: Window, when: dt.date):
        """F."""

    out = coerce_tool_arguments(
        f,
        {
            "address": '{"street": "Main", "number": "4"}',
            "point": {"x": "1", "y": 2},
            "window": {"start": "3"},
            "when": "2026-11-30",
        },
    )
    assert out["address"] == Address(street="Main", number=4)
    assert out["point"] == {"x": 1.0, "y": 2.0}
    assert out["window"] == Window(3)
    assert out["when"] == dt.date(2026, 11, 30)


def test_model_validation_errors_reach_the_message():
    class Address(pydantic.BaseModel):
        street: str

    @tool
    def f(address: Address):
        """F."""

    with pytest.raises(ToolArgumentError, match=r"street: Field required"):
        coerce_tool_arguments(f, {"address": {}})


def test_callables_without_parameter_data_pass_through_unchanged():
    def mcp_wrapper(**kwargs):
        return kwargs

    mcp_wrapper.__tool_spec__ = {"type": "function", "function": {"name": "x"}}
    arguments = {"anything": "goes", "n": "5"}
    out = coerce_tool_arguments(mcp_wrapper, arguments)
    assert out == arguments and out is not arguments
