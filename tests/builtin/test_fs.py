"""The fs tools: listing, paged reading, atomic writes, exact single-occurrence edits."""

import os
import stat

import pytest

from aimu.tools.builtin import _fs, edit_file, list_directory, read_file, write_file


def test_list_directory_marks_directories_sizes_and_links(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("hello")
    (tmp_path / "link").symlink_to("a.txt")
    assert list_directory(str(tmp_path)) == "a.txt  (5 bytes)\nlink -> a.txt\nsub/"


def test_list_directory_reports_missing_file_and_empty(tmp_path):
    (tmp_path / "f").write_text("")
    assert "does not exist" in list_directory(str(tmp_path / "nope"))
    assert "use read_file" in list_directory(str(tmp_path / "f"))
    (tmp_path / "empty").mkdir()
    assert list_directory(str(tmp_path / "empty")).endswith("is empty.")


def test_list_directory_caps_the_listing(tmp_path, monkeypatch):
    monkeypatch.setattr(_fs, "MAX_ENTRIES", 3)
    for i in range(5):
        (tmp_path / f"f{i}").write_text("")
    assert list_directory(str(tmp_path)).splitlines()[-1] == "[... 2 more entries not listed]"


def test_read_file_returns_the_text_as_is(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    assert read_file(str(path)) == "one\r\ntwo\r\n"


def test_read_file_truncation_names_the_offset_to_continue_from(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 11)))
    first = read_file(str(path), max_lines=4)
    assert first.startswith("line 1\nline 2\nline 3\nline 4\n")
    assert "showing lines 1-4 of 10" in first and "offset=5" in first
    middle = read_file(str(path), max_lines=4, offset=5)
    assert middle.startswith("line 5\n") and "offset=9" in middle
    last = read_file(str(path), max_lines=4, offset=9)
    assert last == "line 9\nline 10\n"


def test_read_file_exactly_at_the_window_is_not_called_truncated(tmp_path):
    path = tmp_path / "four.txt"
    path.write_text("a\nb\nc\nd\n")
    assert read_file(str(path), max_lines=4) == "a\nb\nc\nd\n"


def test_read_file_past_the_end_and_bad_arguments(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text("x\n")
    past = read_file(str(path), offset=5)
    assert past.startswith("Error:") and "past the end" in past and "has 1 line." in past
    assert read_file(str(path), max_lines=0).startswith("Error:")
    assert read_file(str(path), offset=0).startswith("Error:")
    assert "does not exist" in read_file(str(tmp_path / "nope"))
    assert "is a directory" in read_file(str(tmp_path))


def test_read_file_empty_file(tmp_path):
    (tmp_path / "e").write_text("")
    assert read_file(str(tmp_path / "e")) == "(empty file)"


def test_read_file_character_cap_cuts_at_a_line_boundary(tmp_path, monkeypatch):
    monkeypatch.setattr(_fs, "MAX_READ_CHARS", 25)
    path = tmp_path / "wide.txt"
    path.write_text("0123456789\n" * 5)
    out = read_file(str(path))
    assert out.startswith("0123456789\n0123456789\n\n[truncated") and "offset=3" in out


def test_binary_file_gets_a_message(tmp_path):
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    for out in (read_file(str(path)), edit_file(str(path), "PNG", "JPG")):
        assert out.startswith("Error:") and "binary file" in out


def test_undecodable_bytes_get_a_message(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("café".encode("latin-1"))
    before = path.read_bytes()
    assert "not valid UTF-8" in read_file(str(path))
    assert "not valid UTF-8" in edit_file(str(path), "caf", "tea")
    assert path.read_bytes() == before


def test_write_file_creates_parents_and_says_so(tmp_path):
    path = tmp_path / "a" / "b" / "new.txt"
    out = write_file(str(path), "héllo\n")
    assert out == f"Created {path} (7 bytes)."
    assert path.read_bytes() == "héllo\n".encode()


def test_write_file_replaces_and_keeps_permissions(tmp_path):
    path = tmp_path / "script.sh"
    path.write_text("old")
    path.chmod(0o750)
    assert write_file(str(path), "new").startswith("Replaced")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o750


def test_new_files_get_the_usual_permissions(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    path = tmp_path / "plain.txt"
    write_file(str(path), "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_write_through_a_symlink_writes_the_target(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old")
    (tmp_path / "alias.txt").symlink_to(target)
    write_file(str(tmp_path / "alias.txt"), "new")
    assert (tmp_path / "alias.txt").is_symlink()
    assert target.read_text() == "new"


def test_a_failure_mid_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "keep.txt"
    path.write_bytes(b"original contents\n")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_fs.os, "fsync", disk_full)
    out = write_file(str(path), "replacement " * 1000)
    assert out.startswith("Error:") and "No space left" in out and "nothing was written" in out
    assert path.read_bytes() == b"original contents\n"
    assert os.listdir(tmp_path) == ["keep.txt"]


def test_write_file_refuses_a_directory_and_unencodable_text(tmp_path):
    assert "is a directory" in write_file(str(tmp_path), "x")
    out = write_file(str(tmp_path / "s.txt"), "bad \ud800 surrogate")
    assert out.startswith("Error:") and "UTF-8" in out
    assert not (tmp_path / "s.txt").exists()


def test_edit_file_replaces_the_one_occurrence(tmp_path):
    path = tmp_path / "code.py"
    path.write_text("a = 1\nb = 2\nc = 3\n")
    out = edit_file(str(path), "b = 2", "b = 20")
    assert out == f"Edited {path}: replaced 1 occurrence at line 2."
    assert path.read_text() == "a = 1\nb = 20\nc = 3\n"


@pytest.mark.parametrize(
    ("old", "said"), [("missing", "was not found"), ("x = 1", "appears 2 times")]
)
def test_edit_file_with_zero_or_two_matches_leaves_the_file_byte_identical(tmp_path, old, said):
    path = tmp_path / "code.py"
    path.write_bytes(b"x = 1\r\ny = 2\nx = 1\n")
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    out = edit_file(str(path), old, "z = 3")
    assert out.startswith("Error:") and said in out and "nothing was written" in out
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == mtime


def test_edit_file_matches_newlines_in_a_crlf_file(tmp_path):
    path = tmp_path / "win.txt"
    path.write_bytes(b"first\r\nsecond\r\nthird\r\n")
    edit_file(str(path), "first\nsecond", "one\ntwo")
    assert path.read_bytes() == b"one\r\ntwo\r\nthird\r\n"


def test_edit_file_deletes_with_an_empty_replacement_and_refuses_empty_old(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("keep drop keep")
    edit_file(str(path), " drop", "")
    assert path.read_text() == "keep keep"
    assert edit_file(str(path), "", "x").startswith("Error:")
