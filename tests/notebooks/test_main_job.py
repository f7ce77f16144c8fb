"""scripts/course.py: the headless run's report, its failure exit, and ``--lab``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import nbformat
import pytest
from course_run import NOTEBOOK_TIMEOUT, ROOT, course, executed, headless_env


@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
def test_report_shows_the_model_notice_each_prompt_and_which_models_ran():
    nb = executed("01_getting_started")
    text = course.report(nb.notebook)
    assert text.startswith("Model: local, the embedded SmolLM2-135M")
    assert "\n> Use the calculator: what is 1250 * 1.08 / 12?\n" in text
    assert re.search(r"^\[cell \d+\] local$", text, re.MULTILINE)
    assert "[tool get_current_date_and_time({})] done" in text
    assert text.rstrip().endswith("8 agent runs; models: local, scripted")


def test_the_job_ends_saying_how_to_run_it_on_a_real_model(tmp_path, capsys):
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]), path)
    assert course.main([str(path), "--timeout", "60"]) == 0
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert last == course.REAL_MODEL_HINT
    assert "AIMU_MODEL=openai:gpt-4o-mini bash scripts/run" in last


def test_the_jobs_output_holds_no_kernel_transport_warning(tmp_path):
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("6 * 7")]), path)
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "course.py"), str(path), "--timeout", "60"],
        env=headless_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout + done.stderr
    assert "Finished in" in printed
    assert "without encryption" not in printed and "WARNING" not in printed, printed


def test_a_failing_cell_is_reported_and_the_job_exits_non_zero(tmp_path, capsys):
    path = tmp_path / "broken.ipynb"
    cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("x / 0")]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    assert course.main([str(path), "--timeout", "60"]) == 1
    assert "ZeroDivisionError" in capsys.readouterr().err


def test_lab_mode_serves_the_course_folder(tmp_path):
    env = headless_env()
    for name in ("config", "data", "runtime"):
        (tmp_path / name).mkdir()
        env[f"JUPYTER_{name.upper()}_DIR"] = str(tmp_path / name)
    token = os.urandom(8).hex()
    lab = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "scripts" / "course.py"),
            "--lab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            "--ServerApp.port=0",
            f"--IdentityProvider.token={token}",
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found = threading.Event()
    url: list[str] = []
    log: list[str] = []

    def watch() -> None:
        assert lab.stderr is not None
        for line in lab.stderr:
            log.append(line)
            match = re.search(r"(http://127\.0\.0\.1:\d+)/lab", line)
            if match and not url:
                url.append(match.group(1))
                found.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        assert found.wait(90), "JupyterLab did not start:\n" + "".join(log)
        listing = _get_json(f"{url[0]}/api/contents?token={token}", log)
        names = {item["name"] for item in listing["content"]}
        assert {"01_getting_started.ipynb", "09_subagents.ipynb", "site", "data"} <= names
    finally:
        lab.terminate()
        lab.wait(timeout=30)


def _get_json(url: str, log: list[str]) -> dict:
    """GET ``url`` as JSON. jupyter_server logs its address before its event loop starts
    listening, so a refused connection is retried for a while; nothing else is."""
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as reply:
                return json.load(reply)
        except urllib.error.URLError as exc:
            refused = isinstance(exc.reason, ConnectionRefusedError)
            if not refused or time.monotonic() > deadline:
                pytest.fail(f"{url} did not answer ({exc}); the server's log:\n{''.join(log)}")
        time.sleep(0.2)
