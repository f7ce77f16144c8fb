"""The fs tools at the edges: special files, hard links, killed writers, huge lines."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import tracemalloc

import pytest

from aimu.tools.builtin import edit_file, read_file, write_file


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _in_a_thread(fn, *args) -> str:
    """Run ``fn`` in a thread and give it 5 s: a call that blocks fails the test, not the run."""
    out: list[str] = []
    worker = threading.Thread(target=lambda: out.append(fn(*args)), daemon=True)
    worker.start()
    worker.join(5)
    assert out, f"{fn.__name__} blocked on {args[0]}"
    return out[0]


def test_read_file_on_a_fifo_answers_at_once_with_an_error(fifo):
    out = _in_a_thread(read_file, str(fifo))
    assert out.startswith("Error:") and "FIFO" in out and "not a regular file" in out


@pytest.mark.parametrize("tool", [write_file, edit_file], ids=["write_file", "edit_file"])
def test_writers_refuse_a_fifo_and_leave_it_a_fifo(fifo, tool):
    args = (str(fifo), "x") if tool is write_file else (str(fifo), "a", "b")
    out = _in_a_thread(tool, *args)
    assert out.startswith("Error:") and "FIFO" in out and "nothing was written" in out
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.fixture
def device(tmp_path):
    """A character device node of the test's own (a null device made with mknod as root),
    so a writer that wrongly replaces it can never damage the system's /dev/null."""
    if os.geteuid() != 0:
        return "/dev/null"  # /dev is not writable without root: nothing can replace it
    path = tmp_path / "null-device"
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return str(path)


@pytest.mark.parametrize("tool", [write_file, edit_file], ids=["write_file", "edit_file"])
def test_writers_refuse_a_device_node_even_through_a_symlink(tmp_path, device, tool):
    link = tmp_path / "looks-like-a-file.txt"
    link.symlink_to(device)
    for target in (device, str(link)):
        args = (target, "x") if tool is write_file else (target, "a", "b")
        out = _in_a_thread(tool, *args)
        assert out.startswith("Error:") and "character device" in out, out
        assert stat.S_ISCHR(os.stat(device).st_mode)
    assert read_file(device).startswith("Error:")


def test_write_file_refuses_a_directory_behind_a_symlink(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "alias").symlink_to("dir")
    out = write_file(str(tmp_path / "alias"), "x")
    assert out.startswith("Error:") and "directory" in out
    assert (tmp_path / "dir").is_dir()


@pytest.mark.parametrize("tool", [write_file, edit_file], ids=["write_file", "edit_file"])
def test_a_hard_linked_file_changes_under_every_name(tmp_path, tool):
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("alpha beta gamma\n")
    first.chmod(0o640)
    os.link(first, second)
    args = (
        (str(first), "alpha BETA gamma\n") if tool is write_file else (str(first), "beta", "BETA")
    )
    out = tool(*args)
    assert not out.startswith("Error:"), out
    assert second.read_text() == first.read_text() == "alpha BETA gamma\n"
    assert os.stat(first).st_ino == os.stat(second).st_ino
    assert os.stat(first).st_nlink == 2
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o640


def test_a_shorter_in_place_write_leaves_no_old_tail(tmp_path):
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("a long original line of text\n")
    os.link(first, second)
    write_file(str(first), "short\n")
    assert second.read_text() == "short\n"


_KILLED_WRITER = """
import os, signal, sys
from aimu.tools.builtin import _files, edit_file, write_file
def die(fd):
    os.kill(os.getpid(), signal.SIGKILL)
_files.os.fsync = die
path, tool = sys.argv[1], sys.argv[2]
if tool == "write_file":
    write_file(path, "half-written replacement " * 1000)
else:
    edit_file(path, "original", "half-written")
"""


@pytest.mark.parametrize("tool", [write_file, edit_file], ids=["write_file", "edit_file"])
def test_a_writer_killed_mid_write_leaves_nothing_stale_after_the_next_call(tmp_path, tool):
    path = tmp_path / "notes.txt"
    path.write_text("original text\n")
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED_WRITER), str(path), tool.__name__],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL
    assert path.read_text() == "original text\n"
    assert len(os.listdir(tmp_path)) == 2, "the killed writer left its temporary file"

    args = (str(path), "new text\n") if tool is write_file else (str(path), "original", "new")
    assert not tool(*args).startswith("Error:")

    assert os.listdir(tmp_path) == ["notes.txt"]
    assert path.read_text() == "new text\n"


def test_a_live_writers_temporary_file_is_left_alone(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("x")
    busy = tmp_path / f".notes.txt.aimu-{os.getppid()}-0000.tmp"
    busy.write_text("another process is writing this")
    write_file(str(path), "y")
    assert busy.exists()


def test_read_file_on_a_huge_single_line_stays_in_bounded_memory(tmp_path):
    path = tmp_path / "one-line.json"
    block = b"0123456789abcdef" * (1 << 16)
    with open(path, "wb") as f:
        for _ in range(200):
            f.write(block)
        f.write(b"\nsecond line\n")

    tracemalloc.start()
    try:
        out = read_file(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 20 * (1 << 20), f"read_file peaked at {peak / (1 << 20):.0f} MB"
    assert out.startswith("0123456789abcdef")
    assert "line 1 of 2 alone is longer than 100,000 characters" in out
    assert "offset=2" in out
    assert read_file(str(path), offset=2) == "second line\n"


def test_totals_count_every_kind_of_line_ending(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"one\r\ntwo\rthree\nfour")
    assert read_file(str(path), max_lines=2) == (
        "one\r\ntwo\r\n[truncated: showing lines 1-2 of 4. Call read_file again with offset=3 "
        "to continue.]"
    )
    assert read_file(str(path), offset=3) == "three\nfour"
    assert "has 4 lines" in read_file(str(path), offset=9)


def test_a_window_far_into_a_big_file_reads_only_that_window(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("".join(f"entry {i}\n" for i in range(1, 300_001)))
    out = read_file(str(path), max_lines=2, offset=250_000)
    assert out.startswith("entry 250000\nentry 250001\n")
    assert "showing lines 250000-250001 of 300000" in out


@pytest.mark.parametrize("scan_bytes", [1, 2, 3, 7])
def test_line_boundaries_split_across_read_chunks_are_found(tmp_path, monkeypatch, scan_bytes):
    from aimu.tools.builtin import _files

    monkeypatch.setattr(_files, "SCAN_BYTES", scan_bytes)
    data = b"a\r\nbb\r\r\nccc\n\n\rd\r\ne"
    path = tmp_path / "edges.txt"
    path.write_bytes(data)
    with open(path, encoding="utf-8", newline="") as f:
        expected = f.readlines()
    for offset in range(1, len(expected) + 1):
        out = read_file(str(path), max_lines=1, offset=offset)
        assert out.startswith(expected[offset - 1]), (offset, out)
        if offset < len(expected):
            assert f"of {len(expected)}." in out
