"""Course notebook 11 runs headless and offline: an outside ACP agent in cells, and cell edits
that say they cannot happen where no frontend can apply them."""

from __future__ import annotations

import pytest
from course_run import NOTEBOOK_TIMEOUT, executed, tool_cards

pytestmark = pytest.mark.timeout(NOTEBOOK_TIMEOUT)

NAME = "11_outside_agents"


def text_of(record) -> str:
    return "".join(e["text"] for e in record["events"] if e["type"] == "text")


def test_the_outside_agent_reads_with_a_card_and_a_plan():
    nb = executed(NAME)
    record = nb.record("read")
    assert record["status"] == "done" and record["model"].startswith("acp:")
    (read,) = tool_cards(record)
    assert read["name"] == "Read plan.md" and read["result"] == "Draft plan"
    assert any(e["type"] == "plan" for e in record["events"])
    assert "Prompt 1 of this session" in text_of(record)


def test_headless_the_policy_denies_the_edit_then_approves_it_and_the_session_goes_on():
    nb = executed(NAME)
    denied = [c for c in tool_cards(nb.record("denied")) if c["name"] == "Edit plan.md"][0]
    assert denied["status"] == "denied" and denied["approval"]["by"] == "policy"
    approved_run = nb.record("approved")
    approved = [c for c in tool_cards(approved_run) if c["name"] == "Edit plan.md"][0]
    assert approved["approval"] == {"approved": True, "reason": "", "by": "policy"}
    assert "-Draft plan\n+Final plan" in approved["result"]
    assert "Prompt 3 of this session" in text_of(approved_run)
    assert nb.stdout("file").startswith("Final plan")
    assert "Prompt 1 of this session" in text_of(nb.record("new"))


def test_headless_edit_cell_says_no_frontend_can_edit():
    nb = executed(NAME)
    (edit,) = tool_cards(nb.record("edit-headless"))
    assert edit["is_error"] and "No frontend that can change the open notebook" in edit["result"]
