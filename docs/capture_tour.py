"""Take docs/tour.png: ``%%agent`` in a real JupyterLab, a tool card filled in by a streaming
tool, and the next call waiting for approval.

Run by hand: ``.venv/bin/python docs/capture_tour.py``.

It reuses the browser-test harness (tests/ui/lab_harness.py): a JupyterLab on 127.0.0.1 with
isolated settings, driven by Debian's headless Chromium. The agent is scripted, so the picture
is the same every time.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from lab_harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    cell,
    open_notebook,
    run_all,
    start_jupyter_lab,
    stop_jupyter_lab,
    write_notebook,
)

OUTPUT = ROOT / "docs" / "tour.png"

SETUP = '''\
%load_ext aimu
import time
from aimu.models.providers.scripted import ScriptedClient, call, reply


def check_prices(shops: list[str]):
    """Look up today's price of a cappuccino at each shop, in euros.

    Args:
        shops: The shops' names.
    """
    prices = {"Harbour Café": 3.10, "Bean There": 3.40, "Mill Lane": 2.90}
    for shop in shops:
        time.sleep(0.4)
        yield f"checked {shop}"
    return "\\n".join(f"{shop}: {prices.get(shop, 3.0):.2f} EUR" for shop in shops)


def save_report(path: str, text: str) -> str:
    """Save a short report as a text file.

    Args:
        path: File to write.
        text: The report.
    """
    return f"saved {len(text)} characters to {path}"


%tool check_prices
%tool --ask save_report
m = ScriptedClient([
    reply("I'll compare the three shops first.",
          tool_calls=[call("check_prices", shops=["Harbour Café", "Bean There", "Mill Lane"])]),
    reply("Mill Lane is cheapest at 2.90 EUR. Saving the report now.",
          tool_calls=[call("save_report", path="coffee.txt",
                           text="Cheapest cappuccino: Mill Lane, 2.90 EUR.")]),
    "Saved **coffee.txt**.",
], delay=0.02)
'''

AGENT = "%%agent --model m\nCompare cappuccino prices at our three shops and save a short report."


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        proc, lab = start_jupyter_lab(Path(tmp))
        try:
            write_notebook(lab, "tour.ipynb", [SETUP, AGENT])
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport={"width": 1100, "height": 760})
                page.set_default_timeout(120_000)
                open_notebook(page, lab, "tour.ipynb")
                page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
                run_all(page)
                approve = page.locator("button.aimu-approval-approve")
                approve.wait_for(state="visible")
                cell(page, 1).scroll_into_view_if_needed()
                page.wait_for_timeout(500)
                page.locator(".jp-NotebookPanel").screenshot(path=str(OUTPUT))
                approve.click()
                page.locator(".jp-Notebook").get_by_text("Saved").first.wait_for()
                browser.close()
        finally:
            stop_jupyter_lab(proc)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
