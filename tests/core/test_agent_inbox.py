"""Messages put into an inbox during a run reach the model before its next turn, are kept in
the transcript, and each agent reads the inbox through its own cursor."""

import asyncio
import threading

import pytest

import aimu
from aimu import Agent, Phase, tool
from aimu.agents import Inbox
from aimu.models.providers.scripted import ScriptedClient, call


def test_a_message_put_from_another_thread_mid_run_reaches_the_next_turn():
    inbox = Inbox()

    @tool
    def slow_step() -> str:
        """A step during which the user types."""
        sender = threading.Thread(target=inbox.put, args=("Use metric units, please.",))
        sender.start()
        sender.join()
        return "step done"

    model = ScriptedClient([call("slow_step"), "ok, metric"])
    agent = Agent(model, tools=[slow_step], inbox=inbox)
    chunks = list(agent.run("measure it", stream=True))
    second = model.requests[1]["messages"]
    assert second[-1] == {"role": "user", "content": "Use metric units, please."}
    assert second[-2]["role"] == "tool"
    delivered = [c for c in chunks if c.phase is Phase.USER_MESSAGE]
    assert [c.content for c in delivered] == [{"text": "Use metric units, please."}]
    assert delivered[0].iteration == 2
    assert {"role": "user", "content": "Use metric units, please."} in agent.messages


def test_messages_put_before_the_run_are_not_delivered_to_it():
    inbox = Inbox()
    inbox.put("stale")
    model = ScriptedClient(["answer"])
    Agent(model, inbox=inbox).run("task")
    assert [m["content"] for m in model.requests[0]["messages"]] == ["task"]


def test_readers_have_their_own_cursors():
    inbox = Inbox()
    first, second = inbox.reader("a"), inbox.reader("b")
    inbox.put("one")
    assert first() == ["one"]
    inbox.put("two")
    assert second() == ["one", "two"]
    assert first() == ["two"]
    assert first() == [] and second() == []


async def test_two_agents_sharing_an_inbox_both_get_the_message():
    inbox = Inbox()
    gate = asyncio.Event()

    @tool
    async def wait_for_user() -> str:
        """Wait until the user has spoken."""
        await gate.wait()
        return "heard"

    models = [ScriptedClient([call("wait_for_user"), "done"]) for _ in range(2)]
    agents = [aimu.aio.Agent(m, tools=[wait_for_user], inbox=inbox, name=f"a{i}")
              for i, m in enumerate(models)]  # fmt: skip
    runs = [asyncio.ensure_future(a.run("go")) for a in agents]
    while sum(len(m.requests) for m in models) < 2:
        await asyncio.sleep(0)
    inbox.put("stop soon")
    gate.set()
    await asyncio.gather(*runs)
    for model in models:
        assert model.requests[1]["messages"][-1] == {"role": "user", "content": "stop soon"}


def test_an_inbox_given_to_one_run_serves_that_run():
    inbox = Inbox()

    @tool
    def step() -> str:
        """One step."""
        inbox.put("note")
        return "ok"

    model = ScriptedClient([call("step"), "done", call("step"), "again"])
    agent = Agent(model, tools=[step])
    agent.run("one", inbox=inbox)
    agent.run("two")
    assert model.requests[1]["messages"][-1]["content"] == "note"
    assert model.requests[3]["messages"][-1]["role"] == "tool"


@pytest.mark.parametrize("bad", ["", "   ", 3])
def test_empty_or_non_text_messages_are_refused(bad):
    with pytest.raises((TypeError, ValueError)):
        Inbox().put(bad)
    assert len(Inbox()) == 0


def test_inbox_must_be_an_inbox():
    with pytest.raises(TypeError, match=r"inbox must be an aimu\.agents\.Inbox"):
        Agent(ScriptedClient(["x"]), inbox=["hello"])


def test_a_message_put_while_the_model_answers_gets_an_answer_too():
    inbox = Inbox()

    def final_answer(messages, tools):
        inbox.put("and in feet?")
        return "It is 3 m."

    model = ScriptedClient([final_answer, "About 10 ft."])
    agent = Agent(model, inbox=inbox)
    assert agent.run("How long is it?") == "About 10 ft."
    assert [m["content"] for m in agent.messages] == [
        "How long is it?",
        "It is 3 m.",
        "and in feet?",
        "About 10 ft.",
    ]
