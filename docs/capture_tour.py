"""Take the pictures in docs/: ``%%agent`` in a real JupyterLab.

- ``approval-python.png``: a multi-line ``python`` call waiting for approval, its code shown
  as code, after a streaming tool's card filled in;
- ``approval-write.png`` (also ``tour.png``): a ``write_file`` call waiting, its path in a
  small table and the file's text as a block;
- ``record.png``: the finished record, each call saying who approved it.

Run by hand: ``.venv/bin/python docs/capture_tour.py``.

It reuses the browser-test harness (tests/ui/lab_harness.py): a JupyterLab on 127.0.0.1 with
isolated settings, driven by Debian's headless Chromium. The agent is scripted, so the picture
is the same every time.
"""

from __future__ import annotations

import shutil
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

DOCS = ROOT / "docs"

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


%tool check_prices
m = ScriptedClient([
    reply("I'll compare the three shops first.",
          tool_calls=[call("check_prices", shops=["Harbour Café", "Bean There", "Mill Lane"])]),
    reply("Now the average, in Python.",
          tool_calls=[call("python", code=(
              "prices = {'Harbour Café': 3.10, 'Bean There': 3.40, 'Mill Lane': 2.90}\\n"
              "average = sum(prices.values()) / len(prices)\\n"
              "cheapest = min(prices, key=prices.get)\\n"
              "print(f'{cheapest}: {prices[cheapest]:.2f} EUR, average {average:.2f} EUR')"))]),
    reply("Mill Lane is cheapest at 2.90 EUR. Saving the report now.",
          tool_calls=[call("write_file", path="coffee.txt",
                           content="Cheapest cappuccino: Mill Lane, 2.90 EUR.\\n"
                                   "Average of the three shops: 3.13 EUR.\\n")]),
    "Saved **coffee.txt**: Mill Lane is the cheapest, 23 cents under the average.",
], delay=0.02)
'''

AGENT = (
    "%%agent --model m --tools python,fs\n"
    "Compare cappuccino prices at our three shops and save a short report."
)


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
                page = browser.new_page(viewport={"width": 1100, "height": 1400})
                page.set_default_timeout(120_000)
                open_notebook(page, lab, "tour.ipynb")
                page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
                run_all(page)
                for name in ("approval-python.png", "approval-write.png"):
                    approve = page.locator("button.aimu-approval-approve")
                    approve.wait_for(state="visible")
                    page.wait_for_timeout(500)  # let the output settle for the picture
                    cell(page, 1).screenshot(path=str(DOCS / name))
                    approve.click()
                    approve.wait_for(state="detached")
                cell(page, 1).get_by_text("23 cents under").first.wait_for()
                page.evaluate(
                    "() => document.querySelectorAll('.aimu-tool').forEach(d => d.open = true)"
                )
                cell(page, 1).scroll_into_view_if_needed()
                page.wait_for_timeout(500)
                cell(page, 1).screenshot(path=str(DOCS / "record.png"))
                browser.close()
        finally:
            stop_jupyter_lab(proc)
    shutil.copyfile(DOCS / "approval-write.png", DOCS / "tour.png")
    print("wrote docs/approval-python.png, docs/approval-write.png (= tour.png), docs/record.png")


if __name__ == "__main__":
    main()
