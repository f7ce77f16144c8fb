"""In a real kernel, whether a call asks follows the tool's own flag, whatever route the tool
took into the run and however deep the sub-agent calling it is."""

from __future__ import annotations

from kernel_harness import Widgets
from test_approval import clicker

MCP_SERVER = """\
from fastmcp import FastMCP
from aimu.tools import builtin
from aimu.tools.builtin import make_subagent_tool
server = FastMCP('ops')
ran = []
@server.tool
def restart(service: str) -> str:
    'Restart a service.'
    ran.append(service)
    return 'restarted'
mcp = aimu.tools.MCPClient(server=server)
ops = mcp.as_tools()
for t in ops:
    t.__tool_read_only__ = False  # what the MCP wrapper records for a tool not marked read-only
"""


SEND = (
    "sent = []\n"
    "def send(to: str) -> str:\n    'Send a message.'\n    sent.append(to)\n    return 'sent'\n"
    "%tool --ask send\n"
)


def panel_titles(result) -> list[str]:
    return [
        m["content"]["data"]["state"]["value"]
        for m in result.of_type("comm_open")
        if m["content"]["data"]["state"].get("_model_name") == "HTMLModel"
        and "pprove a call to" in m["content"]["data"]["state"].get("value", "")
    ]


def test_a_builtin_run_command_handed_over_in_a_variable_still_asks(kernel, tmp_path):
    kernel.ok(
        "from aimu.tools import builtin\n"
        "mytools = [builtin.run_command]\n"
        "one = builtin.run_command\n"
        "m = ScriptedClient([call('run_command', command='touch pwned'), 'ok',"
        " call('run_command', command='touch pwned2'), 'ok'])"
    )
    listed = kernel.execute("%%agent --model m --tools mytools\nrun it", allow_stdin=False)
    alone = kernel.execute("%%agent --model m --tools one\nrun it", allow_stdin=False)
    for result in (listed, alone):
        assert result.status == "ok", result.error_lines
        card = result.record["events"][0]
        assert card["name"] == "run_command"
        assert card["status"] == "denied"
        assert card["approval"]["by"] == "policy"
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


def test_a_read_only_builtin_in_a_variable_runs_without_asking(kernel, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    kernel.ok(
        "from aimu.tools import builtin\n"
        "readers = [builtin.read_file]\n"
        "m = ScriptedClient([call('read_file', path='notes.txt'), 'ok'])"
    )
    result = kernel.execute("%%agent --model m --tools readers\nread", allow_stdin=False)
    assert result.status == "ok", result.error_lines
    card = result.record["events"][0]
    assert card["status"] == "done" and card["approval"] is None
    assert "hello" in card["result"]


def test_percent_tool_ask_is_recorded_on_the_function_and_survives_redefinition(kernel):
    kernel.ok(SEND)
    assert kernel.value("send.__tool_read_only__") is False
    kernel.ok(
        "def send(to: str) -> str:\n    'Send, redefined.'\n    sent.append(to)\n"
        "    return 'sent'\n"
        "m = ScriptedClient([call('send', to='bob'), 'done'])"
    )
    result = kernel.execute("%%agent --model m\nsend it", allow_stdin=False)
    assert result.status == "ok", result.error_lines
    assert result.record["events"][0]["status"] == "denied"
    assert kernel.value("sent") == []
    assert kernel.value("send.__tool_read_only__") is False


def test_mcp_and_percent_tool_ask_functions_ask_inside_a_spawned_sub_agent(kernel):
    kernel.ok(
        MCP_SERVER
        + SEND
        + "child = ScriptedClient([reply(tool_calls=[call('restart', service='db'),"
        " call('send', to='bob')]), 'child done'])\n"
        "spawn = make_subagent_tool(child, tools=[*ops, send])\n"
        "m = ScriptedClient([call('spawn_subagent', task='fix it'), 'parent done'])"
    )
    widgets = Widgets()
    result = kernel.execute(
        "%%agent --model m --tools spawn\ndelegate",
        on_message=clicker(kernel, widgets, ("approve",), ("deny", "not now"), ("deny", "no")),
    )
    assert result.status == "ok", result.error_lines
    assert kernel.value("ran") == [] and kernel.value("sent") == []
    spawn_card = result.record["events"][0]
    assert spawn_card["name"] == "spawn_subagent" and spawn_card["approval"]["by"] == "user"
    children = {c["name"]: c for c in spawn_card["children"] if c.get("name")}
    for name in ("restart", "send"):
        assert children[name]["status"] == "denied"
        assert children[name]["approval"]["by"] == "user"
    titles = panel_titles(result)
    assert len(titles) == 3
    assert all("Sub-agent <code>agent/subagent@" in title for title in titles[1:])
    kernel.ok("mcp.close()")


def test_a_write_tool_asks_in_a_sub_agent_two_levels_down(kernel, tmp_path):
    kernel.ok(
        "from aimu.tools import builtin\n"
        "from aimu.tools.builtin import make_subagent_tool\n"
        "def first(messages, tools):\n"
        "    names = {t['function']['name'] for t in tools or []}\n"
        "    if 'spawn_subagent' in names:\n"
        "        return call('spawn_subagent', task='go deeper')\n"
        "    return call('write_file', path='deep.txt', content='x')\n"
        "child = ScriptedClient([first, 'level done'])\n"
        "spawn = make_subagent_tool(child, tools=[builtin.write_file], max_depth=3)\n"
        "m = ScriptedClient([call('spawn_subagent', task='delegate'), 'parent done'])"
    )
    widgets = Widgets()
    result = kernel.execute(
        "%%agent --model m --tools spawn\ndelegate",
        on_message=clicker(
            kernel, widgets, ("approve",), ("approve",), ("approve",), ("deny", "too deep")
        ),
    )
    assert result.status == "ok", result.error_lines
    assert not (tmp_path / "deep.txt").exists()
    titles = panel_titles(result)
    assert len(titles) == 4
    assert "write_file" in titles[-1]
    assert titles[-1].count("subagent@") == 3  # the great-grandchild names its whole lineage


def test_the_notebook_tools_read_except_add_cell_and_the_python_tool_executes():
    from types import SimpleNamespace

    from aimu_jupyter.kernel_tools._notebook import make_notebook_tools
    from aimu_jupyter.run._toolbox import make_kernel_python_tool

    tools = make_notebook_tools(SimpleNamespace(user_ns={}))
    flags = {t.__tool_spec__["function"]["name"]: t.__tool_read_only__ for t in tools}
    assert flags == {
        "list_variables": True,
        "describe_variable": True,
        "read_cells": True,
        "add_cell": False,  # it writes the notebook
        "list_cells": True,
        "edit_cell": False,  # it changes a cell
        "run_cell": False,  # it executes a cell
    }
    assert make_kernel_python_tool({}, []).__tool_read_only__ is False
