"""Packaging of the JupyterLab extension: the Node.js check of the build hook, and the
installed extension as `jupyter labextension list` reports it."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_hook():
    spec = importlib.util.spec_from_file_location(
        "aimu_labextension_hatch_build", ROOT / "labextension" / "hatch_build.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = _load_hook()


def _fake_tool(directory: Path, name: str, output: str = "") -> None:
    script = directory / name
    script.write_text(f"#!/bin/sh\necho '{output}'\n")
    script.chmod(0o755)


def test_missing_node_and_npm_are_named_with_what_to_install(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(hook.NodeMissingError) as caught:
        hook.check_node()
    message = str(caught.value)
    assert message.startswith("`node` and `npm` not found on PATH.")
    assert "Node.js ^20.19 or >= 22.12 and npm" in message
    assert "https://nodejs.org" in message


def test_missing_npm_alone_is_named(tmp_path, monkeypatch) -> None:
    _fake_tool(tmp_path, "node", "v20.20.2")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(hook.NodeMissingError, match=r"^`npm` not found on PATH\."):
        hook.check_node()


def test_node_too_old_for_the_bundler_is_refused_with_its_version(tmp_path, monkeypatch) -> None:
    _fake_tool(tmp_path, "node", "v18.19.0")
    _fake_tool(tmp_path, "npm")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(hook.NodeMissingError, match=r"^Node\.js v18\.19\.0 cannot build it\."):
        hook.check_node()


@pytest.mark.parametrize(
    ("version", "usable"),
    [
        ("v20.19.0", True),
        ("v20.20.2", True),
        ("v22.12.0", True),
        ("v24.1.0", True),
        ("v20.18.3", False),
        ("v21.7.3", False),
        ("v22.11.0", False),
        ("v18.19.0", False),
        ("", False),
    ],
)
def test_node_versions_match_what_the_bundler_supports(version: str, usable: bool) -> None:
    assert hook.node_version_ok(version) is usable


def test_installed_extension_is_listed_enabled() -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "jupyterlab.labextensions", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    plain = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)
    assert re.search(r"aimu-jupyter v[\d.]+ enabled OK \(python, aimu-jupyter\)", plain), plain
