"""Fixtures for the built-in tool tests: reading the process table (Linux /proc)."""

import os
import select
from pathlib import Path

import pytest


def _stat_fields(pid: int | str) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    """True while ``pid`` is a running process; a zombie has already died."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


@pytest.fixture
def process_dies():
    """``process_dies(pid, within=5.0) -> bool``: True once ``pid`` has ended (a zombie
    counts), False if it is still running after ``within`` seconds. A SIGKILL is delivered
    asynchronously, so the test waits for the death itself (a pidfd turning readable)."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads the process table from /proc (Linux)")

    def dies(pid: int, within: float = 5.0) -> bool:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return True
        try:
            select.select([fd], [], [], within)
        finally:
            os.close(fd)
        return not _alive(pid)

    return dies


@pytest.fixture
def own_children():
    """``own_children() -> set[int]``: running processes whose parent is this test process."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads the process table from /proc (Linux)")
    me = str(os.getpid())

    def children() -> set[int]:
        found = set()
        for entry in Path("/proc").iterdir():
            fields = _stat_fields(entry.name) if entry.name.isdigit() else None
            if fields and fields[1] == me and fields[0] not in ("Z", "X"):
                found.add(int(entry.name))
        return found

    return children
