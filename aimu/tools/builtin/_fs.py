"""The filesystem tools: list, read (paged), write and edit text files.

Text is UTF-8. A binary file, undecodable bytes or a target that is not a regular file get a
message, never a crash, a hang or a page of noise. Reads and writes go through
:mod:`._files`: a read holds only its window in memory; a write is atomic (a temporary file
renamed over the target) unless the file has other hard links, which keep seeing it.
"""

from __future__ import annotations

import os
from pathlib import Path

from aimu.tools.builtin import _files
from aimu.tools.decorator import tool

MAX_ENTRIES = 1_000
MAX_READ_CHARS = 100_000
_SNIFF = 8_192


class FsError(Exception):
    """An expected failure of a filesystem tool; the message is written for the model."""


@tool(read_only=True)
def list_directory(path: str) -> str:
    """Lists files and subdirectories at the given path.

    One entry per line, sorted by name: directories end in "/", files show their size in
    bytes, symbolic links show their target. At most 1,000 entries are listed.

    Args:
        path: Directory path to list ("~" is the home directory).
    """
    target = Path(path).expanduser()
    try:
        with os.scandir(target) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except FileNotFoundError:
        return f"Error: '{path}' does not exist."
    except NotADirectoryError:
        return f"Error: '{path}' is a file, not a directory; use read_file to read it."
    except PermissionError:
        return f"Error: permission denied listing '{path}'."
    if not entries:
        return f"{target} is empty."
    lines = [_entry_line(e) for e in entries[:MAX_ENTRIES]]
    if len(entries) > MAX_ENTRIES:
        lines.append(f"[... {len(entries) - MAX_ENTRIES} more entries not listed]")
    return "\n".join(lines)


def _entry_line(entry: os.DirEntry) -> str:
    try:
        if entry.is_symlink():
            return f"{entry.name} -> {os.readlink(entry.path)}"
        if entry.is_dir():
            return f"{entry.name}/"
        return f"{entry.name}  ({entry.stat().st_size} bytes)"
    except OSError:
        return f"{entry.name}  (unreadable)"


@tool(read_only=True)
def read_file(path: str, max_lines: int = 2000, offset: int = 1) -> str:
    """Reads a local text file and returns up to max_lines lines starting at line offset.

    Returns the lines as they are in the file. If the result says it was truncated, call
    again with the offset it names before drawing any conclusion from it: a partial document
    reads exactly like a complete one. Paging with offset is how a file larger than one
    window gets read whole; raising max_lines to swallow a large file in one call spends the
    context window the rest of the task needs. At most 100,000 characters are returned per
    call. Binary files, and anything that is not a regular file (a FIFO, a device), are
    refused with a message.

    Args:
        path: Path to the file to read.
        max_lines: Maximum number of lines to return (default 2000).
        offset: 1-indexed line to start reading from (default 1, the start of the file).
    """
    if max_lines < 1 or offset < 1:
        return "Error: max_lines and offset must be 1 or more."
    try:
        with _files.open_regular(_existing(path)) as (fd, info):
            _refuse_binary(fd, info, path)
            window = _files.read_lines(fd, offset, max_lines, MAX_READ_CHARS)
    except UnicodeDecodeError:
        return _undecodable(path)
    except FsError as exc:
        return f"Error: {exc}"
    except _files.NotRegularFile as exc:
        return f"Error: {exc}; read_file reads regular files only."
    except OSError as exc:
        return f"Error: cannot read '{path}': {exc.strerror or exc}"
    return _page(path, window, offset)


def _page(path: str, window: _files.Window, offset: int) -> str:
    total = window.total
    if not window.lines:
        if total == 0:
            return "(empty file)"
        return (
            f"Error: offset {offset} is past the end of '{path}', which has {_lines(total)}. "
            f"Use an offset from 1 to {total}."
        )
    last = offset + len(window.lines) - 1
    follow = f" Call read_file again with offset={last + 1} to continue." if last < total else ""
    if window.cut_short:
        return (
            f"{window.lines[0]}\n[truncated: line {offset} of {total} alone is longer than "
            f"{MAX_READ_CHARS:,} characters; only its start is shown.{follow}]"
        )
    text = "".join(window.lines)
    if last == total:
        return text
    return f"{text}\n[truncated: showing lines {offset}-{last} of {total}.{follow}]"


def _lines(count: int) -> str:
    return f"{count:,} line" + ("" if count == 1 else "s")


@tool(read_only=False)
def write_file(path: str, content: str) -> str:
    """Writes content to a file, creating it or replacing what is already there.

    This replaces the whole file. To change part of one, use edit_file, which leaves the rest
    untouched and fails loudly if what you meant to change is not where you thought. The
    text is written as UTF-8, exactly as given (no newline is added). The write is atomic:
    on any failure the previous file is left as it was (except for a file with several hard
    links, which is rewritten in place so that every name sees the new text). Only regular
    files are written: a FIFO, a device or a directory is refused, never replaced.

    Args:
        path: Path to the file to write. Parent directories are created as needed.
        content: The full text to write.
    """
    target = Path(path).expanduser()
    try:
        data = _encode(content)
        existed = os.path.lexists(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        written = _files.write(target, data)
    except FsError as exc:
        return f"Error: {exc}; nothing was written."
    except _files.NotRegularFile as exc:
        return f"Error: {exc}; write_file only writes regular files, so nothing was written."
    except IsADirectoryError:
        return f"Error: '{path}' is a directory; nothing was written."
    except OSError as exc:
        return f"Error: cannot write '{path}': {exc.strerror or exc}; nothing was written."
    verb = "Replaced" if existed else "Created"
    return f"{verb} {written} ({len(data)} bytes)."


@tool(read_only=False)
def edit_file(path: str, old_str: str, new_str: str) -> str:
    """Replaces one exact occurrence of old_str with new_str in a file.

    old_str must appear exactly once. If it appears zero times, or more than once, nothing
    is written and the count is returned: include enough surrounding context to make it
    unique rather than retrying with the same ambiguous string. Whitespace and indentation
    must match the file exactly. The write is atomic, except for a file with several hard
    links, which is rewritten in place so that every name sees the edit.

    Args:
        path: Path to the file to edit.
        old_str: Exact text to find, unique within the file.
        new_str: Text to replace it with. Pass an empty string to delete it.
    """
    if not old_str:
        return "Error: old_str is empty; give the exact text to replace."
    try:
        target = _existing(path)
        with _files.open_regular(target) as (fd, info):
            _refuse_binary(fd, info, path)
            with open(fd, encoding="utf-8", newline="", closefd=False) as f:
                text = f.read()
        if "\r\n" in text and old_str not in text:
            old_str, new_str = _crlf(old_str), _crlf(new_str)
        count = text.count(old_str)
        if count != 1:
            where = "was not found" if count == 0 else f"appears {count} times"
            return (
                f"Error: old_str {where} in '{path}'; nothing was written. It must match "
                "exactly one place: check whitespace, or add surrounding lines to make it unique."
            )
        start = text.index(old_str)
        data = _encode(text[:start] + new_str + text[start + len(old_str) :])
        written = _files.write(target, data)
    except UnicodeDecodeError:
        return _undecodable(path)
    except FsError as exc:
        return f"Error: {exc}; nothing was written."
    except _files.NotRegularFile as exc:
        return f"Error: {exc}; edit_file only edits regular files, so nothing was written."
    except OSError as exc:
        return f"Error: cannot edit '{path}': {exc.strerror or exc}; nothing was written."
    line = text.count("\n", 0, start) + 1
    return f"Edited {written}: replaced 1 occurrence at line {line}."


def _existing(path: str) -> Path:
    target = Path(path).expanduser()
    if not target.exists():
        raise FsError(f"'{path}' does not exist")
    if target.is_dir():
        raise FsError(f"'{path}' is a directory; use list_directory to see what it holds")
    return target


def _refuse_binary(fd: int, info: os.stat_result, path: str) -> None:
    if b"\x00" in os.pread(fd, _SNIFF, 0):
        raise FsError(f"'{path}' is a binary file ({info.st_size} bytes), not text")


def _undecodable(path: str) -> str:
    return (
        f"Error: '{path}' holds bytes that are not valid UTF-8 text; it may be binary or use "
        "another encoding."
    )


def _encode(content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FsError(
            f"content has a character that cannot be written as UTF-8 at index {exc.start}"
        ) from None


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


write_file.__tool_code__ = {"content": ""}
