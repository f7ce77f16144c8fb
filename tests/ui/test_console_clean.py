"""After real use, the browser console is clean and no cell shows a warning.

A run with a tool call approved by a click, a message typed into "tell the agent…", a
second run denied with a typed reason, a reload of the page (the autosaved notebook may
hold a record saved while it ran) and a second Run All: JupyterLab must log no error (it
logs "Comm not found for comm id …" when the kernel closes a comm the page does not know,
e.g. one a page closed itself or one an earlier page opened), and no cell may get a stderr
box (the kernel's "coroutine … was never awaited" when a comm's subshell goes away with a
message still queued).
"""

from __future__ import annotations

from lab_harness import cell, open_notebook, run_all, save, write_notebook
from test_agent_cell import wait_for_output

SETUP = """\
%load_ext aimu
import asyncio
from aimu.models.providers.scripted import ScriptedClient, call

async def pause(seconds: float) -> str:
    "Wait a while."
    await asyncio.sleep(seconds)
    return "waited"

%tool pause
first = ScriptedClient(
    [call("pause", seconds=2), call("python", code="print(2)"), "First done."], delay=0.01
)
second = ScriptedClient([call("python", code="print(3)"), "Second done."], delay=0.01)
"""
CELLS = [
    SETUP,
    "%%agent --model first --tools python\nRun it",
    "%%agent --model second --tools python --new\nAgain",
    "print('after')",
]


def stderr_boxes(page) -> list[str]:
    boxes = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    return [box.inner_text() for box in boxes.all()]


def test_a_used_notebook_leaves_the_console_clean_and_no_stderr(lab_page, jupyter_lab):
    page = lab_page
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    write_notebook(jupyter_lab, "console.ipynb", CELLS)
    open_notebook(page, jupyter_lab, "console.ipynb")
    run_all(page)

    field = page.get_by_placeholder("tell the agent…").first
    field.wait_for(state="visible")
    field.press_sequentially("keep it short", delay=30)
    field.press("Enter")
    approve = page.locator("button.aimu-approval-approve").first
    approve.wait_for(state="visible")
    approve.click()
    wait_for_output(page, 1, "First done.")
    reason = page.get_by_placeholder("Reason, if you deny").first
    reason.wait_for(state="visible")
    reason.press_sequentially("not this one", delay=30)
    page.get_by_role("button", name="Deny").first.click()
    wait_for_output(page, 2, "Second done.")
    assert "not this one" in cell(page, 2).inner_text()

    page.reload()
    open_notebook(page, jupyter_lab, "console.ipynb")
    run_all(page)
    for _ in range(2):
        approve = page.locator("button.aimu-approval-approve").first
        approve.wait_for(state="visible")
        approve.click()
    wait_for_output(page, 2, "Second done.")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-InputArea-prompt')].every("
        "p => !p.textContent.includes('*'))"
    )
    page.wait_for_timeout(6000)  # an answered panel's widgets close a few seconds later
    save(page)

    assert errors == []
    assert stderr_boxes(page) == []
