""" "Always allow" covers exactly one tool: the same function, the same factory configuration.

Real agents drive the notebook's policy, with an ``ask`` that records each question and
answers "always" first.
"""

from __future__ import annotations

import asyncio

import aimu
import aimu.aio
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.tools import builtin
from aimu.tools.builtin import make_command_tool
from aimu_jupyter.approval._policy import NotebookPolicy


def run(tool, policy, **arguments) -> str:
    name = tool.__tool_spec__["function"]["name"]
    agent = aimu.aio.Agent(
        ScriptedClient([call(name, **arguments), "done"]), tools=[tool], tool_approval=policy
    )
    asyncio.run(agent.run("go"))
    return agent.messages[-2]["content"]


def test_allowing_run_command_does_not_cover_a_command_tool_that_passes_a_token(asker):
    ask, asked = asker(["always", "deny"])
    policy = NotebookPolicy(ask=ask)
    run(builtin.run_command, policy, command="echo plain")
    run(builtin.run_command, policy, command="echo again")
    gh = make_command_tool(env_passthrough=("GH_TOKEN",))
    result = run(gh, policy, command="echo $GH_TOKEN")
    assert asked == ["run_command", "run_command"]
    assert "not approved" in result


def test_the_same_factory_configuration_is_the_same_tool(asker):
    ask, asked = asker(["always"])
    policy = NotebookPolicy(ask=ask)
    run(make_command_tool(env_passthrough=("GH_TOKEN",)), policy, command="true")
    result = run(make_command_tool(env_passthrough=["GH_TOKEN"]), policy, command="true")
    assert asked == ["run_command"]
    assert result.startswith("exit code: 0")


def test_a_redefined_function_with_the_same_name_and_code_asks_again(asker):
    ask, asked = asker(["always", "deny", "deny"])
    policy = NotebookPolicy(ask=ask)
    for _ in range(3):

        @aimu.tool(read_only=False)
        def send(to: str) -> str:
            """Send a message."""
            return f"sent to {to}"

        run(send, policy, to="bob")
        del send  # the old function may be freed, and its address reused
    assert asked == ["send", "send", "send"]
