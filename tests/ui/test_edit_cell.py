"""In a real JupyterLab: ``edit_cell`` asks with a diff; Approve changes the cell through the
notebook's model (a second view of the same notebook sees it at once), Deny changes nothing.

Real-time collaboration (jupyter-collaboration) is not installed here, so the second "tab" is
a second view of the notebook in the same Lab (File > New View for Notebook,
``docmanager:clone``): both views share one model, the one the edit goes through. The file on
disk is not written: the change is an unsaved edit until the user saves.
"""

from __future__ import annotations

import nbformat
from lab_harness import open_notebook, run_all, write_notebook

OLD = "total = 40\nprint(total)"
NEW = "total = 41 + 1\nprint(total)"

SOURCES = """() => window.jupyterapp.shell.currentWidget.content.widgets.map(
  cell => cell.model.sharedModel.getSource())"""

VIEWS = """name => Array.from(window.jupyterapp.shell.widgets('main'))
  .filter(w => w.context && w.context.path === name)
  .map(w => w.content.widgets[1].node.querySelector('.jp-InputArea-editor').textContent)"""


def setup(lab, page, name: str) -> str:
    path = write_notebook(lab, name, ["%load_ext aimu", OLD, "AGENT"])
    notebook = nbformat.read(path, as_version=4)
    target = notebook.cells[1].id
    notebook.cells[0].source = (
        "%load_ext aimu\n"
        "from aimu.models.providers.scripted import ScriptedClient, call\n"
        f"m = ScriptedClient([call('edit_cell', cell_id={target!r}, source={NEW!r}), 'Edited.'])"
    )
    notebook.cells[2].source = "%%agent --model m --tools notebook\nMake the total 42."
    nbformat.write(notebook, path)
    open_notebook(page, lab, name)
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:clone')")
    page.wait_for_function(f"name => ({VIEWS})(name).length === 2", arg=name)
    return target


def run_until_the_diff_shows(page):
    run_all(page)
    diff = page.locator(".aimu-approval .aimu-DiffRenderer").first
    diff.wait_for()
    assert diff.locator(".aimu-diff-del").all_inner_texts() == ["-total = 40\n"]
    assert diff.locator(".aimu-diff-add").all_inner_texts() == ["+total = 41 + 1\n"]
    assert "Edit cell 2" in diff.locator(".aimu-diff-title").inner_text()
    return diff


def test_approve_changes_the_cell_in_both_views_of_the_open_notebook(jupyter_lab, lab_page):
    page = lab_page
    setup(jupyter_lab, page, "edit_approve.ipynb")
    run_until_the_diff_shows(page)
    page.locator(".aimu-approval-approve").first.click()
    page.locator(".aimu-tool[data-status='done']").first.wait_for()
    assert page.evaluate(SOURCES)[1] == NEW
    page.wait_for_function(
        f"name => ({VIEWS})(name).every(text => text.includes('41 + 1'))",
        arg="edit_approve.ipynb",
        timeout=20_000,
    )
    on_disk = nbformat.read(jupyter_lab.root / "edit_approve.ipynb", as_version=4)
    assert on_disk.cells[1].source == OLD  # an unsaved edit of the open notebook


def test_deny_leaves_the_cell_as_it_was(jupyter_lab, lab_page):
    page = lab_page
    setup(jupyter_lab, page, "edit_deny.ipynb")
    run_until_the_diff_shows(page)
    page.locator(".aimu-approval-deny").first.click()
    page.locator(".aimu-tool[data-status='denied']").first.wait_for()
    assert page.evaluate(SOURCES)[1] == OLD
    assert all("41 + 1" not in text for text in page.evaluate(VIEWS, "edit_deny.ipynb"))
