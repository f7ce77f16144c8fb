"""The agent loop: one dispatch path, streaming, concurrency, limits, and a transcript that
stays valid whatever happens."""

import asyncio
import os
import signal
import threading

import pytest

import aimu
from aimu import Agent, Phase, ToolContext, tool
from aimu.models.errors import ModelError
from aimu.models.providers.scripted import ScriptedClient, call, reply


def assert_valid_transcript(messages):
    """Every tool call answered exactly once, right after its turn; ends on the assistant."""
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in pending, message
            pending.discard(message["tool_call_id"])
        else:
            assert not pending, f"unanswered calls {pending} before {message}"
        if message["role"] == "assistant":
            pending = {c["id"] for c in message.get("tool_calls") or ()}
    assert not pending
    assert messages[-1]["role"] == "assistant"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


def tool_messages(agent):
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def test_run_returns_final_text_and_feeds_results_back():
    model = ScriptedClient([reply("Adding.", tool_calls=[call("add", a=2, b="3")]), "It is 5."])
    agent = Agent(model, system_message="Be brief.", tools=[add])
    assert agent.run("2+3?") == "It is 5."
    assert tool_messages(agent) == ["5"]
    second = model.requests[1]["messages"]
    assert second[0] == {"role": "system", "content": "Be brief."}
    assert second[-1]["role"] == "tool" and second[-1]["content"] == "5"
    assert model.requests[0]["tools"] == [add.__tool_spec__]
    assert_valid_transcript(agent.messages)


def test_stream_yields_chunks_in_order_and_ends_with_done():
    model = ScriptedClient(
        [reply("Let me add.", thinking="2 and 3", tool_calls=[call("add", a=2, b=3)]), "Five."]
    )
    chunks = list(Agent(model, tools=[add]).run("2+3?", stream=True))
    phases = [c.phase for c in chunks]
    assert phases[0] is Phase.THINKING
    assert phases.index(Phase.TOOL_CALL) < phases.index(Phase.TOOL_RESULT)
    assert phases[-1] is Phase.DONE and phases.count(Phase.DONE) == 1
    text = "".join(c.content for c in chunks if c.phase is Phase.TEXT)
    assert text == "Let me add.Five."
    done = chunks[-1].content
    assert done["text"] == "Five." and done["stop_reason"] == "complete"
    assert done["usage"]["output_tokens"] > 0
    assert [c.iteration for c in chunks if c.phase is Phase.TEXT][-1] == 2


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        (call("subtract", a=1, b=2), "Unknown tool 'subtract'. Available tools: add, explode."),
        (call("add", a="one", b=2), "Invalid arguments for tool 'add':"),
        (
            call("explode", reason="disk full"),
            "Tool 'explode' raised an error: RuntimeError: disk full",
        ),
        (call("add", '{"a": 1,'), "Tool 'add' was not called: the arguments were not valid JSON"),
        (call("add", "[1, 2]"), "Tool 'add' was not called: the arguments must be a JSON object"),
    ],
)
def test_every_failure_becomes_a_tool_message_and_the_run_continues(turn, expected):
    model = ScriptedClient([turn, call("add", a=1, b=2), "3"])
    agent = Agent(model, tools=[add, explode])
    assert agent.run("go") == "3"
    assert tool_messages(agent)[0].startswith(expected)
    assert tool_messages(agent)[1] == "3"
    assert_valid_transcript(agent.messages)


def test_streaming_tool_progress_reaches_the_consumer_before_the_tool_goes_on():
    steps_done: list[int] = []

    @tool
    def count_to(n: int):
        """Count, reporting progress."""
        for i in range(1, n + 1):
            yield f"{i}/{n}"
            steps_done.append(i)
        return f"counted to {n}"

    model = ScriptedClient([call("count_to", n=3), "done"])
    seen = []
    for chunk in Agent(model, tools=[count_to]).run("go", stream=True):
        if chunk.phase is Phase.TOOL_PROGRESS:
            seen.append((chunk.content["progress"], list(steps_done)))
        if chunk.phase is Phase.TOOL_RESULT:
            assert chunk.content["result"] == "counted to 3"
    assert seen == [("1/3", []), ("2/3", [1]), ("3/3", [1, 2])]


def test_async_generator_tool_result_falls_back_to_last_yield():
    @tool
    async def fetch_pages(count: int):
        """Fetch pages."""
        for i in range(count):
            await asyncio.sleep(0)
            yield {"page": i}

    agent = Agent(ScriptedClient([call("fetch_pages", count=2), "ok"]), tools=[fetch_pages])
    agent.run("go")
    assert tool_messages(agent) == ['{"page": 1}']


def test_async_tools_run_on_the_sync_agent():
    @tool
    async def slow_echo(text: str) -> str:
        """Echo after a pause."""
        await asyncio.sleep(0.01)
        return text.upper()

    agent = Agent(ScriptedClient([call("slow_echo", text="hi"), "ok"]), tools=[slow_echo])
    assert agent.run("go") == "ok" and tool_messages(agent) == ["HI"]


async def test_sync_tools_run_on_the_async_agent():
    agent = aimu.aio.Agent(ScriptedClient([call("add", a=1, b=1), "two"]), tools=[add])
    assert await agent.run("go") == "two"
    assert tool_messages(agent) == ["2"]


async def test_async_agent_streams():
    agent = aimu.aio.Agent(ScriptedClient(["Hello there."]))
    texts = [c.content async for c in agent.stream("hi") if c.phase is Phase.TEXT]
    assert "".join(texts) == "Hello there."


def test_concurrent_calls_overlap_and_results_keep_the_models_order():
    both_running = threading.Barrier(2, timeout=5)

    @tool
    def wait_for_partner(label: str) -> str:
        """Waits until the other call is running too."""
        both_running.wait()
        return label

    turn = reply(
        tool_calls=[
            call("wait_for_partner", label="first"),
            call("wait_for_partner", label="second"),
        ]
    )
    agent = Agent(
        ScriptedClient([turn, "done"]), tools=[wait_for_partner], concurrent_tool_calls=True
    )
    assert agent.run("go") == "done"
    assert tool_messages(agent) == ["first", "second"]


def test_sequential_calls_do_not_overlap():
    running = threading.Lock()

    @tool
    async def exclusive(label: str) -> str:
        """Fails if another call is running."""
        if not running.acquire(blocking=False):
            return "overlap!"
        await asyncio.sleep(0.01)
        running.release()
        return label

    turn = reply(tool_calls=[call("exclusive", label="a"), call("exclusive", label="b")])
    agent = Agent(ScriptedClient([turn, "done"]), tools=[exclusive])
    agent.run("go")
    assert tool_messages(agent) == ["a", "b"]


def test_concurrent_calls_still_ask_approval_one_at_a_time_in_order():
    log: list[str] = []

    async def policy(name, arguments):
        log.append(f"ask {arguments['label']}")
        await asyncio.sleep(0.01)
        log.append(f"answer {arguments['label']}")
        return True

    @tool
    async def job(label: str) -> str:
        """Job."""
        return label

    turn = reply(tool_calls=[call("job", label=str(i)) for i in range(3)])
    agent = Agent(
        ScriptedClient([turn, "done"]),
        tools=[job],
        tool_approval=policy,
        concurrent_tool_calls=True,
    )
    agent.run("go")
    assert log == ["ask 0", "answer 0", "ask 1", "answer 1", "ask 2", "answer 2"]
    assert tool_messages(agent) == ["0", "1", "2"]


def test_max_iterations_answers_open_calls_and_ends_with_a_tools_off_turn():
    model = ScriptedClient([call("add", a=1, b=1), call("add", a=2, b=2), "final answer"])
    agent = Agent(model, tools=[add], max_iterations=2)
    chunks = list(agent.run("loop forever", stream=True))
    assert chunks[-1].content["stop_reason"] == "max_iterations"
    assert chunks[-1].content["text"] == "final answer"
    results = tool_messages(agent)
    assert results[0] == "2"
    assert results[1].startswith("Not executed: the limit of 2 tool rounds was reached")
    assert [r["tools"] is None for r in model.requests] == [False, False, True]
    assert_valid_transcript(agent.messages)


def test_tool_context_carries_deps_and_run_id():
    seen = []

    @tool
    def whoami(ctx: ToolContext) -> str:
        """Report the context."""
        seen.append(ctx)
        return ctx.deps["user"]

    agent = Agent(
        ScriptedClient([call("whoami"), call("whoami"), "ok"]),
        tools=[whoami],
        deps={"user": "ada"},
        name="helper",
    )
    agent.run("who?")
    assert tool_messages(agent) == ["ada", "ada"]
    assert seen[0].run_id == seen[1].run_id != ""
    assert seen[0].agent == "helper" and seen[0].tool_call_id != seen[1].tool_call_id


def test_conversation_continues_across_runs_and_reset_forgets():
    model = ScriptedClient(["first answer", "second answer", "fresh answer"])
    agent = Agent(model, system_message="sys")
    agent.run("one")
    agent.run("two")
    assert [m["content"] for m in model.requests[1]["messages"]] == [
        "sys",
        "one",
        "first answer",
        "two",
    ]
    agent.reset()
    agent.run("three")
    assert [m["content"] for m in model.requests[2]["messages"]] == ["sys", "three"]


async def test_cancelling_a_run_mid_tool_says_which_call_was_stopped_and_which_never_ran():
    started = asyncio.Event()

    @tool
    async def slow(label: str) -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(30)
        return label

    turn = reply("Working.", tool_calls=[call("slow", label="a"), call("add", a=1, b=1)])
    model = ScriptedClient([turn, "after the interrupt"])
    agent = aimu.aio.Agent(model, tools=[slow, add])
    task = asyncio.ensure_future(agent.run("go"))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_valid_transcript(agent.messages)
    assert tool_messages(agent) == [
        "Stopped: the run was interrupted while this call was running; it may have done part "
        "of its work.",
        "Not executed: the run was interrupted before this call ran.",
    ]
    assert await agent.run("again") == "after the interrupt"


def test_ctrl_c_during_a_sync_tool_stops_the_run_and_keeps_the_transcript_valid(sigint_handled):
    @tool
    def press_ctrl_c() -> str:
        """Simulates the user pressing Ctrl-C while this tool runs."""
        os.kill(os.getpid(), signal.SIGINT)
        return "finished anyway"

    turn = reply(tool_calls=[call("press_ctrl_c"), call("add", a=1, b=2)])
    model = ScriptedClient([turn, "next run works"])
    agent = Agent(model, tools=[press_ctrl_c, add])
    with pytest.raises(KeyboardInterrupt):
        agent.run("go")
    assert tool_messages(agent) == [
        "finished anyway",
        "Not executed: the run was interrupted before this call ran.",
    ]
    assert_valid_transcript(agent.messages)
    assert agent.run("and now?") == "next run works"


def test_breaking_out_of_a_stream_closes_the_run_cleanly():
    model = ScriptedClient([reply("one two three four", tool_calls=[call("add", a=1, b=1)]), "x"])
    agent = Agent(model, tools=[add])
    for chunk in agent.run("go", stream=True):
        if chunk.phase is Phase.TEXT:
            break
    assert_valid_transcript(agent.messages)


def test_model_error_propagates_and_leaves_a_valid_transcript():
    model = ScriptedClient([call("add", a=1, b=1), ModelError("service unavailable"), "recovered"])
    agent = Agent(model, tools=[add])
    with pytest.raises(ModelError, match="service unavailable"):
        agent.run("go")
    assert_valid_transcript(agent.messages)
    assert agent.run("retry") == "recovered"


def test_scripted_model_says_when_its_script_is_exhausted():
    with pytest.raises(ModelError, match="no turn left"):
        Agent(ScriptedClient([])).run("hi")


async def test_sync_agent_called_from_inside_a_running_loop_works():
    agent = Agent(ScriptedClient([call("add", a=2, b=2), "four"]), tools=[add])
    assert agent.run("go") == "four"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"max_iterations": 0}, ValueError),
        ({"max_iterations": True}, ValueError),
        ({"tools": [lambda: 1]}, TypeError),
        ({"tools": add}, TypeError),
    ],
)
def test_bad_configuration_is_refused_at_construction(kwargs, error):
    with pytest.raises(error):
        Agent(ScriptedClient([]), **kwargs)


def test_two_different_tools_with_one_name_are_refused():
    @tool(name="add")
    def other_add(a: int) -> int:
        """Other."""
        return a

    with pytest.raises(ValueError, match="named 'add'"):
        Agent(ScriptedClient([]), tools=[add, other_add])


def test_task_must_be_text():
    with pytest.raises(TypeError, match="task must be a str"):
        Agent(ScriptedClient(["x"])).run(["not", "text"])


def test_client_accepts_provider_strings():
    model = aimu.client("scripted", turns=["hello"])
    assert Agent(model).run("hi") == "hello"
    with pytest.raises(ValueError, match="unknown model provider 'nope'"):
        aimu.client("nope:model")


def test_agent_without_a_model_uses_the_default_model(monkeypatch):
    monkeypatch.setenv("AIMU_MODEL", "scripted")
    assert Agent().client.provider == "scripted"
