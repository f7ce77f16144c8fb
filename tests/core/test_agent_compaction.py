"""Compaction runs before every model turn, never orphans a tool call, and the ready policies
keep what a model needs."""

import pytest

from aimu import Agent, tool
from aimu.agents import CompactionError, drop_old_tool_results, keep_last
from aimu.agents.compaction import estimate_tokens
from aimu.models.providers.scripted import ScriptedClient, call, reply


@tool
def fetch(page: int) -> str:
    """Fetch a page of a long document."""
    return f"page {page}: " + "lorem ipsum " * 200


def rounds(n):
    return [reply(tool_calls=[call("fetch", page=i)]) for i in range(n)]


def assert_valid(messages):
    pending = set()
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] in pending
            pending.discard(m["tool_call_id"])
        else:
            assert not pending
        if m["role"] == "assistant":
            pending = {c["id"] for c in m.get("tool_calls") or ()}


def test_keep_last_is_applied_before_every_model_turn():
    model = ScriptedClient([*rounds(6), "done"])
    agent = Agent(model, system_message="sys", tools=[fetch], compaction=keep_last(2))
    assert agent.run("read it all") == "done"
    for request in model.requests[1:]:
        sent = request["messages"]
        assert sent[0] == {"role": "system", "content": "sys"}
        assert sent[1] == {"role": "user", "content": "read it all"}  # the task stays
        assistants = [m for m in sent if m["role"] == "assistant"]
        assert len(assistants) <= 2
        assert_valid(sent)
    last = model.requests[-1]["messages"]
    assert [m["content"][:6] for m in last if m["role"] == "tool"] == ["page 4", "page 5"]


def test_keep_last_keeps_a_call_with_its_results():
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "fetch", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "fetch", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "a", "name": "fetch", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "name": "fetch", "content": "2"},
    ]  # fmt: skip
    assert keep_last(1)(messages) == messages


def test_drop_old_tool_results_leaves_a_note_and_spares_the_latest_turn():
    model = ScriptedClient([*rounds(5), "done"])
    agent = Agent(model, tools=[fetch], compaction=drop_old_tool_results(800))
    agent.run("read")
    sent = model.requests[-1]["messages"]
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert results[-1].startswith("page 4: lorem")
    dropped = [r for r in results if r.startswith("[Result of fetch dropped")]
    assert dropped and "characters" in dropped[0] and "Call the tool again" in dropped[0]
    assert estimate_tokens(sent) <= 800 or len(dropped) == len(results) - 1
    assert_valid(sent)
    assert len([m for m in sent if m["role"] == "tool"]) == 5  # no call lost its result


def test_a_policy_that_orphans_a_call_stops_the_run_and_says_which():
    def drop_tool_results(messages):
        return [m for m in messages if m["role"] != "tool"]

    model = ScriptedClient([*rounds(1), "never"])
    agent = Agent(model, tools=[fetch], compaction=drop_tool_results)
    with pytest.raises(CompactionError, match=r"removed the result of tool call .*\(fetch\)"):
        agent.run("read")
    assert model.remaining == 1
    assert_valid(agent.messages)
    assert any(m["role"] == "tool" for m in agent.messages)  # the transcript kept its result


def test_a_policy_that_keeps_a_result_without_its_call_is_refused():
    def drop_assistants(messages):
        return [m for m in messages if m["role"] != "assistant"]

    agent = Agent(ScriptedClient([*rounds(1), "x"]), tools=[fetch], compaction=drop_assistants)
    with pytest.raises(CompactionError, match="without the assistant turn that made the call"):
        agent.run("read")


def test_a_policy_returning_something_else_than_messages_is_refused():
    agent = Agent(ScriptedClient(["x"]), compaction=lambda messages: None)
    with pytest.raises(CompactionError, match="must return a list of message dicts"):
        agent.run("hi")


def test_compaction_given_to_one_run_is_used_for_that_run_only():
    model = ScriptedClient([*rounds(3), "a", *rounds(3), "b"])
    agent = Agent(model, tools=[fetch])
    agent.run("one", compaction=keep_last(1))
    compacted = len(agent.messages)
    agent.run("two")
    assert len(agent.messages) == compacted + 1 + 3 * 2 + 1


@pytest.mark.parametrize("bad", [0, -1, True, "3"])
def test_policies_refuse_bad_sizes(bad):
    with pytest.raises(ValueError):
        keep_last(bad)
    with pytest.raises(ValueError):
        drop_old_tool_results(bad)


def test_compaction_must_be_callable():
    with pytest.raises(TypeError, match="compaction must be a callable"):
        Agent(ScriptedClient(["x"]), compaction=20)


def test_drop_old_tool_results_counts_the_conversation_it_was_given():
    policy = drop_old_tool_results(150)

    def conversation(n):
        messages = [{"role": "user", "content": "q"}]
        for i in range(n):
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": f"c{i}",
                            "type": "function",
                            "function": {"name": "fetch", "arguments": "{}"},
                        }
                    ],
                }
            )
            messages.append(
                {"role": "tool", "tool_call_id": f"c{i}", "name": "fetch", "content": "y" * 400}
            )
        return messages  # fmt: skip

    first = policy(conversation(2))
    assert first[2]["content"].startswith("[Result of fetch dropped")
    small_turn = [dict(m, content="ok") if m["role"] == "tool" else m
                  for m in conversation(3)[5:]]  # fmt: skip
    longer = first + small_turn  # the loop appends a turn to what the policy kept
    assert estimate_tokens(longer) <= 150
    assert policy(longer) == longer  # counted from what the policy kept, not from before
    bigger = longer + conversation(4)[7:]
    assert policy(bigger)[4]["content"].startswith("[Result of fetch dropped")
    assert policy(conversation(1)) == conversation(1)  # a different conversation: counted afresh
