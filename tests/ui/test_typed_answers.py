"""Answering an approval the way a person does, with key presses, in JupyterLab and Notebook 7.

A reason typed key by key must reach the model whole (typing sends the box's value change by
change, each after the kernel answers the one before; pasting sends it once), however slowly
it is typed and after leaving the box. While the ``%%agent`` cell runs, approval waiting or
not, the kernel reads busy; once it ends, idle.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lab_harness import cell, open_notebook, run_all, start_jupyter_lab, stop_jupyter_lab
from lab_harness import write_notebook as write
from test_agent_cell import AGENT, CHECK, DENY_MODEL, SETUP, prompt, wait_for_output

REASON = "please keep my disk untouched today"


def kernel_status(page) -> str:
    return page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"
    )


def open_in_notebook7(page, server, name: str) -> None:
    page.goto(f"{server.url}/notebooks/{name}?token={server.token}")
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    page.wait_for_function(
        """() => {
          const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
          return !!widget && !!widget.sessionContext && !!widget.sessionContext.session;
        }"""
    )
    page.evaluate(
        """async () => {
          const panel = window.jupyterapp.shell.currentWidget;
          await panel.sessionContext.ready;
          await panel.sessionContext.session.kernel.info;
        }"""
    )


def deny_with_typed_reason(page, reason: str, delay: float, tab_away: bool) -> None:
    box = page.get_by_placeholder("Reason, if you deny")
    box.wait_for(state="visible")
    assert prompt(page, 1) == "[*]:"
    box.click()
    box.press_sequentially(reason, delay=delay)
    if tab_away:
        page.keyboard.press("Tab")
        page.wait_for_timeout(3000)  # the person looks away before deciding
    assert kernel_status(page) == "busy"
    page.locator("button.aimu-approval-deny").click()


def check_denied_with(page, reason: str) -> None:
    wait_for_output(page, 1, f"Model read: Tool 'save_note' was not approved: {reason}")
    wait_for_output(page, 2, "notes: []")
    assert f"({reason})" in (cell(page, 1).locator(".jp-OutputArea").text_content() or "")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"
        " === 'idle'"
    )


@pytest.mark.parametrize(
    ("reason", "delay", "tab_away"),
    [(REASON, 30, False), ("not now", 120, True)],
    ids=["typed", "typed-slowly-then-tab-away"],
)
def test_a_reason_typed_key_by_key_reaches_the_model_whole_in_jupyterlab(
    lab_page, jupyter_lab, reason, delay, tab_away
):
    page = lab_page
    name = f"typed-{delay}.ipynb"
    write(jupyter_lab, name, [SETUP + DENY_MODEL, AGENT, CHECK])
    open_notebook(page, jupyter_lab, name)
    run_all(page)
    deny_with_typed_reason(page, reason, delay, tab_away)
    check_denied_with(page, reason)


WAITING = """\
import asyncio
from pathlib import Path

async def wait_for_release() -> str:
    "Wait until the test lets go."
    while not Path("release-busy").exists():
        await asyncio.sleep(0.1)
    return "released"

%tool wait_for_release
m2 = ScriptedClient([call("wait_for_release"), "All done."], delay=0.01)
"""


def test_the_kernel_reads_busy_while_an_agent_cell_runs_and_idle_after(lab_page, jupyter_lab):
    page = lab_page
    write(jupyter_lab, "busy.ipynb", [SETUP + WAITING, "%%agent --model m2\nWait."])
    open_notebook(page, jupyter_lab, "busy.ipynb")
    run_all(page)
    field = cell(page, 1).locator(".aimu-RunRenderer input.aimu-inbox-input")
    field.wait_for(state="visible")  # the extension's inbox comm was opened mid-run
    field.press_sequentially("hello", delay=30)
    page.keyboard.press("Enter")
    wait_for_output(page, 1, "Sent: hello")
    assert kernel_status(page) == "busy"
    assert "Busy" in page.locator(".jp-StatusBar-Item", has_text="Python 3").first.inner_text()
    (jupyter_lab.root / "release-busy").touch()
    wait_for_output(page, 1, "All done.")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"
        " === 'idle'"
    )


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory) -> Iterator[object]:
    """A Notebook 7 server (run these tests apart from the JupyterLab ones: one at a time)."""
    proc, server = start_jupyter_lab(tmp_path_factory.mktemp("notebook7"), app="notebook")
    try:
        yield server
    finally:
        stop_jupyter_lab(proc)


def test_a_reason_typed_key_by_key_reaches_the_model_whole_in_notebook_7(lab_page, notebook7):
    page = lab_page
    write(notebook7, "typed.ipynb", [SETUP + DENY_MODEL, AGENT, CHECK])
    open_in_notebook7(page, notebook7, "typed.ipynb")
    run_all(page)
    deny_with_typed_reason(page, "not now", 120, True)
    check_denied_with(page, "not now")
