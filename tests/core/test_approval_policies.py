"""Approval policies: verdicts, refusals the model reads, and failing policies."""

import asyncio
from typing import ClassVar

import pytest

from aimu import Agent
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.tools import Denied, approve_all, tool
from aimu.tools.approval import Decision, decide, refusal_message

calls: list[str] = []


@tool
def write_note(text: str) -> str:
    """Write a note."""
    calls.append(text)
    return f"saved {text!r}"


def run_with(policy, *, stream=False):
    calls.clear()
    model = ScriptedClient([call("write_note", text="hi"), "ok"])
    agent = Agent(model, tools=[write_note], tool_approval=policy)
    chunks = list(agent.run("go", stream=True))
    tool_message = next(m for m in agent.messages if m["role"] == "tool")
    return tool_message["content"], chunks, model


def test_denied_is_falsy_and_carries_its_reason():
    assert not Denied("nope") and not Denied()
    assert Denied("only /tmp").reason == "only /tmp"


def test_approve_all_approves():
    assert approve_all("anything", {}) is True


def test_denied_reason_reaches_the_model_naming_the_tool():
    content, _, model = run_with(lambda name, args: Denied("notes are read-only today"))
    assert content == "Tool 'write_note' was not approved: notes are read-only today"
    assert calls == []
    assert model.requests[1]["messages"][-1]["content"] == content


@pytest.mark.parametrize("verdict", [False, Denied(""), None, 0])
def test_plain_refusals_say_only_not_approved(verdict):
    content, _, _ = run_with(lambda name, args: verdict)
    assert content == "Tool 'write_note' was not approved."
    assert calls == []


def test_policy_that_raises_refuses_and_never_approves(caplog):
    def broken(name, args):
        raise RuntimeError("secret-token-123 in a bug")

    content, _, _ = run_with(broken)
    assert calls == []
    assert content == "Tool 'write_note' was not approved: the approval check failed"
    assert "secret-token-123" not in content


def test_async_policy_is_awaited():
    async def slow_yes(name, args):
        await asyncio.sleep(0)
        return True

    content, _, _ = run_with(slow_yes)
    assert content == "saved 'hi'" and calls == ["hi"]


def test_async_policy_returning_denied():
    async def slow_no(name, args):
        return Denied("ask again tomorrow")

    content, _, _ = run_with(slow_no)
    assert content.endswith("ask again tomorrow") and calls == []


def test_approval_request_and_decision_are_streamed():
    _, chunks, _ = run_with(lambda name, args: Denied("no"))
    phases = [c.phase for c in chunks]
    asked = phases.index(Phase.APPROVAL_REQUESTED)
    assert phases[asked + 1] is Phase.APPROVAL_DECIDED
    assert chunks[asked].content["arguments"] == {"text": "hi"}
    assert chunks[asked + 1].content == {
        "id": chunks[asked].content["id"],
        "name": "write_note",
        "approved": False,
        "reason": "no",
        "why": "",  # the tool gives no reason of its own for asking
        "by": "policy",
    }


def test_a_policy_returning_a_decision_says_who_decided_in_the_chunk():
    decision = Decision(True, by="always", chosen_at="cell 3, write_note")
    content, chunks, _ = run_with(lambda name, args: decision)
    decided = next(c.content for c in chunks if c.phase is Phase.APPROVAL_DECIDED)
    assert decided["approved"] is True
    assert decided["by"] == "always"
    assert decided["chosen_at"] == "cell 3, write_note"
    assert content == "saved 'hi'"


def test_a_refusing_decision_refuses_and_a_plain_verdict_is_by_the_policy():
    content, chunks, _ = run_with(lambda name, args: Decision(False, "not today"))
    decided = next(c.content for c in chunks if c.phase is Phase.APPROVAL_DECIDED)
    assert (decided["approved"], decided["by"], "chosen_at" in decided) == (False, "policy", False)
    assert content == "Tool 'write_note' was not approved: not today"
    assert calls == []


def test_policy_can_skip_asking_for_some_calls():
    class GateWrites:
        asked: ClassVar[list] = []

        def requires_approval(self, name, args):
            return name.startswith("write")

        def __call__(self, name, args):
            self.asked.append(name)
            return True

    @tool
    def read_note() -> str:
        """Read."""
        return "note"

    policy = GateWrites()
    model = ScriptedClient(
        [reply(tool_calls=[call("read_note"), call("write_note", text="x")]), "done"]
    )
    chunks = list(
        Agent(model, tools=[read_note, write_note], tool_approval=policy).run("go", stream=True)
    )
    assert policy.asked == ["write_note"]
    requested = [c.content["name"] for c in chunks if c.phase is Phase.APPROVAL_REQUESTED]
    assert requested == ["write_note"]


async def test_decide_and_refusal_message_directly():
    assert await decide(lambda n, a: True, "t", {}) == Decision(True)
    assert await decide(lambda n, a: Denied("r"), "t", {}) == Decision(False, "r")
    assert refusal_message("t", Decision(False, "")) == "Tool 't' was not approved."


def test_bad_policy_type_is_rejected_at_construction():
    with pytest.raises(TypeError, match="tool_approval"):
        Agent(ScriptedClient([]), tool_approval="ask")
