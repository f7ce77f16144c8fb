"""Reading the note file a server process writes from ``wait_noting_cancel``."""

from __future__ import annotations

import time
from pathlib import Path


def wait_for_text(path: Path, text: str, limit: float) -> float:
    """Seconds until the file ``path`` (written by a server process) says ``text``."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if path.exists() and path.read_text() == text:
            return time.monotonic() - started
        time.sleep(0.01)
    raise AssertionError(f"{path.name} never said {text!r}")
