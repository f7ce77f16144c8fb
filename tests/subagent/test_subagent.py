"""make_subagent_tool: fresh, bounded sub-agents whose streams nest in the parent's run and
whose results, never their internals, reach the parent model."""

import asyncio
import logging
import threading

import pytest

import aimu
from aimu import Agent, Denied, Phase, ToolContext, approve_all, tool
from aimu.agents.subagent import make_subagent_tool
from aimu.models.errors import ContextOverflowError, ModelError
from aimu.models.providers.scripted import ScriptedClient, call, reply


class TrackedClient(ScriptedClient):
    """A scripted model that remembers the clones sub-agents got, and whether each closed."""

    def __init__(self, turns=(), **options):
        super().__init__(turns, **options)
        self.clones: list[TrackedClient] = []
        self.closed = False

    def clone(self):
        twin = TrackedClient(self.turns, model=self.model, delay=self.delay)
        self.clones.append(twin)
        return twin

    async def aclose(self):
        self.closed = True


@tool
def search_docs(query: str) -> str:
    """Search the docs."""
    return f"docs about {query}"


@tool
def send_email(to: str) -> str:
    """Send an email."""
    return f"sent to {to}"


@tool
def calculator(expression: str) -> str:
    """Evaluate arithmetic."""
    return "4"


def tool_names(request):
    return sorted(spec["function"]["name"] for spec in request["tools"] or ())


def parent_with(spawn, *turns, **options):
    return Agent(ScriptedClient(list(turns)), tools=[spawn], **options)


def spawn_turn(**arguments):
    return reply(tool_calls=[{"id": "call_s1", **call("spawn_subagent", **arguments)}])


def tool_result(parent, call_id="call_s1"):
    return next(m["content"] for m in parent.messages if m.get("tool_call_id") == call_id)


# --- what the parent sees ---------------------------------------------------------------


def test_parent_model_receives_only_the_final_answer():
    child = TrackedClient([reply("let me look", tool_calls=[call("search_docs", query="x")]),
                           "The answer is 42."])  # fmt: skip
    spawn = make_subagent_tool(child, tools=[search_docs])
    parent = parent_with(spawn, spawn_turn(task="find the answer"), "It is 42.")

    assert parent.run("go") == "It is 42."

    assert tool_result(parent) == "The answer is 42."
    sent = str(parent.client.requests[-1]["messages"])
    assert "docs about x" not in sent and "let me look" not in sent


def test_child_chunks_stream_nested_under_the_spawn_call_and_end_before_its_result():
    child = TrackedClient([reply(tool_calls=[call("search_docs", query="x")]), "child says hi"])
    spawn = make_subagent_tool(child, tools=[search_docs])
    parent = parent_with(spawn, spawn_turn(task="t"), "parent done")

    chunks = list(parent.run("go", stream=True))

    child_name = "agent/subagent@call_s1"
    child_phases = [c.phase for c in chunks if c.agent == child_name]
    assert child_phases[:2] == [Phase.TOOL_CALL, Phase.TOOL_RESULT]
    assert Phase.TEXT in child_phases and child_phases[-1] is Phase.DONE
    assert child_phases.count(Phase.DONE) == 1
    order = [(c.agent, c.phase) for c in chunks]
    assert order.index((child_name, Phase.DONE)) < order.index(("agent", Phase.TOOL_RESULT))
    parent_done = [c for c in chunks if c.phase is Phase.DONE and c.agent == "agent"]
    assert len(parent_done) == 1 and parent_done[0].content["text"] == "parent done"
    assert chunks[-1] is parent_done[0]


def test_nested_names_compose_for_grandchildren():
    script = [reply(tool_calls=[{"id": "call_g", **call("spawn_subagent", task="deeper")}]),
              "child done"]  # fmt: skip
    spawn = make_subagent_tool(TrackedClient(script), max_depth=2)
    parent = parent_with(spawn, spawn_turn(task="t"), "done")

    agents = {c.agent for c in parent.run("go", stream=True)}

    assert "agent/subagent@call_s1/subagent@call_g" in agents


# --- fresh state ----------------------------------------------------------------------------


async def test_concurrent_spawns_each_get_their_own_client_and_conversation():
    def echo_task(messages, tools):
        return f"did: {messages[-1]['content']}"

    child = TrackedClient([echo_task], delay=0.01)
    spawn = make_subagent_tool(child)
    calls = [{"id": f"call_{n}", **call("spawn_subagent", task=f"task {n}")} for n in (1, 2)]
    parent = aimu.aio.Agent(
        ScriptedClient([reply(tool_calls=calls), "both done"]),
        tools=[spawn],
        concurrent_tool_calls=True,
    )

    assert await parent.run("go") == "both done"

    assert len(child.clones) == 2 and child.remaining == 1
    for n, clone in enumerate(child.clones, 1):
        (request,) = clone.requests
        assert [m["content"] for m in request["messages"] if m["role"] == "user"] == [f"task {n}"]
    assert tool_result(parent, "call_1") == "did: task 1"
    assert tool_result(parent, "call_2") == "did: task 2"


def test_a_model_string_builds_a_new_client_per_spawn():
    spawn = make_subagent_tool("scripted:demo", agent_types={
        "writer": {"system_message": "Write.", "model_options": {"turns": ["drafted"]}},
    })  # fmt: skip
    turns = [reply(tool_calls=[{"id": f"c{n}", **call("spawn_subagent", agent_type="writer",
                                                       task="x")}]) for n in (1, 2)]  # fmt: skip
    parent = Agent(ScriptedClient([*turns, "ok"]), tools=[spawn])

    parent.run("go")

    assert tool_result(parent, "c1") == tool_result(parent, "c2") == "drafted"


def test_uncloneable_client_is_refused_at_factory_time():
    class Fixed(ScriptedClient):
        clone = aimu.ModelClient.clone

    with pytest.raises(TypeError, match="cannot be cloned"):
        make_subagent_tool(Fixed(["x"]))


# --- typed shape ----------------------------------------------------------------------------


def test_typed_spawn_runs_the_named_specialist_with_its_own_prompt_and_tools():
    child = TrackedClient(["researched"])
    spawn = make_subagent_tool(child, agent_types={
        "researcher": {"system_message": "You research.", "tools": [search_docs],
                       "description": "finds facts"},
        "mathematician": {"system_message": "You compute.", "tools": [calculator]},
    })  # fmt: skip
    parent = parent_with(spawn, spawn_turn(agent_type="researcher", task="dig"), "ok")

    chunks = list(parent.run("go", stream=True))

    (request,) = child.clones[0].requests
    assert request["messages"][0] == {"role": "system", "content": "You research."}
    assert tool_names(request) == ["search_docs"]
    assert tool_result(parent) == "researched"
    assert any(c.agent == "agent/researcher@call_s1" for c in chunks)
    description = spawn.__tool_spec__["function"]["description"]
    assert "researcher: finds facts" in description and "mathematician" in description
    schema = spawn.__tool_spec__["function"]["parameters"]["properties"]["agent_type"]
    assert schema["enum"] == ["researcher", "mathematician"]


def test_unknown_agent_type_comes_back_to_the_model_as_a_correctable_result():
    child = TrackedClient(["fixed it"])
    spawn = make_subagent_tool(child, agent_types={"coder": {"system_message": "Code."}})
    retry = reply(tool_calls=[{"id": "call_s2", **call("spawn_subagent", agent_type="coder",
                                                         task="x")}])  # fmt: skip
    parent = parent_with(spawn, spawn_turn(agent_type="poet", task="x"), retry, "done")

    assert parent.run("go") == "done"

    assert "coder" in tool_result(parent, "call_s1") and "poet" in tool_result(parent, "call_s1")
    assert tool_result(parent, "call_s2") == "fixed it"
    assert len(child.clones) == 1


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"system_message": "x", "temperature": 0.2}, "unknown keys: temperature"),
        ({"tools": []}, "needs a 'system_message'"),
        ({"system_message": "x", "max_iterations": 0}, "max_iterations"),
        ({"system_message": "x", "max_iterations": True}, "max_iterations"),
        ({"system_message": "x", "tools": [len]}, "not a tool"),
        ({"system_message": "x", "tool_approval": "yes"}, "tool_approval"),
        ({"system_message": "x", "model": "nowhere:model"}, "unknown model provider"),
        ({"system_message": "x", "model_options": {"temperature": 0}}, "model_options need"),
    ],
)
def test_a_bad_spec_raises_at_factory_time(spec, error):
    with pytest.raises((ValueError, TypeError), match=error):
        make_subagent_tool(TrackedClient(), agent_types={"helper": spec})


@pytest.mark.parametrize("timeout", [0, 0.5, 901, -1, True, "60"])
def test_timeout_outside_1_to_900_seconds_is_refused(timeout):
    with pytest.raises((ValueError, TypeError), match="timeout"):
        make_subagent_tool(TrackedClient(), timeout=timeout)


def test_max_depth_below_one_is_refused():
    with pytest.raises(ValueError, match="max_depth"):
        make_subagent_tool(TrackedClient(), max_depth=0)


# --- depth ----------------------------------------------------------------------------------


def test_by_default_a_sub_agent_cannot_spawn():
    child = TrackedClient(["done"])
    spawn = make_subagent_tool(child, tools=[search_docs])
    parent_with(spawn, spawn_turn(task="t"), "ok").run("go")

    assert tool_names(child.clones[0].requests[0]) == ["search_docs"]


def test_max_depth_two_lets_children_spawn_but_not_grandchildren():
    script = [reply(tool_calls=[call("spawn_subagent", task="deeper")]), "done"]
    child = TrackedClient(script)
    spawn = make_subagent_tool(child, max_depth=2)
    parent_with(spawn, spawn_turn(task="t"), "ok").run("go")

    child_request, grandchild_request = child.clones[0].requests[0], child.clones[1].requests[0]
    assert tool_names(child_request) == ["spawn_subagent"]
    assert tool_names(grandchild_request) == []


# --- tool allowlist ---------------------------------------------------------------------


def test_requested_tools_are_intersected_with_the_allowlist():
    child = TrackedClient(["done"])
    spawn = make_subagent_tool(child, tools=[search_docs, calculator])
    parent_with(spawn, spawn_turn(task="t", tools=["calculator"]), "ok").run("go")

    assert tool_names(child.clones[0].requests[0]) == ["calculator"]


def test_requested_tools_outside_the_allowlist_are_dropped_logged_and_named(caplog):
    child = TrackedClient([reply(tool_calls=[call("send_email", to="boss")]), "done"])
    spawn = make_subagent_tool(child, tools=[search_docs])
    parent = parent_with(spawn, spawn_turn(task="t", tools=["search_docs", "send_email"]), "ok")

    with caplog.at_level(logging.WARNING, logger="aimu.agents.subagent"):
        parent.run("go")

    assert tool_names(child.clones[0].requests[0]) == ["search_docs"]
    result = tool_result(parent)
    assert "dropped: send_email" in result and "It had: search_docs" in result
    assert result.endswith("done")
    assert "send_email" in caplog.text and "agent/subagent@call_s1" in caplog.text
    assert "sent to boss" not in str(child.clones[0].requests)


def test_omitting_tools_grants_the_whole_allowlist():
    child = TrackedClient(["done"])
    spawn = make_subagent_tool(child, tools=[search_docs, calculator])
    parent_with(spawn, spawn_turn(task="t"), "ok").run("go")

    assert tool_names(child.clones[0].requests[0]) == ["calculator", "search_docs"]


def test_an_empty_allowlist_gives_no_tools_whatever_is_requested():
    child = TrackedClient(["done"])
    spawn = make_subagent_tool(child)
    parent = parent_with(spawn, spawn_turn(task="t", tools=["search_docs"]), "ok")
    parent.run("go")

    assert child.clones[0].requests[0]["tools"] is None
    assert "dropped: search_docs" in tool_result(parent)


def test_spec_tools_are_the_allowlist_for_that_specialist():
    child = TrackedClient(["done"])
    spawn = make_subagent_tool(child, tools=[send_email], agent_types={
        "reader": {"system_message": "Read.", "tools": [search_docs]},
        "bare": {"system_message": "Think."},
    })  # fmt: skip
    turns = [
        spawn_turn(agent_type="reader", task="t", tools=["send_email"]),
        reply(tool_calls=[call("spawn_subagent", agent_type="bare", task="t")]),
        "ok",
    ]
    parent = parent_with(spawn, *turns)
    parent.run("go")

    assert child.clones[0].requests[0]["tools"] is None
    assert child.clones[1].requests[0]["tools"] is None
    assert "dropped: send_email" in tool_result(parent)


# --- limits and failures --------------------------------------------------------------------


def test_a_child_at_its_round_cap_says_its_answer_may_be_incomplete():
    looping = reply(tool_calls=[call("search_docs", query="more")])
    child = TrackedClient([looping, looping, "partial answer"])
    spawn = make_subagent_tool(child, tools=[search_docs], max_iterations=2)
    parent = parent_with(spawn, spawn_turn(task="t"), "ok")
    parent.run("go")

    result = tool_result(parent)
    assert result.startswith("partial answer")
    assert "limit of 2 tool rounds" in result and "incomplete" in result


def test_a_child_context_overflow_is_reported_as_the_childs_not_the_parents():
    child = TrackedClient([ContextOverflowError("prompt is too long: shorten the conversation")])
    spawn = make_subagent_tool(child)
    parent = parent_with(spawn, spawn_turn(task="t"), "ok")

    assert parent.run("go") == "ok"

    result = tool_result(parent)
    assert "own context window filled up" in result and "not yours" in result
    assert "raised an error" not in result


def test_a_child_model_failure_becomes_a_result_and_the_parent_carries_on():
    spawn = make_subagent_tool(TrackedClient([ModelError("server exploded")]))
    parent = parent_with(spawn, spawn_turn(task="t"), "recovered")

    assert parent.run("go") == "recovered"
    assert tool_result(parent) == "The sub-agent failed: ModelError: server exploded"


def test_a_child_that_runs_too_long_is_stopped_and_its_tool_cancelled():
    started, stopped = threading.Event(), threading.Event()

    @tool
    async def slow_lookup() -> str:
        """Never finishes."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    child = TrackedClient([call("slow_lookup"), "never reached"])
    spawn = make_subagent_tool(child, tools=[slow_lookup], timeout=1)
    parent = parent_with(spawn, spawn_turn(task="t"), "moved on")

    assert parent.run("go") == "moved on"

    assert started.is_set() and stopped.is_set()
    assert "timed out after 1 s" in tool_result(parent)
    assert child.clones[0].closed and spawn.running == {}


# --- teardown --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "script",
    [["fine"], [ModelError("boom")], [ContextOverflowError("full")],
     [reply(tool_calls=[call("search_docs", query="q")])] * 3],
    ids=["success", "error", "overflow", "round-cap"],
)  # fmt: skip
async def test_nothing_of_a_sub_agent_remains_after_it_ends(script):
    child = TrackedClient(script)
    spawn = make_subagent_tool(child, tools=[search_docs], max_iterations=1)
    threads_before = set(threading.enumerate())
    parent = aimu.aio.Agent(ScriptedClient([spawn_turn(task="t"), "ok"]), tools=[spawn])

    assert await parent.run("go") == "ok"

    assert spawn.running == {}
    assert child.clones[0].closed
    assert set(threading.enumerate()) == threads_before
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_cancelling_the_parent_tears_the_child_down():
    started = asyncio.Event()
    stopped: list[str] = []

    @tool
    async def long_job() -> str:
        """Runs until cancelled."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.append("cleaned up")

    child = TrackedClient([call("long_job")])
    spawn = make_subagent_tool(child, tools=[long_job])
    parent = aimu.aio.Agent(ScriptedClient([spawn_turn(task="t")]), tools=[spawn])

    run = asyncio.create_task(parent.run("go"))
    await started.wait()
    assert list(spawn.running) == ["agent/subagent@call_s1"]
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert stopped == ["cleaned up"]
    assert spawn.running == {} and child.clones[0].closed
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert parent.messages[-1]["role"] == "assistant"


# --- approval and deps ----------------------------------------------------------------------


class Gate:
    """A policy that records who asked, through the optional for_agent hook."""

    def __init__(self, verdict=True):
        self.verdict = verdict
        self.asked: list[tuple[str, str]] = []

    def __call__(self, name, arguments):
        self.asked.append(("(unbound)", name))
        return self.verdict

    def for_agent(self, agent_name):
        def bound(name, arguments):
            self.asked.append((agent_name, name))
            return self.verdict

        return bound


def test_the_factory_policy_gates_the_childs_calls_and_knows_which_child_asks():
    gate = Gate(Denied("not now"))
    child = TrackedClient([call("send_email", to="x"), "gave up"])
    spawn = make_subagent_tool(child, tools=[send_email], tool_approval=gate)
    parent = parent_with(spawn, spawn_turn(task="t"), "ok")

    chunks = list(parent.run("go", stream=True))

    assert gate.asked == [("agent/subagent@call_s1", "send_email")]
    requested = [c for c in chunks if c.phase is Phase.APPROVAL_REQUESTED]
    assert [c.agent for c in requested] == ["agent/subagent@call_s1"]
    child_tool_message = child.clones[0].requests[1]["messages"][-1]
    assert "not approved: not now" in child_tool_message["content"]


def test_a_plain_policy_function_is_inherited_as_is():
    asked = []

    def policy(name, arguments):
        asked.append(name)
        return True

    child = TrackedClient([call("search_docs", query="q"), "done"])
    spawn = make_subagent_tool(child, tools=[search_docs], tool_approval=policy)
    parent_with(spawn, spawn_turn(task="t"), "ok").run("go")

    assert asked == ["search_docs"]


def test_a_spec_can_override_or_switch_off_the_inherited_policy():
    factory_gate, spec_gate = Gate(), Gate()
    child = TrackedClient([call("search_docs", query="q"), "done"])
    spawn = make_subagent_tool(child, tool_approval=factory_gate, agent_types={
        "strict": {"system_message": "s", "tools": [search_docs], "tool_approval": spec_gate},
        "trusted": {"system_message": "t", "tools": [search_docs], "tool_approval": approve_all},
        "default": {"system_message": "d", "tools": [search_docs]},
    })  # fmt: skip
    turns = [reply(tool_calls=[{"id": f"c_{kind}", **call("spawn_subagent", agent_type=kind,
                                                            task="t")}])
             for kind in ("strict", "trusted", "default")]  # fmt: skip
    parent_with(spawn, *turns, "ok").run("go")

    assert spec_gate.asked == [("agent/strict@c_strict", "search_docs")]
    assert factory_gate.asked == [("agent/default@c_default", "search_docs")]


def test_without_a_policy_of_its_own_a_sub_agent_asks_the_parents_gate():
    parent_gate = Gate()
    child = TrackedClient([call("search_docs", query="q"), "done"])
    spawn = make_subagent_tool(child, tools=[search_docs])
    Agent(ScriptedClient([spawn_turn(task="t"), "ok"]), tools=[spawn],
          tool_approval=parent_gate).run("go")  # fmt: skip

    assert ("agent/subagent@call_s1", "search_docs") in parent_gate.asked


def test_children_get_the_factory_deps_or_else_the_parents():
    seen = []

    @tool
    def whoami(ctx: ToolContext) -> str:
        """Report the deps."""
        seen.append((ctx.agent, ctx.deps))
        return "ok"

    child = TrackedClient([call("whoami"), "done"])
    inheriting = make_subagent_tool(child, tools=[whoami])
    Agent(ScriptedClient([spawn_turn(task="t"), "ok"]), tools=[inheriting],
          deps="parent-deps").run("go")  # fmt: skip
    own = make_subagent_tool(child, tools=[whoami], deps="own-deps", tool_name="spawn2")
    Agent(ScriptedClient([reply(tool_calls=[{"id": "c9", **call("spawn2", task="t")}]), "ok"]),
          tools=[own], deps="parent-deps").run("go")  # fmt: skip

    assert seen == [("agent/subagent@call_s1", "parent-deps"), ("agent/subagent@c9", "own-deps")]


def test_a_specialists_spec_is_checked_by_the_agents_own_rules_naming_its_key():
    child = ScriptedClient(["ok"])
    bad = {"compaction": 3, "inbox": "x", "tool_approval": "yes"}
    for key, value in bad.items():
        with pytest.raises(TypeError) as spec_error:
            make_subagent_tool(child, agent_types={"w": {"system_message": "x", key: value}})
        with pytest.raises(TypeError) as agent_error:
            Agent(child, **{key: value})
        said = str(agent_error.value)
        assert str(spec_error.value) == said.replace(key, f"agent_types['w']['{key}']", 1)

    @tool
    def look() -> str:
        """Look."""
        return "seen"

    @tool(name="look")
    def other() -> str:
        """Another look."""
        return "other"

    with pytest.raises(ValueError, match=r"^tools: two different tools are named 'look'"):
        make_subagent_tool(child, tools=[look, other])
