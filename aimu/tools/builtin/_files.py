"""Low-level file access for the fs tools: regular files only, bounded reads, safe writes.

Opening never blocks: a FIFO, a socket or a device node is refused before anything is read
from it or written over it. Reading a window of lines costs memory for that window only,
however long the file or its lines are. Writing goes through a temporary file and a rename,
except for a file with several hard links, which is rewritten in place so every name keeps
seeing it. A temporary file left by a writer that died is removed by the next write.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SCAN_BYTES = 1 << 20
_EOL = re.compile(rb"\r\n|\r|\n")
_TEXT_EOL = re.compile(r"\r\n|\r|\n")
_TEMP_TAG = ".aimu-"
_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFile(OSError):
    """The path names something other than a regular file; the message says what it is."""


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words ("a FIFO (named pipe)", "a directory"...)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


@contextlib.contextmanager
def open_regular(path: Path) -> Iterator[tuple[int, os.stat_result]]:
    """Open ``path`` for reading, refusing anything but a regular file, without blocking.

    The descriptor is opened non-blocking (so a FIFO without a writer cannot hang the
    call), checked with ``fstat``, then made blocking again. Yields ``(fd, stat)``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"'{path}' is {kind_of(info.st_mode)}, not a regular file")
        os.set_blocking(fd, True)
        yield fd, info
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Window:
    """Lines ``offset`` onward as read: their text, and the file's total line count."""

    lines: list[str]
    total: int
    cut_short: bool


def read_lines(fd: int, offset: int, max_lines: int, max_chars: int) -> Window:
    """Up to ``max_lines`` lines from 1-indexed ``offset``, at most ``max_chars`` characters.

    Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` and keep their endings. One pass over
    the bytes finds where the window starts and ends and counts every line; only the
    window itself (at most four bytes per character) is read into memory and decoded, as
    strict UTF-8. ``cut_short`` is set when a single line is longer than ``max_chars``, in
    which case its start is the only line returned.
    """
    start, stop, total = _layout(fd, offset - 1, offset - 1 + max_lines)
    if start is None:
        return Window([], total, False)
    budget = 4 * max_chars
    data = os.pread(fd, min(stop - start, budget), start)
    whole = start + len(data) == stop
    text = codecs.getincrementaldecoder("utf-8")().decode(data, final=whole)
    lines = _split(text)
    if not whole and len(lines) > 1:
        lines.pop()
    kept, size = [], 0
    for line in lines:
        if size + len(line) > max_chars:
            break
        kept.append(line)
        size += len(line)
    if not kept:
        return Window([lines[0][:max_chars]], total, True)
    return Window(kept, total, False)


def _split(text: str) -> list[str]:
    lines, begin = [], 0
    for match in _TEXT_EOL.finditer(text):
        lines.append(text[begin : match.end()])
        begin = match.end()
    if begin < len(text):
        lines.append(text[begin:])
    return lines


def _layout(fd: int, first: int, after: int) -> tuple[int | None, int, int]:
    """Where line index ``first`` starts (``None`` past the end), where line index ``after``
    starts (or the end of the file), and how many lines the file has."""
    found: dict[int, int] = {0: 0}
    wanted = sorted({first, after} - {0})
    ends = 0
    position = 0
    carry = b""
    last = b""
    while True:
        chunk = os.read(fd, SCAN_BYTES)
        data = carry + chunk
        carry = b""
        if chunk and data.endswith(b"\r"):
            data, carry = data[:-1], b"\r"
        count = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
        while wanted and wanted[0] <= ends + count:
            need = wanted.pop(0) - ends
            match = next(m for i, m in enumerate(_EOL.finditer(data), 1) if i == need)
            found[need + ends] = position + match.end()
        ends += count
        position += len(data)
        if data:
            last = data[-1:]
        if not chunk:
            break
    total = ends + (1 if last and last not in (b"\n", b"\r") else 0)
    start = found.get(first) if first < total else None
    return start, found.get(after, position), total


def write(target: Path, data: bytes) -> Path:
    """Write ``data`` as the content of ``target``; return the path written.

    A symlink is written through. A new file, or an existing one with a single link, is
    replaced atomically: the data goes to a temporary file beside it, which is renamed
    over it (the old permissions kept). A file with several hard links is rewritten in
    place instead, so every one of its names sees the new content; that write is not
    atomic. Anything but a regular file raises :class:`NotRegularFile`.
    """
    final = Path(os.path.realpath(target))
    try:
        info = os.stat(final)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise NotRegularFile(f"'{target}' is {kind_of(info.st_mode)}, not a regular file")
    _remove_stale_temps(final)
    if info is not None and info.st_nlink > 1:
        _write_in_place(final, data)
    else:
        _replace(final, data, None if info is None else stat.S_IMODE(info.st_mode))
    return final


def _write_in_place(final: Path, data: bytes) -> None:
    fd = os.open(final, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, "wb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"'{final}' is no longer a regular file")
        f.write(data)
        f.truncate()
        f.flush()
        os.fsync(fd)


def _replace(final: Path, data: bytes, mode: int | None) -> None:
    temp = final.with_name(f".{final.name}{_TEMP_TAG}{os.getpid()}-{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _remove_stale_temps(final: Path) -> None:
    """Delete temporary files a writer of ``final`` left when it died before its rename."""
    prefix = f".{final.name}{_TEMP_TAG}"
    with contextlib.suppress(OSError), os.scandir(final.parent) as entries:
        for entry in entries:
            name = entry.name
            if not (name.startswith(prefix) and name.endswith(".tmp")):
                continue
            pid = name[len(prefix) :].partition("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
