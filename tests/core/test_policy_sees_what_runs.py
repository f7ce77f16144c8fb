"""The policy judges what will run: coerced arguments, no asking about invalid calls, a
failing gate refuses one call and the run goes on, duplicate call ids never share a result."""

from __future__ import annotations

import pytest

from aimu import Agent
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.tools import tool

deleted: list[tuple[str, bool]] = []


@tool(read_only=False)
def delete_path(path: str, recursive: bool = False) -> str:
    """Delete a path."""
    deleted.append((path, recursive))
    return f"deleted {path}"


@tool(read_only=True)
def look(path: str) -> str:
    """Look at a path."""
    return f"looked at {path}"


@pytest.fixture(autouse=True)
def _clean():
    deleted.clear()


def tool_messages(agent: Agent) -> list[dict]:
    return [m for m in agent.messages if m["role"] == "tool"]


def test_the_policy_sees_coerced_values_and_refuses_what_would_have_run():
    seen = []

    def no_recursive_deletes(name, arguments):
        seen.append(dict(arguments))
        return arguments.get("recursive") is not True

    model = ScriptedClient([call("delete_path", path="/data", recursive="yes"), "ok"])
    agent = Agent(model, tools=[delete_path], tool_approval=no_recursive_deletes)
    agent.run("clean up")
    assert seen == [{"path": "/data", "recursive": True}]
    assert deleted == []
    assert tool_messages(agent)[0]["content"] == "Tool 'delete_path' was not approved."


def test_the_approval_request_event_carries_the_coerced_arguments():
    model = ScriptedClient([call("delete_path", path="/d", recursive="no"), "ok"])
    agent = Agent(model, tools=[delete_path], tool_approval=lambda name, arguments: True)
    chunks = list(agent.run("go", stream=True))
    asked = next(c for c in chunks if c.phase is Phase.APPROVAL_REQUESTED)
    assert asked.content["arguments"] == {"path": "/d", "recursive": False}
    assert deleted == [("/d", False)]


def test_invalid_arguments_are_answered_with_the_error_without_asking_anyone():
    asked = []

    def policy(name, arguments):
        asked.append(name)
        return True

    model = ScriptedClient([call("delete_path", path="/d", recursive="perhaps"), "ok"])
    agent = Agent(model, tools=[delete_path], tool_approval=policy)
    chunks = list(agent.run("go", stream=True))
    assert asked == []
    assert not [c for c in chunks if c.phase is Phase.APPROVAL_REQUESTED]
    content = tool_messages(agent)[0]["content"]
    assert content.startswith("Invalid arguments for tool 'delete_path':")
    assert "'recursive': expected boolean" in content


class RaisingGate:
    def __init__(self):
        self.asked = []

    def requires_approval(self, name, arguments):
        if name == "delete_path":
            raise ValueError("the gate's own bug")
        return False

    def __call__(self, name, arguments):
        self.asked.append(name)
        return True


@pytest.mark.parametrize("concurrent", [False, True])
def test_requires_approval_that_raises_refuses_that_call_and_the_run_goes_on(concurrent, caplog):
    gate = RaisingGate()
    model = ScriptedClient(
        [
            reply(tool_calls=[call("delete_path", path="/d"), call("look", path="/d")]),
            "finished anyway",
        ]
    )
    agent = Agent(model, tools=[delete_path, look], tool_approval=gate,
                  concurrent_tool_calls=concurrent)  # fmt: skip
    chunks = list(agent.run("go", stream=True))
    assert chunks[-1].content["text"] == "finished anyway"
    assert deleted == [] and gate.asked == []
    results = {m["name"]: m["content"] for m in tool_messages(agent)}
    assert results == {
        "delete_path": "Tool 'delete_path' was not approved: the approval check failed",
        "look": "looked at /d",
    }
    decided = [c.content for c in chunks if c.phase is Phase.APPROVAL_DECIDED]
    assert [(d["name"], d["approved"]) for d in decided] == [("delete_path", False)]
    assert "the gate's own bug" not in results["delete_path"]
    assert "requires_approval failed" in caplog.text


def test_a_verdict_that_cannot_be_read_as_a_bool_refuses_and_the_run_goes_on():
    class Ambiguous:
        def __bool__(self):
            raise ValueError("truth value is ambiguous")

    model = ScriptedClient([call("delete_path", path="/d"), "carried on"])
    agent = Agent(model, tools=[delete_path], tool_approval=lambda name, arguments: Ambiguous())
    assert agent.run("go") == "carried on"
    assert deleted == []
    assert tool_messages(agent)[0]["content"].endswith("the approval check failed")


def test_an_async_requires_approval_is_awaited():
    class AsyncGate:
        async def requires_approval(self, name, arguments, tool):
            return tool is delete_path

        def __call__(self, name, arguments):
            return False

    model = ScriptedClient(
        [reply(tool_calls=[call("look", path="/a"), call("delete_path", path="/a")]), "ok"]
    )
    agent = Agent(model, tools=[look, delete_path], tool_approval=AsyncGate())
    agent.run("go")
    results = {m["name"]: m["content"] for m in tool_messages(agent)}
    assert results == {
        "look": "looked at /a",
        "delete_path": "Tool 'delete_path' was not approved.",
    }


def test_a_policy_changing_the_arguments_it_was_shown_does_not_change_the_call():
    def meddling(name, arguments):
        arguments["path"] = "/elsewhere"
        return True

    model = ScriptedClient([call("delete_path", path="/tmp/x"), "ok"])
    Agent(model, tools=[delete_path], tool_approval=meddling).run("go")
    assert deleted == [("/tmp/x", False)]


@pytest.mark.parametrize("concurrent", [False, True])
def test_two_calls_with_one_id_run_once_each_and_each_gets_its_own_answer(concurrent):
    model = ScriptedClient(
        [
            reply(
                tool_calls=[
                    {"id": "dup", "name": "look", "arguments": {"path": "A"}},
                    {"id": "dup", "name": "look", "arguments": {"path": "B"}},
                ]
            ),
            "ok",
        ]
    )
    agent = Agent(model, tools=[look], concurrent_tool_calls=concurrent)
    agent.run("go")
    assistant = next(m for m in agent.messages if m.get("tool_calls"))
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert len(set(ids)) == 2 and ids[0] == "dup"
    answers = {m["tool_call_id"]: m["content"] for m in tool_messages(agent)}
    assert answers == {ids[0]: "looked at A", ids[1]: "looked at B"}
    assert len(tool_messages(agent)) == 2
    sent = model.requests[1]["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ids
