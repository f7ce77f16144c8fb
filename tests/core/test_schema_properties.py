"""Property tests: every supported annotation yields a valid JSON Schema, and coercion
accepts every value that schema allows."""

import enum
import inspect
import itertools
from typing import Literal, Optional, Union

import jsonschema
import pydantic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typing_extensions import TypedDict

from aimu.tools import coerce_tool_arguments, tool


class Shade(enum.Enum):
    LIGHT = "light"
    DARK = "dark"


class Size(enum.IntEnum):
    S = 1
    M = 2


_names = itertools.count()

scalars = st.sampled_from([str, int, float, bool, list, dict, Shade, Size])
literals = st.one_of(
    st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=4, unique=True),
    st.lists(st.integers(-50, 50), min_size=1, max_size=4, unique=True),
).map(lambda values: Literal[tuple(values)])


def _typed_dict(fields: dict) -> type:
    return TypedDict(f"TD{next(_names)}", fields)


def _model(fields: dict) -> type:
    return pydantic.create_model(f"M{next(_names)}", **{k: (v, ...) for k, v in fields.items()})


def extend(inner):
    field_maps = st.dictionaries(
        st.from_regex(r"[a-z]{1,6}", fullmatch=True), inner, min_size=1, max_size=3
    )
    return st.one_of(
        inner.map(lambda t: list[t]),
        inner.map(lambda t: dict[str, t]),
        inner.map(lambda t: Optional[t]),  # noqa: UP045 (the old spelling is what we test)
        inner.map(lambda t: t | None),
        st.tuples(inner, inner).filter(lambda ts: ts[0] != ts[1]).map(lambda ts: Union[ts]),  # noqa: UP007
        field_maps.map(_typed_dict),
        field_maps.map(_model),
    )


annotations = st.recursive(st.one_of(scalars, literals), extend, max_leaves=6)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def from_schema(schema: dict, root: dict | None = None) -> st.SearchStrategy:
    """Values valid for the subset of JSON Schema the decorator produces."""
    root = root or schema
    if "$ref" in schema:
        return from_schema(root["$defs"][schema["$ref"].rsplit("/", 1)[-1]], root)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([from_schema(s, root) for s in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "string":
        return st.text(max_size=10)
    if kind == "integer":
        return st.integers(-(10**12), 10**12)
    if kind == "number":
        return st.integers(-(10**6), 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = from_schema(schema["items"], root) if "items" in schema else json_values
        return st.lists(items, max_size=3, unique_by=(repr if schema.get("uniqueItems") else None))
    if kind == "object":
        if "properties" in schema:
            required = set(schema.get("required", []))
            props = {k: from_schema(v, root) for k, v in schema["properties"].items()}
            return st.fixed_dictionaries(
                {k: v for k, v in props.items() if k in required},
                optional={k: v for k, v in props.items() if k not in required},
            )
        extra = schema.get("additionalProperties")
        values = from_schema(extra, root) if isinstance(extra, dict) else json_values
        return st.dictionaries(st.text(max_size=4), values, max_size=3)
    return json_values


def make_tool(hints: list) -> object:
    def fn(**kwargs):
        return kwargs

    parameters = [
        inspect.Parameter(f"p{i}", inspect.Parameter.KEYWORD_ONLY, annotation=hint)
        for i, hint in enumerate(hints)
    ]
    fn.__signature__ = inspect.Signature(parameters)
    fn.__annotations__ = {p.name: p.annotation for p in parameters}
    fn.__doc__ = "Generated tool."
    return tool(fn)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(annotations, min_size=1, max_size=4))
def test_any_supported_annotations_yield_a_valid_json_schema(hints):
    schema = make_tool(hints).__tool_spec__["function"]["parameters"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["required"] == [f"p{i}" for i in range(len(hints))]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(annotations, min_size=1, max_size=3), st.data())
def test_coercion_accepts_every_value_valid_for_the_schema(hints, data):
    fn = make_tool(hints)
    schema = fn.__tool_spec__["function"]["parameters"]
    arguments = data.draw(from_schema(schema))
    jsonschema.validate(arguments, schema)
    coerced = coerce_tool_arguments(fn, arguments)
    assert set(coerced) == set(arguments)
