"""A policy's ``requires_approval`` may decide a call itself (a standing "Always allow"):
the call is recorded as decided, never as awaiting approval, and the policy is not asked."""

from __future__ import annotations

from aimu import Agent, tool
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.tools.approval import Decision


@tool
def write_note(text: str) -> str:
    """Write a note."""
    return f"saved {text!r}"


class Standing:
    """Allows "keep" without asking, refuses "drop" without asking, asks about the rest."""

    def __init__(self):
        self.asked = []

    def requires_approval(self, name, arguments):
        if arguments["text"] == "keep":
            return Decision(True, by="always", chosen_at="an earlier call")
        if arguments["text"] == "drop":
            return Decision(False, "dropped notes are refused")
        return True

    def __call__(self, name, arguments):
        self.asked.append(arguments["text"])
        return True


def test_a_decision_from_requires_approval_is_recorded_without_asking():
    policy = Standing()
    model = ScriptedClient([
        reply(tool_calls=[call("write_note", text="keep"), call("write_note", text="drop"),
                          call("write_note", text="ask")]),
        "done",
    ])  # fmt: skip
    seen = []
    agent = Agent(model, tools=[write_note], tool_approval=policy, events=seen.append)
    chunks = list(agent.stream("go"))
    assert policy.asked == ["ask"]
    approvals = [
        (c.phase, c.content.get("approved")) for c in chunks if c.phase.startswith("approval")
    ]
    assert approvals == [
        (Phase.APPROVAL_DECIDED, True),
        (Phase.APPROVAL_DECIDED, False),
        (Phase.APPROVAL_REQUESTED, None),
        (Phase.APPROVAL_DECIDED, True),
    ]
    kept = next(c.content for c in chunks if c.phase is Phase.APPROVAL_DECIDED)
    assert (kept["by"], kept["chosen_at"]) == ("always", "an earlier call")
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert results == [
        "saved 'keep'",
        "Tool 'write_note' was not approved: dropped notes are refused",
        "saved 'ask'",
    ]
    assert [e.type for e in seen if e.type.startswith("approval")] == [
        "approval_decided", "approval_decided", "approval_requested", "approval_decided"
    ]  # fmt: skip
