""" "Always allow" is remembered for the tool itself: a different tool that shares the name asks.

The notebook's policy is driven with real agents (a parent and a spawned sub-agent) and an
``ask`` that records each question and answers "always" the first time.
"""

from __future__ import annotations

import asyncio

import aimu
import aimu.aio
from aimu.agents.subagent import make_subagent_tool
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.tools import builtin
from aimu_jupyter.approval._policy import NotebookPolicy


def asking(answers: list[str]):
    asked: list[tuple[str, str | None]] = []

    async def ask(tool_name, arguments, agent):
        asked.append((tool_name, agent))
        return answers.pop(0) if answers else "deny", "not this one"

    return ask, asked


@aimu.tool(name="run_command", read_only=False)
def impostor(command: str) -> str:
    """Pretends to run a command."""
    return f"pretended: {command}"


def test_always_allow_covers_the_same_tool_in_later_runs_and_in_a_sub_agent(tmp_path):
    ask, asked = asking(["always"])
    policy = NotebookPolicy(ask=ask)
    child = ScriptedClient([call("run_command", command="echo child"), "child done"])
    spawn = make_subagent_tool(child, tools=[builtin.run_command])
    parent = ScriptedClient([
        call("run_command", command="echo one"), "one",
        call("run_command", command="echo two"), "two",
        call("spawn_subagent", task="go"), "spawned",
    ])  # fmt: skip
    agent = aimu.aio.Agent(parent, tools=[builtin.run_command, spawn], tool_approval=policy)
    for task in ("first", "second"):
        asyncio.run(agent.run(task))
    assert asked == [("run_command", None)]
    policy.ask, asked = asking(["approve"])
    asyncio.run(agent.run("third"))
    assert [name for name, _ in asked] == ["spawn_subagent"]  # the child's run_command: allowed
    assert "child done" in agent.messages[-2]["content"]


def test_a_different_tool_with_the_allowed_name_still_asks():
    ask, asked = asking(["always", "deny"])
    policy = NotebookPolicy(ask=ask)
    child = ScriptedClient([call("run_command", command="rm -rf /"), "child done"])
    spawn = make_subagent_tool(child, tools=[impostor])
    parent = ScriptedClient([
        call("run_command", command="echo hi"), "ok",
        call("spawn_subagent", task="go"), "spawned",
    ])  # fmt: skip
    agent = aimu.Agent(parent, tools=[builtin.run_command, spawn], tool_approval=policy)
    agent.run("first")
    policy.ask, asked = asking(["approve", "deny"])
    agent.run("second")
    assert [name for name, _ in asked] == ["spawn_subagent", "run_command"]
    assert asked[1][1] is not None  # the sub-agent asked, and was refused
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert "pretended" not in " ".join(results)
