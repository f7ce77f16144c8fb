"""``%%agent`` in a real JupyterLab, clicked through in headless Chromium.

The approval panel is answered while the cell is still running (its prompt shows ``[*]``),
the tool card fills in, the answer renders, Run All waits for the agent, and the saved
notebook reopens showing the run as a static record with no widget state.
"""

from __future__ import annotations

import nbformat
from lab_harness import cell, open_notebook, run_all, save, write_notebook

RUN_MIME = "application/vnd.aimu.run+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

SETUP = '''\
%load_ext aimu
from aimu.models.providers.scripted import ScriptedClient, reply, call
notes = []

def save_note(text: str) -> str:
    """Save a note for later.

    Args:
        text: The note.
    """
    notes.append(text)
    return f"saved note #{len(notes)}"

%tool --ask save_note
'''

APPROVE_MODEL = """\
m = ScriptedClient(
    [reply("Saving it now.", tool_calls=[call("save_note", text="buy milk")]),
     "The note is **saved**."],
    delay=0.01,
)
"""

DENY_MODEL = """\
m = ScriptedClient(
    [call("save_note", text="buy milk"),
     lambda messages, tools: "Model read: " + messages[-1]["content"]],
    delay=0.01,
)
"""

AGENT = "%%agent --model m\nSave a note: buy milk"
CHECK = 'print("notes:", notes)'


def output_text(page, index: int) -> str:
    return cell(page, index).locator(".jp-OutputArea").text_content() or ""


def wait_for_output(page, index: int, text: str) -> None:
    page.wait_for_function(
        """([index, text]) => {
          const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[index];
          const out = cell && cell.querySelector('.jp-OutputArea');
          return !!out && out.textContent.includes(text);
        }""",
        arg=[index, text],
    )


def prompt(page, index: int) -> str:
    return cell(page, index).locator(".jp-InputArea-prompt").inner_text().strip()


def test_approve_while_the_cell_runs_fills_the_card_and_renders_the_answer(
    lab_page, jupyter_lab, chromium
):
    page = lab_page
    write_notebook(jupyter_lab, "approve.ipynb", [SETUP + APPROVE_MODEL, AGENT, CHECK])
    open_notebook(page, jupyter_lab, "approve.ipynb")
    run_all(page)

    approve = page.locator("button.aimu-approval-approve")
    approve.wait_for(state="visible")
    assert prompt(page, 1) == "[*]:"
    panel = cell(page, 1).locator(".aimu-approval")
    assert "save_note" in panel.inner_text()
    assert "text\tbuy milk" in panel.inner_text()  # the arguments as a small table
    assert cell(page, 2).locator(".jp-OutputArea-output").count() == 0
    approve.click()

    wait_for_output(page, 1, "The note is")
    wait_for_output(page, 1, "saved note #1")
    wait_for_output(page, 2, "notes: ['buy milk']")
    assert approve.count() == 0
    text = output_text(page, 1)
    assert "Saving it now." in text and "approved" in text.lower()
    strong = cell(page, 1).locator("strong", has_text="saved")
    assert strong.count() >= 1, "the answer's Markdown was not rendered"

    save(page)
    saved = nbformat.read(jupyter_lab.root / "approve.ipynb", as_version=4)
    outputs = saved.cells[1].outputs
    assert not [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    assert [o["output_type"] for o in outputs] == ["display_data"]  # the record, nothing else
    record = next(o["data"][RUN_MIME] for o in outputs if RUN_MIME in o.get("data", {}))
    assert record["status"] == "done"
    card = record["events"][1]
    assert card["name"] == "save_note" and card["result"] == "saved note #1"
    assert card["approval"] == {"approved": True, "reason": "", "by": "user"}
    markdown = next(o["data"]["text/markdown"] for o in outputs if RUN_MIME in o.get("data", {}))
    assert "The note is **saved**." in markdown and "approved" in markdown

    reopened = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    try:
        open_notebook(reopened, jupyter_lab, "approve.ipynb", wait_for_kernel=False)
        wait_for_output(reopened, 1, "The note is")
        again = output_text(reopened, 1)
        assert "saved note #1" in again and "approved" in again.lower()
        assert reopened.locator(".aimu-approval").count() == 0
    finally:
        reopened.context.close()


def test_deny_with_a_reason_from_the_keyboard_reaches_the_model(lab_page, jupyter_lab):
    page = lab_page
    write_notebook(jupyter_lab, "deny.ipynb", [SETUP + DENY_MODEL, AGENT, CHECK])
    open_notebook(page, jupyter_lab, "deny.ipynb")
    run_all(page)

    reason = page.get_by_placeholder("Reason, if you deny")
    reason.wait_for(state="visible")
    assert prompt(page, 1) == "[*]:"
    reason.fill("not today")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    focused = page.evaluate("() => document.activeElement.textContent.trim()")
    assert focused == "Deny"
    page.keyboard.press("Enter")

    wait_for_output(page, 1, "Model read: Tool 'save_note' was not approved: not today")
    wait_for_output(page, 2, "notes: []")
    text = output_text(page, 1)
    assert "denied" in text.lower() and "not today" in text
    assert page.locator(".aimu-approval").count() == 0


WAITING_MODEL = """\
import asyncio
from pathlib import Path

async def wait_for_user() -> str:
    "Wait until the user has had their say."
    for _ in range(600):
        if Path("release").exists():
            return "the user spoke"
        await asyncio.sleep(0.1)
    return "no one spoke"

%tool wait_for_user
m = ScriptedClient(
    [call("wait_for_user"),
     lambda messages, tools: "Model read: " + messages[-1]["content"]],
    delay=0.01,
)
"""


def test_the_extensions_field_talks_to_the_run_and_leaves_nothing_behind(lab_page, jupyter_lab):
    page = lab_page
    agent = "%%agent --model m\nMeasure the room."
    write_notebook(jupyter_lab, "inbox.ipynb", [SETUP + WAITING_MODEL, agent])
    open_notebook(page, jupyter_lab, "inbox.ipynb")
    run_all(page)

    field = cell(page, 1).locator(".aimu-RunRenderer input.aimu-inbox-input")
    field.wait_for(state="visible")
    assert field.get_attribute("placeholder") == "tell the agent…"
    assert page.locator(".aimu-inbox").count() == 0  # no widget box besides it
    field.fill("Use metric units, please.")
    page.keyboard.press("Enter")
    wait_for_output(page, 1, "Sent: Use metric units, please.")
    (jupyter_lab.root / "release").touch()  # the tool returns; the model reads the message
    wait_for_output(page, 1, "Model read: Use metric units, please.")
    assert field.count() == 0

    save(page)
    saved = nbformat.read(jupyter_lab.root / "inbox.ipynb", as_version=4)
    outputs = saved.cells[1].outputs
    assert [o["output_type"] for o in outputs] == ["display_data"]  # the record, no empty slot
    record = outputs[0]["data"][RUN_MIME]
    assert record["inbox"] is None
    assert [e["type"] for e in record["events"]][:2] == ["tool", "user_message"]


def test_each_message_sent_to_the_run_is_acknowledged_as_itself(lab_page, jupyter_lab):
    page = lab_page
    agent = "%%agent --model m\nMeasure the room."
    waiting = WAITING_MODEL.replace('"release"', '"release-twice"')
    write_notebook(jupyter_lab, "inbox-twice.ipynb", [SETUP + waiting, agent])
    open_notebook(page, jupyter_lab, "inbox-twice.ipynb")
    run_all(page)

    field = cell(page, 1).locator(".aimu-RunRenderer input.aimu-inbox-input")
    status = cell(page, 1).locator(".aimu-RunRenderer .aimu-inbox-status")
    field.wait_for(state="visible")
    for message in ("Use metric units.", "And round to one decimal."):
        field.click()
        field.press_sequentially(message, delay=20)
        page.keyboard.press("Enter")
        assert message in status.inner_text()  # "Sending: …" at once, then "Sent: …"
        wait_for_output(page, 1, f"Sent: {message}")
    (jupyter_lab.root / "release-twice").touch()
    wait_for_output(page, 1, "Model read: And round to one decimal.")


def test_each_message_typed_into_the_widget_box_is_sent_whole(lab_page, jupyter_lab):
    """The ipywidgets box, as frontends without the extension draw it (the extension's claim
    is refused here): Enter right after the last key press still sends the whole text."""
    page = lab_page
    waiting = WAITING_MODEL.replace('"release"', '"release-box"')
    unclaimed = "import aimu_jupyter.view._inbox_field as fields\nfields.CLAIM_SECONDS = 0\n"
    agent = "%%agent --model m\nMeasure the room."
    write_notebook(jupyter_lab, "inbox-box.ipynb", [SETUP + waiting + unclaimed, agent])
    open_notebook(page, jupyter_lab, "inbox-box.ipynb")
    run_all(page)

    field = cell(page, 1).locator(".aimu-inbox input")
    field.wait_for(state="visible")
    messages = ("first", "second", "third message")
    for message in messages:
        field.click()
        field.press_sequentially(message, delay=20)
        page.keyboard.press("Enter")
        wait_for_output(page, 1, f"Sent: {message} (")
        assert field.input_value() == ""
    (jupyter_lab.root / "release-box").touch()
    wait_for_output(page, 1, "Model read: third message")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"
        " === 'idle'"
    )
    kinds = page.evaluate(
        """() => window.jupyterapp.shell.currentWidget.model.cells.get(1).sharedModel
             .outputs.map(o => (o.data || {})['application/vnd.aimu.run+json'])"""
    )
    record = next(r for r in kinds if r)
    told = [e["text"] for e in record["events"] if e["type"] == "user_message"]
    assert told == list(messages)
