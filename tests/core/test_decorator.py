"""@tool: the spec a model reads, built from signature and docstring."""

import dataclasses
import enum
from typing import Literal, Optional, TypedDict

import jsonschema
import pydantic
import pytest

import aimu
from aimu.tools import ToolContext, ToolSignatureError, tool


def params(fn):
    return fn.__tool_spec__["function"]["parameters"]


def test_decorator_returns_the_same_callable_function():
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert tool(add) is add
    assert add(2, 3) == 5
    assert aimu.tools.tool is aimu.tool


def test_spec_is_openai_function_format():
    @tool
    def letter_counter(word: str, letter: str) -> int:
        """Count occurrences of a letter in a word."""
        return word.count(letter)

    assert letter_counter.__tool_spec__ == {
        "type": "function",
        "function": {
            "name": "letter_counter",
            "description": "Count occurrences of a letter in a word.",
            "parameters": {
                "type": "object",
                "properties": {"word": {"type": "string"}, "letter": {"type": "string"}},
                "required": ["word", "letter"],
                "additionalProperties": False,
            },
        },
    }


def test_scalar_types_and_optional_unwrap():
    @tool
    def f(
        s: str,
        i: int,
        x: float,
        b: bool,
        items: list,
        d: dict,
        o: Optional[int] = None,  # noqa: UP045
        p: str | None = None,
    ):
        """F."""

    props = params(f)["properties"]
    assert props["s"] == {"type": "string"}
    assert props["i"] == {"type": "integer"}
    assert props["x"] == {"type": "number"}
    assert props["b"] == {"type": "boolean"}
    assert props["items"] == {"type": "array"}
    assert props["d"] == {"type": "object"}
    assert props["o"] == {"type": "integer", "default": None}
    assert props["p"] == {"type": "string", "default": None}
    assert params(f)["required"] == ["s", "i", "x", "b", "items", "d"]


def test_literal_becomes_enum_with_exact_values():
    @tool
    def f(unit: Literal["celsius", "fahrenheit"], level: Literal[1, 2, 3] = 2):
        """F."""

    props = params(f)["properties"]
    assert props["unit"] == {"type": "string", "enum": ["celsius", "fahrenheit"]}
    assert props["level"] == {"type": "integer", "enum": [1, 2, 3], "default": 2}


def test_google_docstring_description_and_args():
    @tool
    def search(query: str, limit: int = 5) -> list:
        """Search the catalogue.

        Matches titles and authors, case-insensitively.

        Args:
            query: Words to look for. Several words
                must all match.
            limit (int): The most results to return.

        Returns:
            A list of titles.

        Raises:
            ValueError: never, really.

        Examples:
            search("dune")
        """

    spec = search.__tool_spec__["function"]
    assert spec["description"] == (
        "Search the catalogue.\n\nMatches titles and authors, case-insensitively."
    )
    props = spec["parameters"]["properties"]
    assert props["query"]["description"] == "Words to look for. Several words must all match."
    assert props["limit"]["description"] == "The most results to return."
    assert props["limit"]["default"] == 5
    assert "titles" not in spec["description"].split("\n\n")[-1].replace("Matches titles", "")
    assert "Raises" not in spec["description"] and "search(" not in spec["description"]


@pytest.mark.parametrize("header", ["Args:", "Arguments:", "Parameters:"])
def test_all_argument_section_names_are_read(header):
    def f(x: int):
        pass

    f.__doc__ = f"Do it.\n\n{header}\n    x: The x.\n"
    assert params(tool(f))["properties"]["x"]["description"] == "The x."


def test_missing_hint_and_default_is_refused_naming_function_and_parameter():
    def broken(a: int, b):
        """B."""

    with pytest.raises(ToolSignatureError) as info:
        tool(broken)
    assert "'b'" in str(info.value) and "broken" in str(info.value)
    assert isinstance(info.value, TypeError)


@pytest.mark.parametrize("signature", ["*args: int", "**kwargs: int"])
def test_variadic_parameters_are_refused(signature):
    namespace = {}
    exec(f"def variadic(a: int, {signature}):\n    'V.'\n", namespace)
    with pytest.raises(ToolSignatureError) as info:
        tool(namespace["variadic"])
    assert signature.split(":")[0] in str(info.value) and "of variadic" in str(info.value)


def test_unannotated_parameter_with_default_takes_the_default_type():
    @tool
    def f(n=3, name="x", flag=False):
        """F."""

    props = params(f)["properties"]
    assert props["n"]["type"] == "integer"
    assert props["name"]["type"] == "string"
    assert props["flag"]["type"] == "boolean"
    assert params(f)["required"] == []


def test_unsupported_type_is_a_clear_signature_error():
    class Opaque:
        pass

    def f(thing: Opaque):
        """F."""

    with pytest.raises(ToolSignatureError, match=r"'thing'.*Opaque"):
        tool(f)


def test_async_generator_and_async_generator_flags():
    @tool
    def plain() -> str:
        """P."""

    @tool
    async def coro() -> str:
        """C."""

    @tool
    def gen():
        """G."""
        yield 1

    @tool
    async def agen():
        """A."""
        yield 1

    flags = {
        f.__name__: (f.__tool_is_async__, f.__tool_is_streaming__) for f in (plain, coro, gen, agen)
    }
    assert flags == {
        "plain": (False, False),
        "coro": (True, False),
        "gen": (False, True),
        "agen": (True, True),
    }


def test_tool_context_parameter_is_not_advertised():
    @tool
    def lookup(key: str, ctx: ToolContext) -> str:
        """Look up."""
        return ctx.deps[key]

    assert list(params(lookup)["properties"]) == ["key"]
    assert params(lookup)["required"] == ["key"]


def test_typed_containers_carry_items_and_value_schemas():
    @tool
    def f(ids: list[int], scores: dict[str, float], tags: set[str] = frozenset()):
        """F."""

    props = params(f)["properties"]
    assert props["ids"] == {"type": "array", "items": {"type": "integer"}}
    assert props["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["tags"]["uniqueItems"] is True


def test_union_becomes_any_of():
    @tool
    def f(value: int | str):
        """F."""

    assert params(f)["properties"]["value"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


def test_enum_subclass_becomes_enum_of_values_and_default_is_its_value():
    @tool
    def paint(colour: Colour = Colour.RED):
        """Paint."""

    assert params(paint)["properties"]["colour"] == {
        "type": "string",
        "enum": ["red", "green"],
        "default": "red",
    }


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


def test_structured_types_become_object_schemas():
    @tool
    def f(address: Address, point: Point, window: Window):
        """F."""

    props = params(f)["properties"]
    assert props["address"]["type"] == "object"
    assert set(props["address"]["properties"]) == {"street", "number"}
    assert props["point"]["properties"] == {"x": {"type": "number"}, "y": {"type": "number"}}
    assert props["point"]["required"] == ["x", "y"]
    assert props["window"]["required"] == ["start"]
    jsonschema.Draft202012Validator.check_schema(params(f))


def test_nested_pydantic_models_hoist_their_definitions_to_the_root():
    class Person(pydantic.BaseModel):
        name: str
        home: Address

    @tool
    def register(people: list[Person]):
        """Register."""

    schema = params(register)
    assert "Address" in schema["$defs"]
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate({"people": [{"name": "A", "home": {"street": "Main"}}]})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"people": [{"name": "A", "home": {"number": 2}}]})


def test_name_and_description_can_be_overridden():
    @tool(name="find", description="Find things.")
    def _search_impl(q: str):
        """Internal docs."""

    assert _search_impl.__tool_spec__["function"]["name"] == "find"
    assert _search_impl.__tool_spec__["function"]["description"] == "Find things."


def test_lambda_needs_a_name():
    with pytest.raises(ToolSignatureError, match="name="):
        tool(lambda x=1: x)
