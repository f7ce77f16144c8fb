"""A sub-agent's timeout ends it even while its synchronous tool blocks."""

import threading

from aimu import Agent, tool
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.tools.builtin import make_subagent_tool


def test_the_timeout_stops_a_sub_agent_whose_sync_tool_blocks():
    release = threading.Event()
    finished = threading.Event()

    @tool
    def wait_for_release() -> str:
        """Block until the test lets go."""
        release.wait(10)
        finished.set()
        return "released"

    child = ScriptedClient([call("wait_for_release"), "child done"])
    spawn = make_subagent_tool(child, tools=[wait_for_release], timeout=1)
    agent = Agent(ScriptedClient([call("spawn_subagent", task="wait"), "parent done"]),
                  tools=[spawn])  # fmt: skip
    try:
        assert agent.run("delegate") == "parent done"
        assert not finished.is_set(), "the run waited for the blocking tool to return"
    finally:
        release.set()
    answer = next(m["content"] for m in agent.messages if m["role"] == "tool")
    assert "timed out after 1 s" in answer
