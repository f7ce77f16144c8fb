"""Fixtures for the ACP tests: the fake agent's command line and a real kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "kernel"))

from acp_setup import AGENT, NOTES
from kernel_harness import SETUP, start_kernel


@pytest.fixture
def notes(tmp_path):
    """``notes.txt`` in the folder the kernel (and so the agent's session) runs in."""
    path = tmp_path / "notes.txt"
    path.write_text(NOTES)
    return path


@pytest.fixture
def agent_log(tmp_path):
    """The file the fake agent appends each request's method to."""
    return tmp_path / "agent.log"


@pytest.fixture
def kernel(tmp_path, agent_log):
    """A fresh kernel with ``%load_ext aimu``, whose agents log to ``agent_log``."""
    k = start_kernel(tmp_path, FAKE_AGENT_LOG=str(agent_log))
    try:
        k.ok(SETUP + f"AGENT = {AGENT!r}\n")
        yield k
    finally:
        k.client.stop_channels()
        k.km.shutdown_kernel(now=True)
