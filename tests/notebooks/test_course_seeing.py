"""Course notebook 10 runs headless and offline, and shows seeing a plot, leaving code and
replaying answers from the response cache."""

from __future__ import annotations

import base64

import pytest
from course_run import (
    NOTEBOOK_TIMEOUT,
    assert_model_run,
    executed,
    specs_of,
    tool_cards,
)

from aimu_jupyter.kernel_tools._new_cells import MIME_TYPE as CELLS_MIME
from aimu_jupyter.run._toolbox import as_tool, make_kernel_python_tool

pytestmark = pytest.mark.timeout(NOTEBOOK_TIMEOUT)

NAME = "10_seeing_and_leaving"


def proposed_cells(nb, tag: str) -> list[dict]:
    outputs = nb.cell(tag).outputs
    return [
        cell
        for o in outputs
        if CELLS_MIME in o.get("data", {})
        for cell in o["data"][CELLS_MIME]["cells"]
    ]


def python_part_of(nb, tag: str) -> dict:
    """What a cell defines, its magic lines left out, run here in the test process."""
    source = "\n".join(
        line for line in nb.cell(tag).source.splitlines() if not line.startswith("%")
    )
    from aimu.models.providers.scripted import ScriptedClient, call

    namespace: dict = {"ScriptedClient": ScriptedClient, "call": call}
    exec(compile(source, f"<{nb.name}[{tag}]>", "exec"), namespace)
    return namespace


def test_the_plot_comes_back_to_the_card_and_to_the_model():
    nb = executed(NAME)
    (card,) = tool_cards(nb.record("plot"))
    assert card["name"] == "python" and card["status"] == "done"
    (image,) = card["images"]
    assert image["mime_type"] == "image/png"
    assert base64.b64decode(image["data"]).startswith(b"\x89PNG")
    assert "Revenue growth" in image["description"]
    assert card["images_note"] == ""
    assert not [o for o in nb.cell("plot").outputs if "image/png" in o.get("data", {})]
    assert nb.value("model-saw") == [
        ("image/png", "image 1: matplotlib figure: Revenue growth, % on the month before")
    ]


def test_export_writes_the_plotting_code_as_a_cell_that_recreates_the_variable():
    nb = executed(NAME)
    (cell,) = proposed_cells(nb, "export")
    assert cell["cell_type"] == "code"
    assert cell["source"].startswith("# From the agent run 'Plot the monthly revenue growth")
    assert "fastest = sales.loc[growth.idxmax(), 'month']" in cell["source"]
    import matplotlib

    matplotlib.use("agg")
    namespace = {}
    exec(nb.cell("data").source, namespace)
    exec(cell["source"], namespace)
    assert namespace["fastest"] == "Apr"


def test_a_tool_returning_an_image_shows_it():
    nb = executed(NAME)
    (card,) = tool_cards(nb.record("own-image-run"))
    assert card["name"] == "revenue_chart" and card["status"] == "done"
    assert card["images"][0]["description"] == "monthly revenue, bar chart"


def test_agent_fix_reads_the_failure_and_proposes_the_corrected_cell():
    nb = executed(NAME)
    assert nb.stdout("fails") == "The cell failed: KeyError: 'Revenue'\n"
    record = nb.record("fix")
    assert "KeyError: 'Revenue'" in record["prompt"]
    assert 'sales["Revenue"].sum()' in record["prompt"]
    looked, added = tool_cards(record)
    assert looked["result"] == "Result: ['month', 'revenue']"
    assert added["name"] == "add_cell" and added["status"] == "done"
    assert proposed_cells(nb, "fix") == [{"cell_type": "code", "source": 'sales["revenue"].sum()'}]
    assert not [o for o in nb.cell("fix").outputs if o["output_type"] == "execute_result"]


def test_the_same_cell_again_is_replayed_from_the_cache_and_says_so():
    nb = executed(NAME)
    first, again = nb.record("cache-first"), nb.record("cache-again")
    assert "replayed" not in first
    assert again["events"] == first["events"]
    assert [turn["iteration"] for turn in again["replayed"]["turns"]] == [1]
    assert again["replayed"]["note"].startswith("replayed (answered ")
    assert "replayed (answered " in nb.cell("cache-again").outputs[-1]["data"]["text/plain"]
    assert nb.stdout("cache-requests").startswith("1 request reached the model")


def test_the_cache_shows_its_hits_and_fresh_asks_the_model_again():
    nb = executed(NAME)
    fresh = nb.record("cache-fresh")
    assert "replayed" not in fresh
    assert fresh["events"][0]["text"].startswith("Revenue grew from 12,000")
    shown = nb.stdout("cache-info")
    assert shown.startswith("Response cache: ") and "answers.sqlite" in shown
    assert "1 answer," in shown and "1 hit" in shown


def test_the_offline_model_run_finishes_and_any_image_is_marked_unseen():
    nb = executed(NAME)
    python = make_kernel_python_tool({}, [])
    chart = python_part_of(nb, "own-image")["revenue_chart"]
    record = nb.record("model-call")
    assert_model_run(record, specs_of([python, as_tool(chart, "revenue_chart")]))
    unseen = "The model did not see the images: it reads text only."
    for card in tool_cards(record):
        assert card["images_note"] == (unseen if card["images"] else ""), card
