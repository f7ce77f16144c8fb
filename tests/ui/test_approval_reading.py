"""What a person reads around an approval in a real JupyterLab: code shown as code, who let
each call through, a calm stop, and a run that never ended saying so when reopened."""

from __future__ import annotations

import nbformat
from lab_harness import KERNELSPEC, cell, open_notebook, run_all, save, write_notebook
from test_agent_cell import SETUP, prompt, wait_for_output

RUN_MIME = "application/vnd.aimu.run+json"
CODE = "total = 0\nfor i in range(10):\n    total += i\nprint(total)"

PYTHON_MODEL = f"""\
m = ScriptedClient([call("python", code={CODE!r}), "The total is 45."], delay=0.01)
"""

ALWAYS_MODEL = """\
m = ScriptedClient(
    [call("save_note", text="buy milk"), call("save_note", text="buy bread"), "Both saved."],
    delay=0.01,
)
"""


def start(page, lab, name: str, cells: list[str]) -> None:
    """Write the notebook, open it and run all its cells (without waiting for them)."""
    write_notebook(lab, name, cells)
    open_notebook(page, lab, name)
    run_all(page)


def test_a_multi_line_python_call_is_approved_reading_its_lines(lab_page, jupyter_lab):
    page = lab_page
    agent = "%%agent --model m --tools python\nAdd up 0 to 9."
    start(page, jupyter_lab, "code.ipynb", [SETUP + PYTHON_MODEL, agent])

    panel = cell(page, 1).locator(".aimu-approval")
    panel.wait_for(state="visible")
    assert CODE in panel.locator("pre").first.inner_text()
    card_code = cell(page, 1).locator(".aimu-tool .aimu-code-block code.language-python")
    assert card_code.first.text_content() == CODE
    # Highlighted by JupyterLab's Markdown renderer: `for`, `range` and numbers get spans.
    assert card_code.first.locator("span").count() >= 5
    assert cell(page, 1).locator(".aimu-insert-cell:visible").count() == 0  # not run yet
    page.locator("button.aimu-approval-approve").click()
    wait_for_output(page, 1, "The total is 45.")
    assert cell(page, 1).locator(".aimu-insert-cell:visible").count() == 1
    save(page)
    saved = nbformat.read(jupyter_lab.root / "code.ipynb", as_version=4)
    markdown = saved.cells[1].outputs[0]["data"]["text/markdown"]
    assert f"```python\n{CODE}\n```" in markdown


def test_always_allow_is_recorded_on_every_call_it_covers(lab_page, jupyter_lab):
    page = lab_page
    agent = "%%agent --model m\nSave two notes."
    start(page, jupyter_lab, "always.ipynb", [SETUP + ALWAYS_MODEL, agent])
    always = page.locator("button.aimu-approval-always")
    always.wait_for(state="visible")
    always.click()
    wait_for_output(page, 1, "Both saved.")
    text = cell(page, 1).locator(".jp-OutputArea").text_content() or ""
    assert "Allowed: Always allow, chosen here" in text
    assert "Allowed: Always allow, chosen at save_note(text='buy milk')" in text

    save(page)
    saved = nbformat.read(jupyter_lab.root / "always.ipynb", as_version=4)
    data = saved.cells[1].outputs[0]["data"]
    approvals = [e["approval"] for e in data[RUN_MIME]["events"] if e["type"] == "tool"]
    assert [a["by"] for a in approvals] == ["always", "always"]
    assert approvals[1]["chosen_at"] == "save_note(text='buy milk')"
    assert "allowed: Always allow, chosen at save_note(text='buy milk')" in data["text/markdown"]


def test_stopping_while_an_approval_waits_reads_stopped_by_you(lab_page, jupyter_lab):
    page = lab_page
    agent = "%%agent --model m\nSave two notes."
    start(page, jupyter_lab, "stop.ipynb", [SETUP + ALWAYS_MODEL, agent])
    page.locator("button.aimu-approval-approve").wait_for(state="visible")
    assert prompt(page, 1) == "[*]:"
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:interrupt-kernel')")
    wait_for_output(page, 1, "Stopped by you; the conversation is kept.")
    card = cell(page, 1).locator(".aimu-tool").first
    assert card.locator(".aimu-badge").inner_text() == "stopped by you"
    text = cell(page, 1).locator(".jp-OutputArea").text_content() or ""
    assert "Denied" not in text and "AgentInterrupted" not in text
    assert cell(page, 1).locator(".aimu-badge--error").count() == 0


def test_a_saved_run_that_never_ended_says_it_did_not_finish(lab_page, jupyter_lab):
    record = {
        "version": 1,
        "prompt": "Write the report.",
        "model": "scripted",
        "status": "running",
        "error": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "duration_s": 2.0,
        "events": [],
        "inbox": None,
        "run": "0" * 32,
    }
    output = nbformat.v4.new_output("display_data", data={RUN_MIME: record, "text/plain": "…"})
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("%%agent\nWrite the report.", outputs=[output])],
        metadata={"kernelspec": KERNELSPEC},
    )
    nbformat.write(notebook, jupyter_lab.root / "died.ipynb")
    page = lab_page
    open_notebook(page, jupyter_lab, "died.ipynb")
    wait_for_output(page, 0, "did not finish: the kernel stopped")
    assert "running" not in (cell(page, 0).locator(".aimu-run-status").inner_text())
