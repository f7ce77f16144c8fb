"""``@tool``: turn a Python function into a tool a model can call.

All signature-to-schema work happens here, once, at decoration time. The result is stored on
the function itself, which is returned unchanged:

- ``__tool_spec__``: the OpenAI function spec the model reads;
- ``__tool_params__``: the :class:`ToolParameters` that coerce the model's arguments;
- ``__tool_is_async__`` / ``__tool_is_streaming__``: how dispatch must call it;
- ``__tool_read_only__``: ``True`` if the tool only reads, ``False`` if it writes, executes,
  submits or spawns, ``None`` if undeclared. Approval gates read it (see
  :func:`aimu.tools.approval.read_only`), so whether a call asks is a property of the tool.
- ``__tool_code__`` (optional, set by the tool's author): ``{parameter: language}`` for the
  parameters that hold code or file text (``"python"``, ``"sh"``, ``""`` for text), so a
  person approving the call reads them as code, not as one escaped line.
"""

from __future__ import annotations

import copy
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from aimu.tools._docstring import parse_docstring
from aimu.tools._types import Adapter, UnsupportedType, adapter_for, adapter_for_default
from aimu.tools.context import ToolContext
from aimu.tools.errors import ToolSignatureError

F = TypeVar("F", bound=Callable[..., Any])

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class Parameter:
    """One model-facing parameter: its adapter, whether it is required, its default."""

    name: str
    adapter: Adapter
    required: bool
    default: Any = inspect.Parameter.empty


@dataclass(frozen=True, slots=True)
class ToolParameters:
    """Everything dispatch needs about a tool's parameters, built once."""

    tool_name: str
    params: dict[str, Parameter]
    context_param: str | None = None


@overload
def tool(func: F, /) -> F: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, read_only: bool | None = None
) -> Callable[[F], F]: ...


def tool(
    func: Callable | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool | None = None,
) -> Any:
    """Mark a function as a tool.

    Reads the signature and the Google-style docstring now and attaches an OpenAI-format spec
    as ``func.__tool_spec__``; returns ``func`` itself, still directly callable (re-decorating
    a tool with a new ``name``, ``description`` or ``read_only`` returns a copy instead, so
    the original keeps its own). Every
    parameter needs a type hint or a default; ``*args`` and ``**kwargs`` are refused.

    Use it bare, or with ``name=`` / ``description=`` to override what the model sees::

        @tool
        def letter_counter(word: str, letter: str) -> int:
            \"\"\"Count how often a letter occurs in a word.\"\"\"
            return word.lower().count(letter.lower())

    ``read_only`` declares what the tool does, for approval gates: ``True`` if it only reads
    (the notebook runs it without asking), ``False`` if it writes, executes, submits or spawns
    (the notebook asks first). Left out, a classification the function already carries is
    kept, so re-decorating a built-in never clears its flag.
    """
    if read_only is not None and not isinstance(read_only, bool):
        raise ToolSignatureError(f"@tool: read_only must be True, False or None, not {read_only!r}")
    if func is None:
        return lambda f: _decorate(f, name, description, read_only)
    return _decorate(func, name, description, read_only)


def _decorate(
    func: Callable, name: str | None, description: str | None, read_only: bool | None
) -> Callable:
    if not callable(func):
        raise ToolSignatureError(f"@tool needs a function, got {type(func).__name__}")
    overrides = name or description is not None or read_only is not None
    if overrides and hasattr(func, "__tool_spec__"):
        func = _copy(func)
    tool_name = name or getattr(func, "__name__", "")
    label = getattr(func, "__qualname__", tool_name)
    if not _NAME.match(tool_name):
        raise ToolSignatureError(
            f"@tool: {tool_name!r} ({label}) is not a valid tool name; use 1-64 letters, "
            "digits, '_' or '-' (pass name=... to choose one)"
        )
    text, param_docs = parse_docstring(inspect.getdoc(func))
    params, context_param = _parameters(func, label)

    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for param in params.values():
        schema = _hoist_defs(dict(param.adapter.schema), defs, label)
        if param_docs.get(param.name):
            schema["description"] = param_docs[param.name]
        if not param.required and (default := _json_default(param.default)) is not _NO_DEFAULT:
            schema["default"] = default
        properties[param.name] = schema
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in params.values() if p.required],
        "additionalProperties": False,
    }
    if defs:
        parameters["$defs"] = defs

    func.__tool_spec__ = {
        "type": "function",
        "function": {
            "name": tool_name,
            "description": description if description is not None else text,
            "parameters": parameters,
        },
    }
    func.__tool_params__ = ToolParameters(tool_name, params, context_param)
    func.__tool_is_async__ = inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func)
    func.__tool_is_streaming__ = inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(
        func
    )
    if read_only is not None or not hasattr(func, "__tool_read_only__"):
        func.__tool_read_only__ = read_only
    return func


def _copy(func: Callable) -> Callable:
    """Another function object running the same code: re-decorating a tool (a built-in, say)
    under a new name or classification must not rename it for everyone else using it."""
    if isinstance(func, types.FunctionType):
        twin = types.FunctionType(
            func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__
        )
        twin.__kwdefaults__ = copy.copy(func.__kwdefaults__)
        twin.__dict__.update(func.__dict__)
        for attribute in ("__qualname__", "__module__", "__doc__", "__annotations__"):
            setattr(twin, attribute, getattr(func, attribute))
        return twin
    return copy.copy(func)


def _parameters(func: Callable, label: str) -> tuple[dict[str, Parameter], str | None]:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise ToolSignatureError(f"@tool cannot read the signature of {label}: {exc}") from None
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as exc:
        raise ToolSignatureError(f"@tool cannot resolve the type hints of {label}: {exc}") from None

    params: dict[str, Parameter] = {}
    context_param = None
    for p in signature.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            star = "*" if p.kind is p.VAR_POSITIONAL else "**"
            raise ToolSignatureError(
                f"@tool: parameter '{star}{p.name}' of {label} is variadic, which a model "
                "cannot call; declare each argument explicitly"
            )
        if p.kind is p.POSITIONAL_ONLY:
            raise ToolSignatureError(
                f"@tool: parameter '{p.name}' of {label} is positional-only; tools are called "
                "with keyword arguments"
            )
        annotation = hints.get(p.name, inspect.Parameter.empty)
        if _is_context(annotation):
            context_param = p.name
            continue
        has_default = p.default is not inspect.Parameter.empty
        try:
            if annotation is not inspect.Parameter.empty:
                adapter = adapter_for(annotation)
            elif has_default:
                adapter = adapter_for_default(p.default)
            else:
                raise ToolSignatureError(
                    f"@tool: parameter '{p.name}' of {label} needs a type hint or a default "
                    f"value (e.g. '{p.name}: str')"
                )
        except UnsupportedType as exc:
            raise ToolSignatureError(
                f"@tool: parameter '{p.name}' of {label} has an unsupported type: {exc}; "
                "use str, int, float, bool, list, dict, Literal, an Enum, a TypedDict, a "
                "dataclass or a pydantic model"
            ) from None
        except ToolSignatureError:
            raise
        except Exception as exc:  # an annotation that breaks while being read
            raise ToolSignatureError(
                f"@tool: parameter '{p.name}' of {label} has an annotation that cannot be "
                f"read ({type(exc).__name__}: {exc})"
            ) from None
        params[p.name] = Parameter(p.name, adapter, not has_default, p.default)
    return params, context_param


def _is_context(annotation: Any) -> bool:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_context(a) for a in typing.get_args(annotation))
    target = typing.get_origin(annotation) or annotation
    return isinstance(target, type) and issubclass(target, ToolContext)


_NO_DEFAULT = object()


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, tuple | set | frozenset):
        value = list(value)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return _NO_DEFAULT
    return value


def _hoist_defs(schema: dict[str, Any], defs: dict[str, Any], label: str) -> dict[str, Any]:
    """Move nested ``$defs`` (pydantic puts them in each model's schema) to the root."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            node = dict(node)
            for key, value in node.pop("$defs", {}).items():
                value = walk(value)
                if defs.setdefault(key, value) != value:
                    raise ToolSignatureError(
                        f"@tool: {label} uses two different types named {key!r}; rename one"
                    )
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)
