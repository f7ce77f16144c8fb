"""The approval question shows the whole call: padding cannot hide what would run."""

from __future__ import annotations

from kernel_harness import Widgets
from test_approval import clicker

PADDED = "echo hello" + " " * 400 + "; touch pwned"
SETUP = f"m = ScriptedClient([call('run_command', command={PADDED!r}), 'done'])"


def test_the_stdin_question_shows_the_end_of_a_padded_command(kernel, tmp_path):
    kernel.ok(SETUP)
    result = kernel.execute(
        "%%agent --model m --tools compute\nrun it", widgets=False, on_input=lambda prompt: "n"
    )
    assert result.status == "ok", result.error_lines
    assert len(kernel.prompts) == 1 and "; touch pwned'" in kernel.prompts[0]
    assert not (tmp_path / "pwned").exists()


def test_the_approval_panel_shows_the_end_of_a_padded_command(kernel, tmp_path):
    kernel.ok(SETUP)
    widgets = Widgets()
    result = kernel.execute(
        "%%agent --model m --tools compute\nrun it",
        on_message=clicker(kernel, widgets, ("deny", "no")),
    )
    assert result.status == "ok", result.error_lines
    shown = [
        m["content"]["data"]["state"]["value"]
        for m in result.of_type("comm_open")
        if "<pre" in m["content"]["data"]["state"].get("value", "")
    ]
    assert len(shown) == 1 and "; touch pwned" in shown[0]
    assert not (tmp_path / "pwned").exists()
