"""Fixtures shared by every test directory."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# Kernels under test get a HOME of their own; the embedded model's caches (its Q8_0 copy,
# the CPU probe's verdict) stay the user's, so they are made once, not once per kernel.
os.environ.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))


@pytest.fixture
def sigint_handled() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` during the test, as at an interactive prompt.

    A test run started as a background job (``pytest &``, some CI runners) inherits SIGINT
    ignored, and then neither ``os.kill(pid, SIGINT)`` nor ``_thread.interrupt_main()``
    interrupts anything; tests of Ctrl-C set the handler they need.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def asker():
    """``asker(answers) -> (ask, asked)``: an ``ask`` for the notebook's approval policy that
    records the tool name of each question and answers with ``answers`` in turn ("always",
    "approve", "deny"...), then "deny"."""

    def make(answers: list[str]):
        asked: list[str] = []

        async def ask(tool_name, arguments, agent):
            asked.append(tool_name)
            return (answers.pop(0) if answers else "deny"), "not this one"

        return ask, asked

    return make
