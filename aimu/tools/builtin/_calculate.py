"""``calculate``: arithmetic through an AST allowlist, with every operation's cost bounded.

Nothing is ``eval``'d. Integer results are limited in size before they are computed, so
``9**9**9`` or a long chain of huge factors is refused at once instead of hanging or eating
memory; floats overflow into a clear error.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from numbers import Real

from aimu.tools.decorator import tool

MAX_EXPRESSION = 1_000
MAX_INT_BITS = 10_000
MAX_ROUND_DIGITS = 100


class CalcError(ValueError):
    """An expression ``calculate`` refuses; the message is written for the model."""


def _round(x: Real, ndigits: Real | None = None) -> Real:
    if ndigits is None:
        return round(x)
    if not isinstance(ndigits, int) or abs(ndigits) > MAX_ROUND_DIGITS:
        raise CalcError(f"round's digits must be a whole number from -{MAX_ROUND_DIGITS} to "
                        f"{MAX_ROUND_DIGITS}")  # fmt: skip
    return round(x, ndigits)


def _min_max(fn: Callable) -> Callable:
    def call(*args: Real) -> Real:
        if not args:
            raise CalcError(f"{fn.__name__}() needs at least one number")
        return fn(args)

    return call


_FUNCTIONS: dict[str, Callable] = {
    "abs": abs,
    "round": _round,
    "min": _min_max(min),
    "max": _min_max(max),
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
_BINARY: dict[type, Callable[[Real, Real], Real]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_REFUSED_OPERATORS = {
    ast.BitXor: "^ is not a power here; write powers with ** (2**10)",
    ast.BitAnd: "& is not supported; only + - * / // % ** and parentheses",
    ast.BitOr: "| is not supported; only + - * / // % ** and parentheses",
    ast.LShift: "<< is not supported; write powers of two as 2**n",
    ast.RShift: ">> is not supported; only + - * / // % ** and parentheses",
    ast.MatMult: "@ is not supported; only + - * / // % ** and parentheses",
}


@tool(read_only=True)
def calculate(expression: str) -> str:
    """Evaluates an arithmetic expression and returns the result.

    Python arithmetic syntax: numbers, + - * / // % ** and parentheses. ** is a power and ^
    is not; % is the remainder, not a percentage (write 15% of 200 as 0.15 * 200). Also
    accepts the functions abs, round, min, max, sqrt, exp, log, log10, floor, ceil, and the
    constants pi and e. log(x) is the natural log; log(x, base) takes a base. Nothing else:
    no variables, units or other functions; use execute_python for anything more. Floats are
    shown to 15 significant digits; whole-number results of up to about 3,000 digits are
    exact. At most 1,000 characters.

    Args:
        expression: The expression to evaluate, e.g. "(1250 * 1.08) / 12" or
            "round(2**0.5, 4)".
    """
    try:
        return _format(evaluate(expression))
    except CalcError as exc:
        return f"Error: {exc}"


def evaluate(expression: str) -> Real:
    """The value of ``expression``; raises :class:`CalcError` for anything refused."""
    text = expression.strip()
    if not text:
        raise CalcError("the expression is empty")
    if len(text) > MAX_EXPRESSION:
        raise CalcError(f"the expression is longer than {MAX_EXPRESSION:,} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        hint = " (% is the remainder; write 15% of 200 as 0.15 * 200)" if "%" in text else ""
        shown = repr(text) if len(text) <= 80 else "the expression"
        raise CalcError(f"{shown} is not a valid arithmetic expression{hint}") from None
    except (RecursionError, MemoryError):
        raise CalcError("the expression is nested too deeply") from None
    try:
        return _eval(tree.body)
    except ZeroDivisionError:
        raise CalcError("division by zero") from None
    except OverflowError:
        raise CalcError("the result is too large for a float") from None
    except RecursionError:
        raise CalcError("the expression is nested too deeply") from None
    except CalcError:
        raise
    except (ValueError, TypeError) as exc:
        raise CalcError(f"math error: {exc}") from None


def _eval(node: ast.expr) -> Real:
    kind = type(node)
    if kind is ast.Constant:
        value = node.value
        if type(value) is not int and type(value) is not float:
            raise CalcError(f"{value!r} is not a number")
        return value
    if kind is ast.BinOp:
        operation = _BINARY.get(type(node.op))
        if operation is None:
            raise CalcError(_REFUSED_OPERATORS.get(type(node.op), "operator not supported"))
        left, right = _eval(node.left), _eval(node.right)
        if type(left) is int and type(right) is int:
            _check_size(operation, left, right)
        value = operation(left, right)
        if type(value) is complex:
            raise CalcError("a negative number to a fractional power has no real value")
        return value
    if kind is ast.Call:
        return _call(node)
    if kind is ast.UnaryOp and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if kind is ast.Name:
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if node.id in _FUNCTIONS:
            raise CalcError(f"{node.id} is a function; call it, e.g. {node.id}(2)")
        raise CalcError(f"unknown name '{node.id}': variables are not supported")
    raise CalcError(f"'{ast.unparse(node)}' is not supported: only numbers, operators, "
                    "parentheses and the listed functions")  # fmt: skip


def _call(node: ast.Call) -> Real:
    function = _FUNCTIONS.get(node.func.id) if type(node.func) is ast.Name else None
    if function is None:
        name = ast.unparse(node.func)
        raise CalcError(f"unknown function '{name}'; available: {', '.join(_FUNCTIONS)}")
    if node.keywords:
        raise CalcError(f"{node.func.id}() takes plain positional arguments")
    return function(*[_eval(a) for a in node.args])


def _check_size(operation: Callable, left: int, right: int) -> None:
    """Refuse integer operations whose result would exceed ``MAX_INT_BITS``."""
    if operation is operator.pow and right > 0 and abs(left) > 1:
        bits = right * math.log2(abs(left))
    elif operation is operator.mul:
        bits = left.bit_length() + right.bit_length()
    else:
        return
    if bits > MAX_INT_BITS:
        raise CalcError(
            f"the result would have about {int(bits * math.log10(2)):,} digits, more than "
            f"this calculator handles (about {int(MAX_INT_BITS * math.log10(2)):,})"
        )


def _format(value: Real) -> str:
    if type(value) is float:
        if math.isinf(value):
            raise CalcError("the result is too large for a float")
        if math.isnan(value):
            raise CalcError("the result is not a number (NaN)")
        return format(value, ".15g")
    return str(value)
