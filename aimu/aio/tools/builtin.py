"""The built-in tools, groups and factories of :mod:`aimu.tools.builtin`, for async agents.

The same objects, not copies: the agent loop runs sync and async tools alike, so
``from aimu.aio.tools.builtin import get_webpage_html, make_web_tools`` gives exactly what
``aimu.tools.builtin`` does. Factories are imported on first use, as there.
"""

from typing import Any

from aimu.tools import builtin as _builtin


def __getattr__(name: str) -> Any:
    try:
        return getattr(_builtin, name)
    except AttributeError:
        raise AttributeError(f"module 'aimu.aio.tools.builtin' has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(_builtin.__all__)


__all__ = list(_builtin.__all__)
