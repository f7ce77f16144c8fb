"""The JupyterLab extension in a real JupyterLab, seen through headless Debian Chromium.

A notebook runs a ``%%agent`` cell with the scripted model and a streaming ``%tool``; the
output must be drawn by our renderer (not the Markdown fallback), tool cards must open by
keyboard, updates must reuse the nodes already drawn, and the run must follow the theme.
Screenshots land in test-results/.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_harness import RESULTS, open_notebook, run_all, write_notebook

EXTENSION = Path(sys.prefix, "share", "jupyter", "labextensions", "aimu-jupyter", "package.json")
RUN = ".aimu-RunRenderer .aimu-run"

SETUP_CELL = '''\
%load_ext aimu
import time
from aimu.models.providers.scripted import ScriptedClient, call, reply

def monthly_sales(month: str) -> str:
    """Read one month's sales total from the shop's ledger.

    Args:
        month: Month name, e.g. "March".
    """
    for page in (1, 2, 3):
        time.sleep(0.05)
        yield f"reading ledger page {page}/3"
    return f"{month}: 18,400 EUR (+18% on February)"

def send_report(to: str, body: str) -> str:
    """Email a short report.

    Args:
        to: Recipient address.
        body: The report text.
    """
    return "sent"

%tool monthly_sales
%tool --ask send_report
model = ScriptedClient(
    [
        reply(
            "I'll check the ledger first.",
            tool_calls=[
                call("monthly_sales", month="March"),
                call("send_report", to="boss@example.org", body="March grew fastest"),
            ],
        ),
        "**March** grew fastest: 18,400 EUR, up 18% on February.\\n\\n"
        "```python\\ngrowth = (18_400 - 15_600) / 15_600\\n```\\n\\n"
        + " ".join(f"word{i}" for i in range(60)),
    ],
    model="scripted-demo",
    delay=0.01,
)
'''

AGENT_CELL = """\
%%agent --model model --approve deny
Which month grew fastest? Check the ledger.
"""

# Records every agent-run renderer and tool card ever attached to the page, so a test can
# tell updates in place from redraws.
WATCH_NODES = """() => {
  window.__aimuSeen = { renderers: new Set(), cards: new Set() };
  new MutationObserver(records => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (!(node instanceof Element)) continue;
        for (const el of [node, ...node.querySelectorAll('*')]) {
          if (el.classList.contains('aimu-RunRenderer')) window.__aimuSeen.renderers.add(el);
          if (el.classList.contains('aimu-tool')) window.__aimuSeen.cards.add(el);
        }
      }
    }
  }).observe(document.body, { childList: true, subtree: true });
}"""


ERROR_OUTPUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'


@pytest.fixture(scope="module")
def page(jupyter_lab, chromium) -> Iterator[object]:
    """One page on which the notebook has run; the tests below read and poke at it in order."""
    if not EXTENSION.exists():
        pytest.fail(
            f"aimu-jupyter's lab extension is not installed ({EXTENSION} missing): "
            "install the project (`pip install -e .`, which builds it with npm) first"
        )
    write_notebook(jupyter_lab, "lab_extension_run.ipynb", [SETUP_CELL, AGENT_CELL])
    RESULTS.mkdir(exist_ok=True)
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    try:
        open_notebook(tab, jupyter_lab, "lab_extension_run.ipynb")
        tab.evaluate(WATCH_NODES)
        run_all(tab)
        tab.wait_for_selector(f'{RUN}[data-status="done"], {ERROR_OUTPUT}', timeout=90_000)
        errors = tab.locator(ERROR_OUTPUT).all_inner_texts()
        assert not errors, f"a notebook cell failed: {errors}"
        yield tab
    except BaseException:
        tab.screenshot(path=str(RESULTS / "labextension-failure.png"), full_page=True)
        raise
    finally:
        context.close()


def card(page, name: str):
    """The tool card of the call to ``name``."""
    return page.locator(
        f"{RUN} details.aimu-tool", has=page.locator(".aimu-tool-name", has_text=name)
    )


def test_agent_cell_is_drawn_by_the_extension_not_the_markdown_fallback(page) -> None:
    every = page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output")
    outputs = page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output.aimu-RunRenderer")
    # One output, drawn by our renderer: the bundle's text/markdown fallback is not shown,
    # and the run's "tell the agent…" field went with the run (no empty output is left).
    assert every.count() == outputs.count() == 1
    assert page.locator(".aimu-inbox-field, .aimu-inbox").count() == 0
    fallback = page.locator(".jp-Cell").nth(1).locator('[data-mime-type="text/markdown"]')
    assert fallback.count() == 0
    assert "aimu-RunRenderer" in outputs.first.get_attribute("class").split()
    run = page.locator(RUN)
    assert run.locator(".aimu-prompt").inner_text() == "Which month grew fastest? Check the ledger."
    cards = run.locator("details.aimu-tool")
    assert cards.locator(".aimu-tool-name").all_inner_texts() == ["monthly_sales", "send_report"]
    assert cards.locator(".aimu-badge").all_inner_texts() == ["done", "denied"]
    assert cards.first.locator(".aimu-tool-preview").inner_text() == 'month="March"'
    approval = card(page, "send_report").locator(".aimu-tool-approval")
    assert approval.text_content().startswith("Denied by policy")
    answer = run.locator(".aimu-text").last
    assert answer.locator("strong").inner_text() == "March"
    # The code block went through JupyterLab's Markdown renderer, which highlights it.
    assert answer.locator("pre code span").count() > 0
    footer = run.locator(".aimu-footer-text").inner_text()
    assert re.fullmatch(r"scripted:scripted-demo · \d+ in / \d+ out tokens · \d+\.\d s", footer)


def test_tool_card_opens_from_the_keyboard_and_shows_progress_and_result(page) -> None:
    sales = card(page, "monthly_sales")
    assert sales.get_attribute("open") is None, "tool cards start collapsed by default"
    sales.locator("summary.aimu-tool-summary").focus()
    page.keyboard.press("Enter")
    page.wait_for_function("el => el.open", arg=sales.element_handle())

    progress = sales.locator(".aimu-progress-list li").all_inner_texts()
    assert progress == [f"reading ledger page {n}/3" for n in (1, 2, 3)]
    assert sales.locator(".aimu-result-text").inner_text() == "March: 18,400 EUR (+18% on February)"
    assert sales.locator(".aimu-args-table tr").all_inner_texts() == ["month\tMarch"]

    card(page, "send_report").locator("summary.aimu-tool-summary").click()
    page.locator(".aimu-RunRenderer").screenshot(path=str(RESULTS / "labextension-run.png"))


def test_streamed_updates_reuse_the_renderer_and_card_instead_of_redrawing(page) -> None:
    seen = page.evaluate(
        "() => ({ renderers: window.__aimuSeen.renderers.size,"
        " cards: window.__aimuSeen.cards.size })"
    )
    assert seen == {"renderers": 1, "cards": 2}


def _set_theme(page, theme: str, light: bool) -> None:
    page.evaluate(
        "theme => window.jupyterapp.commands.execute('apputils:change-theme', { theme })", theme
    )
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{str(light).lower()}'")


def test_run_follows_the_dark_theme(page) -> None:
    sales = card(page, "monthly_sales")

    def brightness() -> int:
        css = sales.evaluate("el => getComputedStyle(el).backgroundColor")
        return sum(int(part) for part in re.findall(r"\d+", css)[:3])

    assert brightness() > 600, "light theme: light card"
    try:
        _set_theme(page, "JupyterLab Dark", light=False)
        page.wait_for_function(
            "el => getComputedStyle(el).backgroundColor.match(/\\d+/g).slice(0, 3)"
            ".map(Number).reduce((a, b) => a + b) < 200",
            arg=sales.element_handle(),
        )
        assert brightness() < 200
        page.locator(".aimu-RunRenderer").screenshot(
            path=str(RESULTS / "labextension-run-dark.png")
        )
    finally:
        # The theme is a user setting of the shared server: leave it as other tests expect.
        _set_theme(page, "JupyterLab Light", light=True)


def test_settings_schema_reaches_the_lab_with_its_defaults(page) -> None:
    properties = page.evaluate(
        """async () => (await window.jupyterapp.serviceManager.settings.fetch(
          'aimu-jupyter:plugin')).schema.properties"""
    )
    assert {name: spec["default"] for name, spec in properties.items()} == {
        "collapseToolCards": True,
        "showThinking": True,
    }
