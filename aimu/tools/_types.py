"""Type adapters: one object per annotation that knows its JSON Schema and how to coerce.

Built once when ``@tool`` decorates a function, so the spec the model reads and the checks
its arguments meet come from the same description of each parameter.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import types
import typing
from collections.abc import Callable
from typing import Any

_MISSING = object()


class Mismatch(Exception):
    """A value could not be coerced; ``expected`` says what was wanted."""

    def __init__(self, expected: str, detail: str = ""):
        super().__init__(expected)
        self.expected = expected
        self.detail = detail


class UnsupportedType(TypeError):
    """An annotation a model cannot supply a value for."""


class Adapter:
    """Schema plus coercion for one annotation."""

    schema: dict[str, Any]
    label: str

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` already has this type (used to pick a union member)."""
        return False

    def coerce(self, value: Any) -> Any:
        raise NotImplementedError


def _parse_json(value: str, kind: type) -> Any:
    try:
        decoded = json.loads(value)
    except ValueError:
        return _MISSING
    return decoded if isinstance(decoded, kind) else _MISSING


class AnyAdapter(Adapter):
    label = "any JSON value"

    def __init__(self) -> None:
        self.schema = {}

    def accepts(self, value: Any) -> bool:
        return True

    def coerce(self, value: Any) -> Any:
        return value


class StrAdapter(Adapter):
    label = "string"

    def __init__(self) -> None:
        self.schema = {"type": "string"}

    def accepts(self, value: Any) -> bool:
        return type(value) is str

    def coerce(self, value: Any) -> Any:
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        raise Mismatch(self.label)


class IntAdapter(Adapter):
    label = "integer"

    def __init__(self) -> None:
        self.schema = {"type": "integer"}

    def accepts(self, value: Any) -> bool:
        return type(value) is int

    def coerce(self, value: Any) -> Any:
        if type(value) is int:
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            text = value.strip()
            try:
                return int(text)
            except ValueError:
                try:
                    number = float(text)
                except ValueError:
                    raise Mismatch(self.label) from None
                if number.is_integer():
                    return int(number)
        raise Mismatch(self.label)


class FloatAdapter(Adapter):
    label = "number"

    def __init__(self) -> None:
        self.schema = {"type": "number"}

    def accepts(self, value: Any) -> bool:
        return type(value) is float

    def coerce(self, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:
                raise Mismatch(self.label, "too large for a floating-point number") from None
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
        raise Mismatch(self.label)


_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}


class BoolAdapter(Adapter):
    label = "boolean"

    def __init__(self) -> None:
        self.schema = {"type": "boolean"}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)

    def coerce(self, value: Any) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            word = value.strip().lower()
            if word in _TRUE:
                return True
            if word in _FALSE:
                return False
        if type(value) is int and value in (0, 1):
            return bool(value)
        raise Mismatch(self.label)


class ListAdapter(Adapter):
    def __init__(self, item: Adapter | None, container: type = list, unique: bool = False):
        self.item = item
        self.container = container
        self.schema = {"type": "array"}
        if item is not None:
            self.schema["items"] = item.schema
        if unique:
            self.schema["uniqueItems"] = True
        self.label = f"array of {item.label}" if item else "array"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, list) and (
            self.item is None or all(self.item.accepts(v) for v in value)
        )

    def coerce(self, value: Any) -> Any:
        if isinstance(value, str):
            value = _parse_json(value, list)
        if not isinstance(value, list | tuple):
            raise Mismatch(self.label)
        items = value
        if self.item is not None:
            items = []
            for index, item in enumerate(value):
                try:
                    items.append(self.item.coerce(item))
                except Mismatch as exc:
                    raise Mismatch(self.label, f"item {index}: expected {exc.expected}") from None
        try:
            return self.container(items)
        except TypeError:  # a set given unhashable items (objects, arrays)
            raise Mismatch(
                self.label, "the items must be plain values, not objects or arrays"
            ) from None


class DictAdapter(Adapter):
    def __init__(self, value: Adapter | None):
        self.value = value
        self.schema = {"type": "object"}
        if value is not None:
            self.schema["additionalProperties"] = value.schema
        self.label = f"object of {value.label}" if value else "object"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, dict) and (
            self.value is None or all(self.value.accepts(v) for v in value.values())
        )

    def coerce(self, value: Any) -> Any:
        if isinstance(value, str):
            value = _parse_json(value, dict)
        if not isinstance(value, dict):
            raise Mismatch(self.label)
        if self.value is None:
            return dict(value)
        result = {}
        for key, item in value.items():
            try:
                result[key] = self.value.coerce(item)
            except Mismatch as exc:
                raise Mismatch(self.label, f"key {key!r}: expected {exc.expected}") from None
        return result


def _json_type(values: list[Any]) -> str | None:
    kinds = {type(v) for v in values}
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if len(kinds) == 1 and (kind := kinds.pop()) in names:
        return names[kind]
    return None


class ChoiceAdapter(Adapter):
    """``Literal[...]`` and ``enum.Enum``: a fixed set of allowed values."""

    def __init__(self, values: list[Any], members: list[Any] | None = None):
        self.values = values
        self.members = members if members is not None else values
        self.schema = {"enum": list(values)}
        if json_type := _json_type(values):
            self.schema = {"type": json_type, "enum": list(values)}
        self.label = "one of " + ", ".join(json.dumps(v) for v in values)
        self._scalars = [_adapter_for_value(v) for v in values]

    def accepts(self, value: Any) -> bool:
        return any(v == value and type(v) is type(value) for v in self.values) or any(
            value is m for m in self.members
        )

    def coerce(self, value: Any) -> Any:
        for member in self.members:
            if value is member:
                return member
        for candidate, member, scalar in zip(self.values, self.members, self._scalars, strict=True):
            if type(candidate) is type(value) and candidate == value:
                return member
            if scalar is not None:
                try:
                    if scalar.coerce(value) == candidate:
                        return member
                except Mismatch:
                    continue
        if isinstance(value, str):
            for member in self.members:
                if isinstance(member, enum.Enum) and member.name == value:
                    return member
        raise Mismatch(self.label)


def _adapter_for_value(value: Any) -> Adapter | None:
    return {bool: BoolAdapter, int: IntAdapter, float: FloatAdapter, str: StrAdapter}.get(
        type(value), lambda: None
    )()


class UnionAdapter(Adapter):
    def __init__(self, members: list[Adapter]):
        self.members = members
        self.schema = {"anyOf": [m.schema for m in members]}
        self.label = " or ".join(m.label for m in members)

    def accepts(self, value: Any) -> bool:
        return any(m.accepts(value) for m in self.members)

    def coerce(self, value: Any) -> Any:
        for member in self.members:
            if member.accepts(value):
                return member.coerce(value)
        for member in self.members:
            try:
                return member.coerce(value)
            except Mismatch:
                continue
        raise Mismatch(self.label)


class OptionalAdapter(Adapter):
    """``T | None``: advertised as ``T``; ``null`` is accepted as well."""

    def __init__(self, inner: Adapter):
        self.inner = inner
        self.schema = inner.schema
        self.label = inner.label

    def accepts(self, value: Any) -> bool:
        return value is None or self.inner.accepts(value)

    def coerce(self, value: Any) -> Any:
        return None if value is None else self.inner.coerce(value)


class DateTimeAdapter(Adapter):
    def __init__(self, kind: type):
        self.kind = kind
        fmt = {dt.datetime: "date-time", dt.date: "date", dt.time: "time"}[kind]
        self.schema = {"type": "string", "format": fmt}
        self.label = f"ISO 8601 {fmt} string"

    def accepts(self, value: Any) -> bool:
        return type(value) is self.kind

    def coerce(self, value: Any) -> Any:
        if type(value) is self.kind:
            return value
        if isinstance(value, str):
            try:
                return self.kind.fromisoformat(value.strip())
            except ValueError:
                pass
        raise Mismatch(self.label)


class ObjectAdapter(Adapter):
    """TypedDicts and dataclasses: an object with declared properties."""

    def __init__(self, cls: type, fields: dict[str, Adapter], required: set[str], build):
        self.cls = cls
        self.fields = fields
        self.required = required
        self.build = build
        self.schema = {
            "type": "object",
            "title": cls.__name__,
            "properties": {name: a.schema for name, a in fields.items()},
            "required": [name for name in fields if name in required],
            "additionalProperties": False,
        }
        self.label = f"{cls.__name__} object"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.cls) if dataclasses.is_dataclass(self.cls) else False

    def coerce(self, value: Any) -> Any:
        if dataclasses.is_dataclass(self.cls) and isinstance(value, self.cls):
            return value
        if isinstance(value, str):
            value = _parse_json(value, dict)
        if not isinstance(value, dict):
            raise Mismatch(self.label)
        problems = [f"unknown key {k!r}" for k in value if k not in self.fields]
        problems += [
            f"missing key {k!r}" for k in self.fields if k in self.required and k not in value
        ]
        result = {}
        for key, item in value.items():
            if key in self.fields:
                try:
                    result[key] = self.fields[key].coerce(item)
                except Mismatch as exc:
                    problems.append(f"key {key!r}: expected {exc.detail or exc.expected}")
        if problems:
            raise Mismatch(self.label, "; ".join(problems))
        return self.build(result)


class PydanticAdapter(Adapter):
    def __init__(self, cls: type):
        self.cls = cls
        self.schema = cls.model_json_schema()
        self.label = f"{cls.__name__} object"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.cls)

    def coerce(self, value: Any) -> Any:
        if isinstance(value, self.cls):
            return value
        try:
            if isinstance(value, str):
                return self.cls.model_validate_json(value)
            return self.cls.model_validate(value)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            details = getattr(exc, "errors", lambda: [])()
            text = "; ".join(
                f"{'.'.join(str(p) for p in e.get('loc', ())) or 'value'}: {e.get('msg')}"
                for e in details
            )
            raise Mismatch(self.label, text or str(exc).splitlines()[0]) from None


_SCALARS: dict[Any, Callable[[], Adapter]] = {
    str: StrAdapter,
    int: IntAdapter,
    float: FloatAdapter,
    bool: BoolAdapter,
    Any: AnyAdapter,
    object: AnyAdapter,
    dt.datetime: lambda: DateTimeAdapter(dt.datetime),
    dt.date: lambda: DateTimeAdapter(dt.date),
    dt.time: lambda: DateTimeAdapter(dt.time),
}


def adapter_for(annotation: Any, _seen: frozenset = frozenset()) -> Adapter:
    """The adapter for a resolved annotation; :class:`UnsupportedType` if there is none."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:  # its metadata may be unhashable: unwrap before any lookup
        return adapter_for(args[0], _seen)
    scalar = _scalar(annotation)
    if scalar is not None:
        return scalar()
    if annotation is None or annotation is type(None):
        raise UnsupportedType("None on its own carries no value")

    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        inner = (
            adapter_for(members[0], _seen)
            if len(members) == 1
            else UnionAdapter([adapter_for(m, _seen) for m in members])
        )
        return OptionalAdapter(inner) if len(members) < len(args) else inner
    if origin is typing.Literal:
        values = [a for a in args if a is not None]
        if not values:
            raise UnsupportedType("Literal[None] carries no value")
        choice = ChoiceAdapter([v.value if isinstance(v, enum.Enum) else v for v in values], values)
        return OptionalAdapter(choice) if len(values) < len(args) else choice
    if annotation in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        container = origin or annotation
        item_args = [a for a in args if a is not Ellipsis]
        if container is tuple and len(item_args) > 1 and len(set(item_args)) > 1:
            raise UnsupportedType("fixed-length tuples of mixed types are not supported")
        item = adapter_for(item_args[0], _seen) if item_args else None
        unique = container in (set, frozenset)
        if unique and isinstance(item, ListAdapter | DictAdapter | ObjectAdapter):
            raise UnsupportedType(
                f"a {container.__name__} holds hashable items, and {item.label} values are "
                "not; use list[...] instead"
            )
        return ListAdapter(item, container, unique=unique)
    if annotation is dict or origin is dict:
        if args and args[0] is not str:
            raise UnsupportedType("JSON object keys are strings; use dict[str, ...]")
        return DictAdapter(adapter_for(args[1], _seen) if args else None)
    if isinstance(annotation, type):
        if annotation in _seen:
            raise UnsupportedType(f"{annotation.__name__} refers to itself")
        if issubclass(annotation, enum.Enum):
            members = list(annotation)
            return ChoiceAdapter([m.value for m in members], members)
        if hasattr(annotation, "model_json_schema") and hasattr(annotation, "model_validate"):
            return PydanticAdapter(annotation)
        if _is_typeddict(annotation):
            hints = typing.get_type_hints(annotation)
            fields = {n: adapter_for(t, _seen | {annotation}) for n, t in hints.items()}
            return ObjectAdapter(annotation, fields, set(annotation.__required_keys__), dict)
        if dataclasses.is_dataclass(annotation):
            hints = typing.get_type_hints(annotation)
            fields = {
                f.name: adapter_for(hints[f.name], _seen | {annotation})
                for f in dataclasses.fields(annotation)
                if f.init
            }
            required = {
                f.name
                for f in dataclasses.fields(annotation)
                if f.init
                and f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING
            }
            return ObjectAdapter(annotation, fields, required, lambda kw: annotation(**kw))
    name = getattr(annotation, "__name__", None) or repr(annotation)
    raise UnsupportedType(f"{name} is not a type a model can supply")


def _scalar(annotation: Any) -> Callable[[], Adapter] | None:
    try:
        return _SCALARS.get(annotation)
    except TypeError:  # an unhashable annotation is no scalar
        return None


def _is_typeddict(cls: type) -> bool:
    """``typing`` and ``typing_extensions`` TypedDicts alike."""
    return typing.is_typeddict(cls) or (
        issubclass(cls, dict) and hasattr(cls, "__required_keys__") and hasattr(cls, "__total__")
    )


def adapter_for_default(default: Any) -> Adapter:
    """For an unannotated parameter: the type of its default, or any value for ``None``."""
    if default is None:
        return AnyAdapter()
    kind = type(default)
    if kind in _SCALARS or kind in (list, dict, tuple) or isinstance(default, enum.Enum):
        return adapter_for(kind)
    return AnyAdapter()
