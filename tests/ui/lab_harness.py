"""Helpers for browser tests: start JupyterLab, write and open notebooks, run them.

Imported by tests/ui/conftest.py (the fixtures) and by test modules. A module of its own
(not conftest) so that ``from lab_harness import ...`` cannot pick up another directory's
conftest when the whole suite is collected together.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

CHROMIUM = Path("/usr/bin/chromium")
RESULTS = Path(__file__).resolve().parents[2] / "test-results"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
#: The lab extension built from this tree (``npm run build:prod`` in labextension/).
BUILT_EXTENSION = Path(__file__).resolve().parents[2] / "aimu_jupyter" / "labextension"


@dataclass
class JupyterLab:
    """A running JupyterLab server."""

    url: str
    token: str
    root: Path
    log: list[str] = field(default_factory=list)

    def tree_url(self, path: str) -> str:
        """The URL that opens ``path`` (relative to the root) in a fresh Lab workspace, so
        tabs left open by an earlier page are not restored."""
        workspace = uuid.uuid4().hex
        return f"{self.url}/lab/workspaces/{workspace}/tree/{path}?reset&token={self.token}"


def _isolated_dirs(tmp: Path) -> dict[str, Path]:
    dirs = {
        "root": tmp / "notebooks",
        "config": tmp / "config",
        "data": tmp / "data",
        "runtime": tmp / "runtime",
        "settings": tmp / "settings",
        "workspaces": tmp / "workspaces",
        "ipython": tmp / "ipython",
        "path": tmp / "jupyter-path",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    if (BUILT_EXTENSION / "package.json").exists():  # the tree's own build, ahead of any other
        (dirs["path"] / "labextensions").mkdir()
        (dirs["path"] / "labextensions" / "aimu-jupyter").symlink_to(BUILT_EXTENSION)
    notifications = dirs["settings"] / "@jupyterlab" / "apputils-extension"
    notifications.mkdir(parents=True)
    (notifications / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    (dirs["config"] / "jupyter_lab_config.json").write_text(
        json.dumps(
            {
                "LabApp": {
                    "news_url": None,
                    "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
                    "expose_app_in_browser": True,
                }
            }
        )
    )
    return dirs


def start_jupyter_lab(tmp: Path, app: str = "jupyterlab") -> tuple[subprocess.Popen, JupyterLab]:
    """Start JupyterLab (``app="notebook"``: Notebook 7) on 127.0.0.1 (port chosen by the OS)
    with token auth, rooted in a fresh directory under ``tmp``; fails the test if it does not
    come up in 90 s."""
    dirs = _isolated_dirs(tmp)
    token = os.urandom(16).hex()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIMU_", "JUPYTER"))}
    env.update(
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        IPYTHONDIR=str(dirs["ipython"]),
        JUPYTER_PATH=str(dirs["path"]),
        PYTHONUNBUFFERED="1",
    )
    command = [
        sys.executable,
        "-m",
        app,
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port=0",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={dirs['root']}",
    ]
    settings_app = "LabApp" if app == "jupyterlab" else "JupyterNotebookApp"
    command += [
        f"--{settings_app}.user_settings_dir={dirs['settings']}",
        f"--{settings_app}.workspaces_dir={dirs['workspaces']}",
    ]
    if app != "jupyterlab":
        command.append("--JupyterNotebookApp.expose_app_in_browser=True")
    proc = subprocess.Popen(
        command,
        cwd=dirs["root"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    log: list[str] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    address = re.compile(r"(http://127\.0\.0\.1:\d+)/(lab|tree)")
    while True:
        try:
            line = lines.get(timeout=90)
        except queue.Empty:
            line = None
        if line is None:
            stop_jupyter_lab(proc)
            pytest.fail("JupyterLab did not start:\n" + "".join(log[-40:]))
        found = address.search(line)
        if found:
            lab = JupyterLab(url=found.group(1), token=token, root=dirs["root"], log=log)
            _wait_until_serving(proc, lab)
            return proc, lab


def _wait_until_serving(proc: subprocess.Popen, lab: JupyterLab) -> None:
    """The URL is logged before the port accepts connections: wait for ``/api/status``."""
    status = f"{lab.url}/api/status?token={lab.token}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(status, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    stop_jupyter_lab(proc)
    pytest.fail("JupyterLab logged its URL but never answered /api/status")


def stop_jupyter_lab(proc: subprocess.Popen) -> None:
    """Stop the server, killing it if it does not exit within 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def write_notebook(lab: JupyterLab, name: str, cells: list[str]) -> Path:
    """Write a notebook of code ``cells`` into the server's root; return its path."""
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in cells],
        metadata={"kernelspec": KERNELSPEC},
    )
    path = lab.root / name
    nbformat.write(notebook, path)
    return path


def open_notebook(page, lab: JupyterLab, name: str, *, wait_for_kernel: bool = True) -> None:
    """Open ``name`` in JupyterLab and wait until its cells (and kernel) are ready."""
    page.goto(lab.tree_url(name))
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    page.wait_for_function(
        """name => {
          const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
          return !!widget && !!widget.context && widget.context.path === name;
        }""",
        arg=name,
    )
    if wait_for_kernel:
        page.evaluate(
            """async () => {
              const panel = window.jupyterapp.shell.currentWidget;
              await panel.sessionContext.ready;
              const kernel = panel.sessionContext.session.kernel;
              await kernel.info;
            }"""
        )


def run_all(page) -> None:
    """Start running every cell of the open notebook; returns without waiting for them."""
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def save(page) -> None:
    """Save the open notebook and wait until the save completes."""
    page.evaluate(
        """async () => {
          const panel = window.jupyterapp.shell.currentWidget;
          await panel.context.save();
        }"""
    )


def cell(page, index: int):
    """The ``index``-th cell of the open notebook."""
    return page.locator(".jp-Notebook .jp-Cell").nth(index)
