"""``--tools time,timeclient:tc``: a prefix for an MCP client's tools when names collide."""

from __future__ import annotations

SERVER = """\
from fastmcp import FastMCP
server = FastMCP('clock')
@server.tool
def convert_time(time: str, to_zone: str) -> str:
    'Convert a time to another zone.'
    return f'{time} in {to_zone}'
timeclient = aimu.tools.MCPClient(server=server)
"""


def test_a_collision_with_an_mcp_tool_suggests_the_prefix_form(kernel):
    kernel.ok(SERVER + "m = ScriptedClient(['x'])")
    result = kernel.execute("%%agent --model m --tools time,timeclient\nwhat time?")
    assert result.reply["ename"] == "UsageError"
    message = result.reply["evalue"]
    assert "two different tools are named 'convert_time'" in message
    assert "--tools timeclient:ti" in message
    assert kernel.value("len(m.requests)") == 0
    kernel.ok("timeclient.close()")


def test_the_prefix_reaches_the_clients_as_tools_and_names_its_tools(kernel):
    kernel.ok(
        "class Clock:\n"
        "    'Anything with as_tools(prefix=...) is taken as an MCP client.'\n"
        "    def __init__(self):\n        self.prefixes = []\n"
        "    def as_tools(self, prefix=''):\n"
        "        self.prefixes.append(prefix)\n"
        "        @aimu.tool(name=prefix + 'convert_time')\n"
        "        def convert(time: str) -> str:\n"
        "            'Convert a time.'\n"
        "            return 'server: ' + time\n"
        "        return [convert]\n"
        "clock = Clock()\n"
        "m = ScriptedClient([call('tc_convert_time', time='noon'), 'done'])"
    )
    result = kernel.ok("%%agent --model m --tools time,clock:tc --approve auto\nconvert")
    assert kernel.value("clock.prefixes") == ["tc_"]
    names = kernel.value("[t['function']['name'] for t in m.requests[0]['tools']]")
    assert "convert_time" in names and "tc_convert_time" in names
    assert result.record["events"][0]["result"] == "server: noon"


def test_a_prefix_on_something_that_is_not_an_mcp_client_is_a_clear_error(kernel):
    kernel.ok("m = ScriptedClient(['x'])\nrows = [1, 2]")
    result = kernel.execute("%%agent --model m --tools rows:tc\nhi")
    assert result.reply["ename"] == "UsageError"
    assert (
        "a prefix (name:prefix) applies to a notebook variable holding an MCP client"
        in (result.reply["evalue"])
    )
    bad = kernel.execute("%%agent --model m --tools m:t-c\nhi")
    assert "letters, digits or _" in bad.reply["evalue"]


def test_a_real_mcp_clients_tools_take_the_prefix_and_reach_the_server(kernel):
    kernel.ok(
        SERVER + "m = ScriptedClient([call('tc_convert_time', time='noon', to_zone='UTC'), 'ok'])"
    )
    result = kernel.ok("%%agent --model m --tools time,timeclient:tc --approve auto\nconvert")
    names = kernel.value("[t['function']['name'] for t in m.requests[0]['tools']]")
    assert "convert_time" in names and "tc_convert_time" in names
    card = next(e for e in result.record["events"] if e.get("name") == "tc_convert_time")
    assert card["result"] == "noon in UTC" and not card["is_error"]
    kernel.ok("timeclient.close()")
