"""Sub-agents and the agent runtime: spec keys with the reference's precedence, the factory's
events / compaction / inbox, direct calls, and overflow named as the child's."""

import pytest

from aimu import Agent, Phase, tool
from aimu.agents import Inbox, keep_last
from aimu.agents.subagent import make_subagent_tool
from aimu.models.errors import ContextOverflowError
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.tools import ToolGroup


class Child(ScriptedClient):
    """A scripted model that keeps the clone each spawn got."""

    def __init__(self, turns=(), **kwargs):
        super().__init__(turns, **kwargs)
        self.clones = []

    def clone(self):
        twin = Child(self.turns, model=self.model, delay=self.delay)
        self.clones.append(twin)
        return twin


def options_of(model):
    return [request["options"] for request in model.requests]


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def spawn_as(kind, task="t", call_id="s1"):
    return reply(tool_calls=[{"id": call_id, **call("spawn_subagent", agent_type=kind, task=task)}])


def result_of(parent, call_id="s1"):
    return next(m["content"] for m in parent.messages if m.get("tool_call_id") == call_id)


def run_typed(child, spec, **factory):
    spawn = make_subagent_tool(child, agent_types={"worker": spec}, **factory)
    parent = Agent(ScriptedClient([spawn_as("worker"), "done"]), tools=[spawn])
    parent.run("go")
    return parent


# --- thinking and generate_kwargs: no factory tier -------------------------------------------


def test_spec_thinking_and_generate_kwargs_reach_the_childs_requests():
    child = Child([call("lookup", key="k"), "ok"])
    run_typed(child, {"system_message": "w", "tools": [lookup], "thinking": "low",
                      "generate_kwargs": {"temperature": 0.0}})  # fmt: skip
    sent = options_of(child.clones[0])
    assert len(sent) == 2  # the call turn and the answer turn
    for options in sent:
        assert options.thinking == "low"
        assert options.generate_kwargs == {"temperature": 0.0}


def test_a_spec_without_thinking_or_generate_kwargs_inherits_nothing():
    child = Child(["ok"])
    spawn = make_subagent_tool(child, agent_types={"worker": {"system_message": "w"}})
    parent = Agent(Child([spawn_as("worker"), "done"]), tools=[spawn], thinking="high",
                   generate_kwargs={"seed": 1})  # fmt: skip
    parent.run("go")
    assert options_of(child.clones[0]) == [None]


# --- max_iterations: factory tier ---------------------------------------------------------


def test_max_iterations_falls_back_to_the_factory_and_a_spec_overrides_it():
    looping = call("lookup", key="k")
    child = Child([looping, looping, looping, "partial"])
    parent = run_typed(child, {"system_message": "w", "tools": [lookup]}, max_iterations=1)
    assert "limit of 1 tool rounds" in result_of(parent)
    child = Child([looping, looping, "partial"])
    parent = run_typed(child, {"system_message": "w", "tools": [lookup], "max_iterations": 2})
    assert "limit of 2 tool rounds" in result_of(parent)


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"max_iterations": True}, r"max_iterations.\] must be an int >= 1"),
        ({"max_iterations": 0}, r"max_iterations.\] must be an int >= 1"),
        ({"thinking": "max"}, "thinking must be"),
        ({"generate_kwargs": ["temperature"]}, "generate_kwargs must be a dict"),
        ({"compaction": 5}, "compaction"),
        ({"inbox": "messages"}, "inbox"),
        ({"tool_groups": [lookup]}, "tool_groups"),
        ({"temperature": 0.2}, "unknown keys: temperature"),
    ],
)
def test_bad_spec_values_raise_at_factory_time(spec, error):
    with pytest.raises((TypeError, ValueError), match=error):
        make_subagent_tool(Child(), agent_types={"w": {"system_message": "w", **spec}})


# --- compaction, inbox, tool_approval: membership ------------------------------------------


def two_rounds():
    return [call("lookup", key="a"), call("lookup", key="b"), call("lookup", key="c"), "fin"]


def test_compaction_absent_takes_the_factorys_and_none_turns_it_off():
    factory = keep_last(1)
    child = Child(two_rounds())
    run_typed(child, {"system_message": "w", "tools": [lookup]}, compaction=factory)
    compacted = child.clones[0].requests[-1]["messages"]
    assert sum(m["role"] == "tool" for m in compacted) == 1
    child = Child(two_rounds())
    run_typed(child, {"system_message": "w", "tools": [lookup], "compaction": None},
              compaction=factory)  # fmt: skip
    assert sum(m["role"] == "tool" for m in child.clones[0].requests[-1]["messages"]) == 3


def test_generic_sub_agents_use_the_factory_compaction_and_not_the_parents_conversation():
    child = Child(two_rounds())
    spawn = make_subagent_tool(child, tools=[lookup], compaction=keep_last(1))
    parent = Agent(ScriptedClient([call("spawn_subagent", task="t"), "done"]), tools=[spawn])
    parent.run("go")
    assert sum(m["role"] == "tool" for m in child.clones[0].requests[-1]["messages"]) == 1
    assert len(parent.messages) == 4


def inbox_child(inbox):
    @tool
    def wait_a_bit() -> str:
        """The user talks during this step."""
        inbox.put("hurry up")
        return "waited"

    return wait_a_bit, Child([call("wait_a_bit"), "done"])


def test_inbox_absent_takes_the_factorys_and_none_turns_it_off():
    inbox = Inbox()
    waiter, child = inbox_child(inbox)
    run_typed(child, {"system_message": "w", "tools": [waiter]}, inbox=inbox)
    assert child.clones[0].requests[1]["messages"][-1] == {"role": "user", "content": "hurry up"}
    waiter, child = inbox_child(inbox)
    run_typed(child, {"system_message": "w", "tools": [waiter], "inbox": None}, inbox=inbox)
    assert child.clones[0].requests[1]["messages"][-1]["role"] == "tool"


def test_tool_approval_absent_inherits_and_none_turns_gating_off():
    asked = []

    def gate(name, arguments):
        asked.append(name)
        return False

    child = Child([call("lookup", key="k"), "done"])
    parent = run_typed(child, {"system_message": "w", "tools": [lookup]}, tool_approval=gate)
    assert asked == ["lookup"]
    child = Child([call("lookup", key="k"), "done"])
    run_typed(child, {"system_message": "w", "tools": [lookup], "tool_approval": None},
              tool_approval=gate)  # fmt: skip
    assert asked == ["lookup"]
    assert child.clones[0].requests[1]["messages"][-1]["content"] == "value of k"
    assert parent is not None


# --- tool_groups: no factory tier, loads per spawn ----------------------------------------


def test_each_spawn_loads_its_groups_for_itself():
    group = ToolGroup("keys", "Key lookups", [lookup])
    child = Child([call("load_tools", group="keys"), call("lookup", key="k"), "found"])
    spawn = make_subagent_tool(child, agent_types={
        "finder": {"system_message": "f", "tool_groups": [group]},
        "plain": {"system_message": "p"},
    })  # fmt: skip
    turns = [spawn_as("finder", call_id="a"), spawn_as("finder", call_id="b"),
             spawn_as("plain", call_id="c"), "done"]  # fmt: skip
    parent = Agent(ScriptedClient(turns), tools=[spawn])
    parent.run("go")
    first, second, plain = child.clones
    assert [s["function"]["name"] for s in first.requests[1]["tools"]] == ["load_tools", "lookup"]
    assert [s["function"]["name"] for s in second.requests[0]["tools"]] == ["load_tools"]
    assert plain.requests[0]["tools"] is None


# --- events ---------------------------------------------------------------------------------


def test_the_factory_sink_sees_the_childs_run_with_the_parent_run_as_parent():
    seen, parent_seen = [], []
    spawn = make_subagent_tool(Child([call("lookup", key="k"), "child done"]), tools=[lookup],
                               events=seen.append)  # fmt: skip
    parent = Agent(ScriptedClient([call("spawn_subagent", task="t"), "done"]), tools=[spawn],
                   events=parent_seen.append)  # fmt: skip
    parent.run("go")
    assert seen[0].type == "run_started" and seen[0].agent.startswith("agent/subagent@")
    assert seen[0].parent_run_id == parent_seen[0].run_id
    assert seen[-1].type == "run_finished" and seen[-1].tool_calls == 1
    assert all(e.agent == "agent" for e in parent_seen)


# --- the spawn tool as a function ------------------------------------------------------------


def test_calling_the_spawn_tool_directly_returns_the_answer_string():
    spawn = make_subagent_tool(Child([call("lookup", key="k"), "the value is v"]), tools=[lookup])
    assert spawn("find k") == "the value is v"
    typed = make_subagent_tool(Child(["typed answer"]), agent_types={"w": {"system_message": "w"}})
    assert typed("w", "do it") == "typed answer"
    assert "Unknown agent type" in typed("nobody", "do it")


def test_the_spawn_tools_name_follows_tool_name():
    spawn = make_subagent_tool(Child(), tool_name="delegate")
    assert spawn.__name__ == "delegate"
    assert spawn.__tool_spec__["function"]["name"] == "delegate"
    assert make_subagent_tool(Child()).__name__ == "spawn_subagent"


async def test_a_direct_call_works_inside_a_running_event_loop():
    spawn = make_subagent_tool(Child(["from a notebook cell"]))
    assert spawn("t") == "from a notebook cell"


# --- overflow ------------------------------------------------------------------------------


def test_an_overflow_names_the_sub_agents_window():
    error = ContextOverflowError("prompt is too long; shorten the conversation")
    error.window = 8192
    spawn = make_subagent_tool(Child([error]))
    parent = Agent(ScriptedClient([call("spawn_subagent", task="t"), "ok"]), tools=[spawn])
    chunks = list(parent.run("go", stream=True))
    result = next(c.content["result"] for c in chunks
                  if c.phase is Phase.TOOL_RESULT and c.agent == "agent")  # fmt: skip
    assert "own context window of 8192 tokens filled up" in result
    assert "shorten the conversation" not in result


# --- nesting: every level offers the factory's specialists -----------------------------------


def test_a_specialists_own_spawn_tool_offers_every_specialist_and_tracks_its_own_runs():
    seen = {}

    @tool
    def peek() -> str:
        """Note which sub-agents each level of spawn tool has running."""
        (lead,) = spawn.running.values()
        seen["outer"] = list(spawn.running)
        seen["inner"] = list(lead.tools["spawn_subagent"].running)
        return "peeked"

    grandchild_call = {"id": "g1", **call("spawn_subagent", agent_type="helper", task="sub")}
    lead_model = Child([reply(tool_calls=[grandchild_call]), "led"])
    helper_model = Child([call("peek"), "helped"])
    spawn = make_subagent_tool(Child(), max_depth=2, agent_types={
        "lead": {"system_message": "Lead.", "tools": [lookup], "model": lead_model},
        "helper": {"system_message": "Help.", "tools": [peek], "model": helper_model},
    })  # fmt: skip
    parent = Agent(ScriptedClient([spawn_as("lead"), "done"]), tools=[spawn])

    assert parent.run("go") == "done"

    lead_request = lead_model.clones[0].requests[0]
    offered = {spec["function"]["name"]: spec["function"] for spec in lead_request["tools"]}
    assert sorted(offered) == ["lookup", "spawn_subagent"]
    nested_kinds = offered["spawn_subagent"]["parameters"]["properties"]["agent_type"]["enum"]
    assert nested_kinds == ["lead", "helper"]
    helper_request = helper_model.clones[0].requests[0]
    assert helper_request["messages"][0]["content"] == "Help."
    assert [spec["function"]["name"] for spec in helper_request["tools"]] == ["peek"]
    assert seen == {"outer": ["agent/lead@s1"], "inner": ["agent/lead@s1/helper@g1"]}
    assert result_of(parent) == "led" and spawn.running == {}
