"""``list_cells``, ``edit_cell`` and ``run_cell`` in a real kernel, with a frontend that
speaks the extension's comm protocol (``aimu.notebook``), as the lab extension does.

The fake frontend opens the comm once the run's record is shown, answers the kernel's
requests from its own list of cells, and records every edit it was asked to apply.
"""

from __future__ import annotations

import uuid

from kernel_harness import RUN_MIME, Widgets
from test_approval import clicker

DIFF_MIME = "application/vnd.aimu.diff+json"


class FakeNotebook:
    """A notebook model on the frontend side: cells, and the bridge comm to the kernel."""

    def __init__(self, kernel, cells: list[dict]):
        self.kernel = kernel
        self.cells = cells
        self.comm_id: str | None = None
        self.edits: list[dict] = []
        self.outputs: dict[str, list] = {}

    def on_message(self, msg) -> None:
        content = msg["content"]
        if self.comm_id is None and RUN_MIME in content.get("data", {}):
            self.comm_id = uuid.uuid4().hex
            opening = {"comm_id": self.comm_id, "target_name": "aimu.notebook", "data": {}}
            self.kernel.client.shell_channel.send(
                self.kernel.client.session.msg("comm_open", opening)
            )
        if msg["msg_type"] == "comm_msg" and content["comm_id"] == self.comm_id:
            self.kernel.send_comm(self.comm_id, self.answer(content["data"]))

    def answer(self, request: dict) -> dict:
        reply = {"id": request["id"]}
        if request["op"] == "cells":
            cells = [{**cell, "index": i, "execution_count": None} for i, cell in
                     enumerate(self.cells)]  # fmt: skip
            return {**reply, "cells": cells}
        cell = next(c for c in self.cells if c["id"] == request["cell_id"])
        if request["op"] == "edit":
            self.edits.append(request)
            if cell["source"] != request["expect"]:
                return {**reply, "error": "the cell was changed after the diff was shown"}
            cell["source"] = request["source"]
        else:
            self.outputs[cell["id"]] = request["outputs"]
        return {**reply, "ok": True}


CELLS = [
    {"id": "c1", "cell_type": "markdown", "source": "# Sales"},
    {"id": "c2", "cell_type": "code", "source": "total = 40\nprint(total)"},
]
EDIT = "m = ScriptedClient([call('edit_cell', cell_id='c2', source='total = 41 + 1\\nprint(total)'), 'Edited.'])"  # noqa: E501


def both(*handlers):
    def on_message(msg):
        for handler in handlers:
            handler(msg)

    return on_message


def preview_outputs(widgets: Widgets) -> list[dict]:
    shown = [
        s for s in widgets.states.values() if "aimu-approval-preview" in s.get("_dom_classes", ())
    ]
    return [output["data"] for state in shown for output in state.get("outputs", ())]


def test_an_approved_edit_shows_a_diff_and_goes_through_the_frontends_model(kernel):
    notebook = FakeNotebook(kernel, [dict(c) for c in CELLS])
    widgets = Widgets()
    kernel.ok(EDIT)
    result = kernel.execute(
        "%%agent --model m --tools notebook\nFix the total.",
        on_message=both(notebook.on_message, clicker(kernel, widgets, ("approve",))),
    )
    assert result.status == "ok", result.error_lines
    (shown,) = preview_outputs(widgets)
    assert "-total = 40\n+total = 41 + 1\n" in shown[DIFF_MIME]["diff"]
    assert "```diff" in shown["text/markdown"]
    assert notebook.edits == [
        {"id": notebook.edits[0]["id"], "op": "edit", "cell_id": "c2",
         "source": "total = 41 + 1\nprint(total)", "expect": "total = 40\nprint(total)"}
    ]  # fmt: skip
    assert notebook.cells[1]["source"] == "total = 41 + 1\nprint(total)"
    card = result.record["events"][0]
    assert card["approval"]["by"] == "user" and card["status"] == "done"
    assert "now holds the new source" in card["result"]


def test_a_denied_edit_changes_nothing(kernel):
    notebook = FakeNotebook(kernel, [dict(c) for c in CELLS])
    widgets = Widgets()
    kernel.ok(EDIT)
    result = kernel.execute(
        "%%agent --model m --tools notebook\nFix the total.",
        on_message=both(notebook.on_message, clicker(kernel, widgets, ("deny", "not now"))),
    )
    assert result.status == "ok", result.error_lines
    assert notebook.edits == []
    assert notebook.cells[1]["source"] == CELLS[1]["source"]
    assert result.record["events"][0]["status"] == "denied"


def test_an_edit_made_meanwhile_is_not_overwritten(kernel):
    notebook = FakeNotebook(kernel, [dict(c) for c in CELLS])
    widgets = Widgets()
    clicks = clicker(kernel, widgets, ("approve",))

    def user_types_then_clicks(msg):
        if preview_outputs(widgets) and notebook.cells[1]["source"] == CELLS[1]["source"]:
            notebook.cells[1]["source"] = "total = 40  # mine\nprint(total)"
        clicks(msg)

    kernel.ok(EDIT)
    result = kernel.execute(
        "%%agent --model m --tools notebook\nFix the total.",
        on_message=both(notebook.on_message, widgets.see, user_types_then_clicks),
    )
    assert result.status == "ok", result.error_lines
    assert notebook.cells[1]["source"] == "total = 40  # mine\nprint(total)"
    card = result.record["events"][0]
    assert card["is_error"] and "changed after the diff was shown" in card["result"]


def test_run_cell_runs_the_cells_source_and_the_output_reaches_the_agent_and_the_cell(kernel):
    notebook = FakeNotebook(kernel, [dict(c) for c in CELLS])
    widgets = Widgets()
    kernel.ok(
        "m = ScriptedClient([call('run_cell', cell_id='c2'),"
        " lambda messages, tools: 'It printed ' + messages[-1]['content']])"
    )
    result = kernel.execute(
        "%%agent --model m --tools notebook\nRun the total.",
        on_message=both(notebook.on_message, clicker(kernel, widgets, ("approve",))),
    )
    assert result.status == "ok", result.error_lines
    assert result.record["events"][0]["result"] == "40"
    assert "It printed 40" in result.record["events"][-1]["text"]
    assert notebook.outputs["c2"] == [{"output_type": "stream", "name": "stdout", "text": "40\n"}]
    assert kernel.value("total") == 40
    assert "40" not in result.stdout  # the output went to its cell, not the agent's


def test_headless_the_cell_tools_say_they_cannot_edit(kernel):
    kernel.ok(EDIT.replace("'Edited.'", "call('list_cells'), 'Done.'"))
    result = kernel.ok(
        "%%agent --model m --tools notebook --approve auto\nFix the total.", allow_stdin=False
    )
    edit, listing = [e for e in result.record["events"] if e["type"] == "tool"]
    assert edit["is_error"] and "No frontend that can change the open notebook" in edit["result"]
    assert "No frontend" in listing["result"]
