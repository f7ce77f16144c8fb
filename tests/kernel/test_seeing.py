"""The in-kernel python tool sees what code displays, and the images reach the model."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "providers"))

from provider_wire import WireServer, anthropic_turn, openai_turn

PNG = b"\x89PNG\r\n\x1a\n"
PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('Sales')\nplt.show()"
PLOT_ARGS = json.dumps({"code": PLOT})


def tool_cards(record: dict) -> list[dict]:
    return [event for event in record["events"] if event["type"] == "tool"]


def inline_images(result) -> list[dict]:
    """Images the cell output shows outside the run record (an inline plot would be one)."""
    return [
        m
        for m in result.displays
        if "image/png" in m["content"]["data"] and len(m["content"]["data"]) <= 3
    ]


@pytest.fixture
def wire():
    with WireServer() as server:
        yield server


def test_a_plot_comes_back_as_a_png_in_the_result_and_the_saved_record(kernel):
    kernel.ok(f"m = ScriptedClient([call('python', code={PLOT!r}), 'A rising line.'])")
    result = kernel.ok("%%agent --model m --tools python --approve auto\nPlot it and look.")
    (card,) = tool_cards(result.record)
    assert card["arguments"]["code"] == PLOT
    (image,) = card["images"]
    assert image["mime_type"] == "image/png"
    assert base64.b64decode(image["data"]).startswith(PNG)
    assert "Sales" in image["description"]
    assert "[image 1: matplotlib figure: Sales (PNG," in card["result"]
    assert card["images_note"] == ""
    markdown = result.bundle["text/markdown"]
    assert f"data:image/png;base64,{image['data']}" in markdown
    assert not inline_images(result)
    sent = kernel.value("m.requests[1]['messages'][-1]['images'][0]['mime_type']")
    assert sent == "image/png"


def test_figures_left_open_are_captured_and_later_cells_still_plot_inline(kernel):
    code = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.bar(['a', 'b'], [2, 5])"
    kernel.ok(f"m = ScriptedClient([call('python', code={code!r}), 'Two bars.'])")
    result = kernel.ok("%%agent --model m --tools python --approve auto\nbars")
    (card,) = tool_cards(result.record)
    assert len(card["images"]) == 1
    assert kernel.value("plt.get_fignums()") == []
    assert "inline" in kernel.value("plt.get_backend()")
    after = kernel.ok("plt.plot([1, 2]);")
    assert any("image/png" in m["content"]["data"] for m in after.displays)


def test_with_pyplot_already_inline_the_plot_goes_to_the_card_not_the_cell(kernel):
    kernel.ok("import matplotlib.pyplot as plt\nplt.plot([0, 1]);")
    kernel.ok(f"m = ScriptedClient([call('python', code={PLOT!r}), 'Seen.'])")
    result = kernel.ok("%%agent --model m --tools python --approve auto\nplot")
    (card,) = tool_cards(result.record)
    assert len(card["images"]) == 1
    assert not inline_images(result)
    assert "inline" in kernel.value("plt.get_backend()")


def test_code_that_does_not_plot_never_imports_matplotlib(kernel):
    kernel.ok("m = ScriptedClient([call('python', code='x = 2 + 2'), 'ok'])")
    kernel.ok("%%agent --model m --tools python --approve auto\nadd")
    assert kernel.value("'matplotlib' in __import__('sys').modules") is False


def test_displayed_and_final_pil_images_come_back_as_images(kernel):
    kernel.ok(
        "from PIL import Image as PILImage\n"
        "red = PILImage.new('RGB', (20, 10), 'red')\n"
        "m = ScriptedClient([call('python', code='display(red)\\nprint(\"between\")\\nred'),"
        " 'Two red boxes.'])"
    )
    result = kernel.ok("%%agent --model m --tools python --approve auto\nshow red")
    (card,) = tool_cards(result.record)
    assert [image["mime_type"] for image in card["images"]] == ["image/png", "image/png"]
    lines = card["result"].splitlines()
    assert lines[0].startswith("[image 1: displayed image")
    assert lines[1] == "between"
    assert "shown as image 2" in card["result"]
    assert not inline_images(result)


def test_a_dataframe_comes_back_as_a_compact_table(kernel):
    kernel.ok(
        "import pandas as pd\n"
        "df = pd.DataFrame({'month': range(500), 'sales': range(500)})\n"
        "m = ScriptedClient([call('python', code='df'), 'ok'])"
    )
    result = kernel.ok("%%agent --model m --tools python --approve auto\nshow df")
    (card,) = tool_cards(result.record)
    assert "[500 rows x 2 columns]" in card["result"]
    assert len(card["result"].splitlines()) < 20


def plot_through(kernel, wire, client: str, first_turn, last_turn) -> tuple[dict, object]:
    """Run the plotting call on the model ``client`` (kernel code) served by ``wire``."""
    wire.script(first_turn, last_turn)
    kernel.ok(f"m = {client}")
    result = kernel.ok("%%agent --model m --tools python --approve auto\nPlot it.")
    (card,) = tool_cards(result.record)
    return card, result


def test_the_openai_fake_receives_the_plot_as_an_image_part(kernel, wire):
    card, _ = plot_through(
        kernel,
        wire,
        f"aimu.client('openai:gpt-4o@{wire.url}/v1')",
        openai_turn("", [("call_1", "python", PLOT_ARGS)]),
        openai_turn("A rising line."),
    )
    messages = wire.requests[1].json["messages"]
    assert messages[-2]["role"] == "tool" and "images" not in messages[-2]
    follow_up = messages[-1]
    assert follow_up["role"] == "user"
    (part,) = [p for p in follow_up["content"] if p["type"] == "image_url"]
    assert part["image_url"]["url"] == f"data:image/png;base64,{card['images'][0]['data']}"


def test_the_anthropic_fake_receives_the_plot_inside_the_tool_result(kernel, wire):
    card, _ = plot_through(
        kernel,
        wire,
        f"aimu.client('anthropic:claude-wire', base_url='{wire.url}')",
        anthropic_turn("", [("toolu_1", "python", PLOT_ARGS)]),
        anthropic_turn("A rising line."),
    )
    (tool_result,) = wire.requests[1].json["messages"][-1]["content"]
    assert tool_result["type"] == "tool_result"
    image = tool_result["content"][1]
    assert image["type"] == "image"
    assert image["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": card["images"][0]["data"],
    }


def test_a_text_only_model_gets_the_placeholder_and_the_card_says_it_did_not_see(kernel, wire):
    card, result = plot_through(
        kernel,
        wire,
        f"aimu.client('openai:gpt-3.5-turbo@{wire.url}/v1')",
        openai_turn("", [("call_1", "python", PLOT_ARGS)]),
        openai_turn("I read that a figure was drawn."),
    )
    assert len(card["images"]) == 1
    assert card["images_note"] == "The model did not see the images: it reads text only."
    assert "The model did not see the images" in result.bundle["text/markdown"]
    tool = wire.requests[1].json["messages"][-1]
    assert tool["role"] == "tool"
    assert "not shown, this model reads text only" in tool["content"]
    assert "image_url" not in wire.requests[1].body.decode()
