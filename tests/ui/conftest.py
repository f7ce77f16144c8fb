"""Browser-test fixtures: a real JupyterLab on 127.0.0.1 and headless Debian Chromium.

- ``jupyter_lab``: a JupyterLab server (session-wide) on an ephemeral port with token auth,
  a temporary root directory, and isolated config, data, runtime and IPython directories;
  news and update checks are off and ``window.jupyterapp`` is exposed for tests.
- ``chromium``: Playwright driving the system's Chromium headless (session-wide), the first
  of ``chromium``, ``chromium-browser``, ``google-chrome`` on PATH, flags in
  ``lab_harness.CHROMIUM_ARGS``. With none installed the browser tests are skipped, saying so.
- ``lab_page``: a fresh browser page per test; when the test fails, a full-page screenshot is
  saved as ``test-results/<test name>.png``.

Helpers to write, open, run and save notebooks live in ``lab_harness`` (import them from
there: ``from lab_harness import open_notebook``). Nothing is downloaded: no
``playwright install``; the browser is Debian's.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator

import pytest
from lab_harness import (  # re-exported for tests that import them from conftest
    CHROMIUM,
    CHROMIUM_ARGS,
    RESULTS,
    JupyterLab,
    cell,
    open_notebook,
    run_all,
    save,
    start_jupyter_lab,
    stop_jupyter_lab,
    write_notebook,
)

__all__ = ["RESULTS", "cell", "open_notebook", "run_all", "save", "write_notebook"]


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    """A running JupyterLab, stopped at the end of the session."""
    proc, lab = start_jupyter_lab(tmp_path_factory.mktemp("jupyterlab"))
    try:
        yield lab
    finally:
        stop_jupyter_lab(proc)


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """Headless system Chromium under Playwright."""
    executable = find_chromium()
    if executable is None:
        pytest.skip(
            "the browser tests need Chromium on PATH (chromium, chromium-browser or "
            "google-chrome); install it with: sudo apt-get install chromium"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


def find_chromium() -> str | None:
    """The system Chromium: Debian's path first, then the usual names on PATH."""
    if CHROMIUM.exists():
        return str(CHROMIUM)
    names = ("chromium", "chromium-browser", "google-chrome")
    return next((path for name in names if (path := shutil.which(name))), None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Keep each phase's report on the test item, so fixtures can see a failure."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture
def lab_page(chromium, request: pytest.FixtureRequest) -> Iterator[object]:
    """A new page (own browser context) for one test; screenshot under test-results/ on
    failure."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        yield page
    finally:
        report = getattr(request.node, "report_call", None)
        if report is None or report.failed:
            RESULTS.mkdir(exist_ok=True)
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid.split("::")[-1])
            try:
                page.screenshot(path=str(RESULTS / f"{name}.png"), full_page=True)
            except Exception as exc:  # a crashed page must not hide the test's own failure
                print(f"screenshot failed: {exc}", file=sys.stderr)
        context.close()
