"""A tool carries its own classification (``__tool_read_only__``), set where it is defined,
and an approval gate reads it through ``requires_approval(..., tool=)``."""

from __future__ import annotations

import pytest

from aimu import Agent
from aimu.memory import DocumentStore
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.tools import ToolSignatureError, builtin, tool
from aimu.tools.approval import read_only
from aimu.tools.builtin import (
    make_command_tool,
    make_memory_tools,
    make_retrieval_tool,
    make_subagent_tool,
    make_web_tools,
)

READERS = {
    "get_web_content",
    "get_webpage_html",
    "web_search",
    "wikipedia",
    "get_weather",
    "list_directory",
    "read_file",
    "calculate",
    "get_current_date_and_time",
    "convert_time",
    "echo",
    "find_forms",
    "search_memories",
    "list_memories",
    "retrieve_context",
}
WRITERS = {
    "write_file",
    "edit_file",
    "execute_python",
    "execute_python_in_process",
    "run_command",
    "submit_form",
    "submit_json",
    "store_memory",
    "spawn_subagent",
}


def every_builtin_and_factory_tool() -> list:
    store = DocumentStore()
    return [
        *builtin.web,
        *builtin.fs,
        *builtin.compute,
        *builtin.time,
        *builtin.misc,
        builtin.execute_python_in_process,
        make_command_tool(env_passthrough=("PATH",)),
        *make_web_tools(),
        *make_memory_tools(store),
        make_retrieval_tool(store),
        make_subagent_tool(ScriptedClient([])),
    ]


def test_every_builtin_and_factory_tool_declares_whether_it_only_reads():
    seen = {}
    for fn in every_builtin_and_factory_tool():
        seen[fn.__tool_spec__["function"]["name"]] = fn.__tool_read_only__
    assert {name for name, flag in seen.items() if flag is True} == READERS
    assert {name for name, flag in seen.items() if flag is False} == WRITERS


def test_read_only_is_set_by_the_decorator_and_undeclared_is_none():
    @tool(read_only=True)
    def look() -> str:
        """Look."""
        return ""

    @tool(read_only=False)
    def touch() -> str:
        """Touch."""
        return ""

    @tool
    def mine() -> str:
        """Mine."""
        return ""

    assert (look.__tool_read_only__, touch.__tool_read_only__, mine.__tool_read_only__) == (
        True,
        False,
        None,
    )


def test_re_decorating_a_builtin_keeps_its_flag():
    renamed = tool(name="run_command")(builtin.run_command)
    assert renamed.__tool_read_only__ is False


def test_renaming_a_builtin_leaves_the_shared_one_as_it_was():
    shell = tool(name="shell", description="Run a shell command.")(builtin.run_command)
    careful = tool(read_only=False)(builtin.read_file)
    assert shell is not builtin.run_command and careful.__tool_read_only__ is False
    assert builtin.run_command.__tool_spec__["function"]["name"] == "run_command"
    assert builtin.run_command.__tool_spec__["function"]["description"] != "Run a shell command."
    assert (
        builtin.read_file.__tool_read_only__ is True
        and builtin.write_file.__tool_read_only__ is False
    )
    assert shell.__tool_spec__["function"]["name"] == "shell" and shell.__tool_read_only__ is False
    assert "hi" in shell("echo hi")
    agent = Agent(ScriptedClient([call("shell", command="echo renamed"), "done"]), tools=[shell],
                  tool_approval=lambda name, arguments: True)  # fmt: skip
    agent.run("go")
    assert "renamed" in agent.messages[-2]["content"]


def test_read_only_must_be_a_bool():
    with pytest.raises(ToolSignatureError, match="read_only"):
        tool(read_only="yes")


def test_a_mistyped_flag_counts_as_writing():
    def fn():
        pass

    fn.__tool_read_only__ = "true"
    assert read_only(fn) is False
    assert read_only(object()) is None


class FlagGate:
    """A policy deciding from the tool itself, as the notebook's does."""

    def __init__(self):
        self.seen = []

    def requires_approval(self, tool_name, arguments, tool):
        self.seen.append((tool_name, tool))
        return read_only(tool) is False

    def __call__(self, tool_name, arguments):
        return False


def test_the_gate_decides_from_the_tool_not_from_its_name():
    shell = tool(name="harmless_lookup")(make_command_tool())  # a fresh run_command, renamed

    @tool
    def write_file(text: str) -> str:  # the user's own, undeclared, named like a built-in
        """Echo text."""
        return text

    gate = FlagGate()
    model = ScriptedClient(
        [
            reply(
                tool_calls=[
                    call("harmless_lookup", command="echo hi"),
                    call("write_file", text="x"),
                ]
            ),
            "done",
        ]
    )
    agent = Agent(model, tools=[shell, write_file], tool_approval=gate)
    chunks = list(agent.run("go", stream=True))
    assert gate.seen == [("harmless_lookup", shell), ("write_file", write_file)]
    asked = [c.content["name"] for c in chunks if c.phase is Phase.APPROVAL_REQUESTED]
    assert asked == ["harmless_lookup"]
    results = {m["name"]: m["content"] for m in agent.messages if m["role"] == "tool"}
    assert results["harmless_lookup"] == "Tool 'harmless_lookup' was not approved."
    assert results["write_file"] == "x"


class ApproveSpawnOnly(FlagGate):
    def __call__(self, tool_name, arguments):
        return tool_name == "spawn_subagent"


def test_a_sub_agent_inherits_the_gate_and_the_gate_sees_the_childs_tools():
    sent = []

    @tool(read_only=False)
    def send(to: str) -> str:
        """Send."""
        sent.append(to)
        return "sent"

    child = ScriptedClient([call("send", to="bob"), "child done"])
    spawn = make_subagent_tool(child, tools=[send])
    parent = ScriptedClient([call("spawn_subagent", task="mail bob"), "parent done"])
    gate = ApproveSpawnOnly()
    answer = Agent(parent, tools=[spawn], tool_approval=gate).run("go")
    assert answer == "parent done"
    assert gate.seen == [("spawn_subagent", spawn), ("send", send)]
    assert sent == []
