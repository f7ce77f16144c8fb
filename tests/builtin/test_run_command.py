"""run_command and make_command_tool: /bin/sh -c under the shared supervisor."""

import pytest

from aimu.tools import builtin
from aimu.tools.builtin import _compute, make_command_tool, run_command

SECRET = "sk-test-do-not-leak-4242"


def test_exit_code_and_labelled_streams_are_returned():
    out = run_command("echo out; echo err >&2")
    assert out == "exit code: 0\nstdout:\nout\nstderr:\nerr"


def test_nonzero_exit_returns_the_output_not_an_error():
    out = run_command("echo 'FAILED test_x'; exit 1")
    assert out == "exit code: 1\nstdout:\nFAILED test_x\nstderr: (empty)"


def test_stdin_is_closed_so_prompts_do_not_wait():
    out = run_command('read answer; echo "got:$answer"')
    assert "stdout:\ngot:" in out


def test_cwd_is_used_and_a_missing_one_is_reported(tmp_path):
    assert str(tmp_path) in run_command("pwd", cwd=str(tmp_path))
    out = run_command("pwd", cwd=str(tmp_path / "nope"))
    assert out.startswith("Error:") and "does not exist" in out


def test_empty_command_is_refused():
    assert run_command("   ").startswith("Error:")


def test_environment_is_an_allowlist_without_keys(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("GH_TOKEN", SECRET)
    out = run_command("env")
    assert SECRET not in out
    assert "PATH=" in out


def test_passthrough_variables_reach_the_child_and_nothing_else(monkeypatch):
    monkeypatch.setenv("GH_TOKEN", "gh-visible")
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    gh = make_command_tool(env_passthrough=("GH_TOKEN",))
    out = gh("env")
    assert "GH_TOKEN=gh-visible" in out
    assert SECRET not in out
    assert "GH_TOKEN" not in run_command("env")


def test_passthrough_is_read_when_the_command_runs(monkeypatch):
    gh = make_command_tool(env_passthrough=["LATE_VAR"])
    monkeypatch.setenv("LATE_VAR", "set-later")
    assert "set-later" in gh("echo $LATE_VAR")


def test_a_bare_string_for_env_passthrough_is_a_type_error():
    with pytest.raises(TypeError, match="not a single string"):
        make_command_tool(env_passthrough="GH_TOKEN")


def test_a_malformed_variable_name_is_refused():
    with pytest.raises(ValueError, match="not an environment variable name"):
        make_command_tool(env_passthrough=["A=B"])


def test_timeout_kills_the_command_and_its_background_children(process_dies):
    out = run_command("sleep 300 & echo $!; while :; do :; done", timeout=1)
    assert out.startswith("Timed out after 1 s")
    background = int(out.split("stdout:\n")[1].split()[0])
    assert process_dies(background)


def test_background_processes_die_when_the_command_ends(process_dies, own_children):
    before = own_children()
    out = run_command("sleep 300 & echo $!")
    assert out.startswith("exit code: 0")
    assert process_dies(int(out.split("stdout:\n")[1].split()[0]))
    assert own_children() == before


def test_background_process_with_its_output_redirected_also_dies(process_dies):
    out = run_command("sleep 300 >/dev/null 2>&1 & echo $!")
    assert process_dies(int(out.split("stdout:\n")[1].split()[0]))


def test_a_double_fork_inside_the_group_is_killed(process_dies):
    out = run_command("pid=$( ( (sleep 300 >/dev/null & echo $!) & ) ); echo $pid")
    pid = int(out.split("stdout:\n")[1].split()[0])
    assert process_dies(pid)


def test_timeout_is_clamped_to_600_seconds(monkeypatch):
    seen = []
    real_run = _compute._process.run

    def spy(*args, **kwargs):
        seen.append(kwargs["timeout"])
        return real_run(*args, **kwargs)

    monkeypatch.setattr(_compute._process, "run", spy)
    assert run_command("true", timeout=100_000).startswith("exit code: 0")
    assert run_command("true", timeout=0).startswith("exit code: 0")
    assert seen == [600, 1]


def test_output_flood_keeps_head_and_tail():
    out = run_command("seq 1 1000000")
    stdout = out.split("stdout:\n")[1]
    assert stdout.startswith("1\n2\n3\n") and "\n1000000\nstderr" in out + "stderr"
    assert "bytes omitted" in out and len(out) < 20_000


def test_a_killed_command_names_the_signal():
    assert run_command("kill -9 $$").startswith("exit code: -9 (killed by SIGKILL)")


def test_one_definition_one_docstring():
    made = make_command_tool(env_passthrough=["X"])
    assert made.__tool_spec__ == run_command.__tool_spec__
    description = " ".join(run_command.__tool_spec__["function"]["description"].split())
    assert "NOT A SECURITY BOUNDARY" in description and "There is no memory cap" in description


def test_in_compute_and_unscoped_but_not_all_tools():
    assert run_command in builtin.compute and run_command in builtin.unscoped
    assert run_command not in builtin.ALL_TOOLS
