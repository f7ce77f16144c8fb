"""``aimu.client("acp:<command line>")`` from plain Python, on the fake ACP agent."""

from __future__ import annotations

import pytest
from acp_setup import AGENT, NOTES

import aimu
from aimu.models.chunks import Phase
from aimu.tools.approval import Denied


@pytest.fixture
def in_notes_folder(tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text(NOTES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FAKE_AGENT_LOG", raising=False)
    return tmp_path


def test_a_sync_agent_continues_the_session_and_its_policy_answers_permissions(in_notes_folder):
    asked = []

    def policy(name, arguments, tool=None):
        asked.append((name, arguments["agent offers"]))
        return Denied("not today")

    agent = aimu.Agent(f"acp:{AGENT}", tool_approval=policy)
    try:
        first = agent.run("Please edit the notes.")
        chunks = list(agent.run("again", stream=True))
    finally:
        agent.client.close()
    assert "permission: no." in first and first.startswith("turn 1 of session ")
    session = first.split("of session ")[1].split(".")[0]
    assert chunks[-1].content["text"].startswith(f"turn 2 of session {session}")
    assert [c.phase for c in chunks][:2] == [Phase.THINKING, Phase.PLAN]
    assert asked == [
        ("Edit notes.txt", ["Allow once (allow_once)", "Always allow (allow_always)",
                            "Reject (reject_once)"])
    ]  # fmt: skip
    assert (in_notes_folder / "notes.txt").read_text() == NOTES


def test_options_an_outside_agent_cannot_take_are_refused_clearly(in_notes_folder):
    agent = aimu.Agent(f"acp:{AGENT}", thinking="high")
    with pytest.raises(aimu.models.ModelError, match="chooses its own model settings; thinking"):
        agent.run("hello")
