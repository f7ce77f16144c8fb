"""An interrupt stops a sub-agent's synchronous built-in (a shell command) at once."""

from __future__ import annotations

import time

from test_interrupt import (
    assert_conversation_continues,
    assert_interrupted,
    interrupted_run,
    process_alive,
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
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 2
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not process_alive(pid), "the sub-agent's command outlived the interrupt"
    assert_conversation_continues(kernel)
