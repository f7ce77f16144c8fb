"""The one place argument checks are written.

Every public entry point checks its counts, durations and flags with these, so the rule ("an
int, not a bool", "finite unless said otherwise") and the wording of the error are the same
everywhere.
"""

from __future__ import annotations

import math
from typing import Any


def whole_number(value: Any, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` if it is an int (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, not {value!r}")
    return value


def positive_number(value: Any, name: str, *, unit: str = "", finite: bool = True) -> float:
    """Return ``value`` as a float if it is a number (not a bool) above zero.

    ``unit`` names what the number counts ("seconds") in the error; ``finite=False`` lets
    ``math.inf`` through for "no limit".
    """
    what = f"a number of {unit}" if unit else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be {what} > 0, not {value!r}")
    if finite and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, not {value!r}")
    return float(value)


def flag(value: Any, name: str) -> bool:
    """Return ``value`` if it is a bool (``1`` or ``"yes"`` are refused, not guessed)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, not {value!r}")
    return value
