"""A fresh virtualenv built only from binder/'s files runs notebook 1, as mybinder.org would.

The environment is made the way repo2docker makes it: ``pip install -r
binder/requirements.txt`` from the repository's root, then ``binder/postBuild``, with the
environment's ``bin`` first on ``PATH``. Then the main job runs notebook 1 with that
environment's Python, offline. The first run compiles llama-cpp-python; pip's wheel cache
makes later runs on the same machine take a few minutes. ``HOME`` is a temporary directory
(nothing of the user's configuration leaks in), but pip keeps using the user's own cache, so
a fresh machine that just ran ``scripts/setup`` does not compile llama-cpp-python twice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from course_run import ROOT, headless_env

BINDER = ROOT / "binder"
#: Creating the environment includes compiling llama-cpp-python when no wheel is cached.
BUILD_TIMEOUT = 2400


@pytest.mark.timeout(BUILD_TIMEOUT + 900)
def test_fresh_virtualenv_from_binder_files_runs_notebook_1_offline(tmp_path):
    venv = tmp_path / "binder-env"
    try:
        _build_and_run(tmp_path, venv)
    finally:
        shutil.rmtree(venv, ignore_errors=True)  # a few GB: torch, llama.cpp, JupyterLab


def user_pip_cache() -> str | None:
    """The invoking user's pip cache directory (``None`` when pip's cache is off)."""
    if os.environ.get("PIP_CACHE_DIR"):
        return os.environ["PIP_CACHE_DIR"]
    found = subprocess.run(
        [sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True
    )
    return found.stdout.strip() or None if found.returncode == 0 else None


def _build_and_run(tmp_path, venv):
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = headless_env()
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    cache = user_pip_cache()
    env["HOME"] = str(tmp_path / "home")
    if cache is not None:
        env["PIP_CACHE_DIR"] = cache
    env.pop("PYTHONPATH", None)

    pip = [str(python), "-m", "pip", "install", "--quiet"]
    # A current pip, as a Binder image has: it also finds the wheel an earlier build cached.
    subprocess.run([*pip, "--upgrade", "pip"], env=env, check=True, timeout=300)
    install = subprocess.run(
        [*pip, "-r", str(BINDER / "requirements.txt")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    assert install.returncode == 0, install.stderr[-4000:]
    post_build = subprocess.run(
        ["bash", str(BINDER / "postBuild")], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert post_build.returncode == 0, post_build.stdout + post_build.stderr
    assert "the course is ready" in post_build.stdout

    where = subprocess.run(
        [str(python), "-c", "import aimu, aimu_jupyter; print(aimu.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(venv)), "aimu must come from the new environment"

    job = subprocess.run(
        [str(python), str(ROOT / "scripts" / "course.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert "Model: local, the embedded SmolLM2-135M" in job.stdout
    assert "8 agent runs; models: local, scripted" in job.stdout
    assert "[tool get_current_date_and_time({})] done" in job.stdout
