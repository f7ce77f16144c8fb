"""In a real JupyterLab: a python tool card's "Insert as cell below" and %agent_export add
cells below the agent's cell, unexecuted, and the card shows the plot the tool captured."""

from __future__ import annotations

from lab_harness import open_notebook, run_all, write_notebook

CODE = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\nanswer = 42"

SETUP_CELL = f"""\
%load_ext aimu
from aimu.models.providers.scripted import ScriptedClient, call
m = ScriptedClient([call('python', code={CODE!r}), 'Plotted; answer is set.'])
"""
AGENT_CELL = "%%agent --model m --tools python --approve auto\nPlot it and set answer."
EXPORT_CELL = "%agent_export"

CELLS = """() => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  return notebook.widgets.map(cell => ({
    source: cell.model.sharedModel.getSource(),
    type: cell.model.type,
    count: cell.model.type === 'code' ? cell.model.executionCount : null
  }));
}"""


def test_insert_as_cell_below_and_export_add_unexecuted_cells(jupyter_lab, lab_page):
    page = lab_page
    write_notebook(jupyter_lab, "insert_cell.ipynb", [SETUP_CELL, AGENT_CELL, EXPORT_CELL])
    open_notebook(page, jupyter_lab, "insert_cell.ipynb")
    run_all(page)

    card = page.locator(".aimu-tool[data-status='done']")
    card.wait_for()
    page.locator(".aimu-cells-note", has_text="Exported 1 cell below (not run).").wait_for()
    page.wait_for_function(f"() => ({CELLS})().length === 4")
    exported = page.evaluate(CELLS)[3]
    assert exported["source"].endswith(CODE + "\n")
    assert exported["source"].startswith("# From the agent run 'Plot it and set answer.'")
    assert exported["count"] is None

    card.locator("summary.aimu-tool-summary").click()
    assert card.locator("img.aimu-tool-image").count() == 1
    assert card.locator("img.aimu-tool-image").evaluate("img => img.naturalWidth") > 100
    button = card.get_by_role("button", name="Insert as cell below")
    button.click()
    page.wait_for_function(f"() => ({CELLS})().length === 5")
    cells = page.evaluate(CELLS)
    assert [c["source"] for c in cells[1:4]] == [AGENT_CELL, CODE, EXPORT_CELL]
    assert cells[2]["type"] == "code" and cells[2]["count"] is None
    assert card.locator(".aimu-insert-status").inner_text() == "Inserted below the agent cell."
