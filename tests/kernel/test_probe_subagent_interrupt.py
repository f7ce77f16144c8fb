"""An interrupt stops a sub-agent's synchronous built-in (a shell command) at once."""

from __future__ import annotations

from test_interrupt import (
    assert_conversation_continues,
    assert_interrupted,
    assert_process_ends,
    interrupted_run,
)


def test_interrupt_stops_a_sub_agents_run_command_and_kills_its_child(kernel, tmp_path):
    pid_file = tmp_path / "child.pid"
    command = "echo $$ > child.pid; exec sleep 30"
    kernel.ok(
        "from aimu.tools import builtin\n"
        "from aimu.tools.builtin import make_subagent_tool\n"
        f"child = ScriptedClient([call('run_command', command={command!r}), 'child done'])\n"
        "spawn = make_subagent_tool(child, tools=[builtin.run_command])\n"
        "m = ScriptedClient([call('spawn_subagent', task='sleep'), 'parent done'])"
    )
    result, seconds = interrupted_run(
        kernel,
        "%%agent --model m --tools spawn --approve auto\ndelegate",
        lambda: pid_file.exists() and pid_file.read_text().strip(),
    )
    assert_interrupted(result, seconds)
    assert_process_ends(int(pid_file.read_text()))
    assert_conversation_continues(kernel)
