"""The README's library example, run as written on the default (embedded) model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def library_example() -> str:
    """The first Python block under the README's "The library" heading."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## The library") :]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


@pytest.mark.timeout(300)
def test_the_flagship_example_counts_the_letters_right_on_the_embedded_model():
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIMU_")}
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", library_example()],
        capture_output=True,
        text=True,
        env=env,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert "3" in lines[0], lines[0]  # strawberry has three r's
    assert "'letter': 'r', 'word': 'raspberry'" in done.stdout
    answer = "".join(line.removeprefix("text ") for line in lines if line.startswith("text "))
    assert "3" in answer  # and so has raspberry
