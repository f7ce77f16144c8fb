"""Text from a model, a tool or a server, made safe to show: on a terminal, in HTML, in Markdown.

Such text is data. On a terminal its control characters and escape sequences would act
(clear the screen, rewrite the line above, write the clipboard with OSC 52, hide what
follows) and bidi overrides would reorder what is read; :func:`visible` shows each as what it
is (``\\x1b``, ``\\r``, ``<U+202E>``). :func:`html_text` adds HTML escaping; :func:`markdown_text`
escapes raw HTML outside code, so a model's ``<img onerror=…>`` is shown, not run. Every
frontend's printing, panel and record goes through this module (``aimu.text``, public so the
notebook layer and anyone writing their own frontend use the same rule).
"""

from __future__ import annotations

import html
import re

#: Image types a record may show inline as a ``data:`` URL; any other type is named only.
IMAGE_TYPES = frozenset(("image/png", "image/jpeg", "image/gif", "image/webp"))

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029)
_NAMED = {0x0D: "\\r", 0x08: "\\b", 0x0B: "\\v", 0x0C: "\\f", 0x00: "\\0"}
_VISIBLE = {
    **{
        code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if code not in (9, 10)
    },
    **_NAMED,
    **{code: f"<U+{code:04X}>" for code in _BIDI},
}
_VISIBLE_LINE = {**_VISIBLE, 0x0A: "\\n", 0x09: "\\t"}
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def visible(text: str) -> str:
    """``text`` for a terminal: control characters (but newline and tab), escape sequences and
    bidi controls shown as ``\\x1b``, ``\\r``, ``<U+202E>``; everything else unchanged."""
    return str(text).translate(_VISIBLE)


def visible_line(text: str) -> str:
    """:func:`visible`, and newlines and tabs shown too: for text that must stay on its line
    (a name, an id, the approval question)."""
    return str(text).translate(_VISIBLE_LINE)


def html_text(text: str) -> str:
    """``text`` for HTML: :func:`visible`, then HTML-escaped."""
    return html.escape(visible(text))


def markdown_text(text: str) -> str:
    """``text`` for a Markdown document: :func:`visible`, ``<`` escaped outside code blocks
    and code spans, so HTML in it is shown as text (code is shown as written), and a code
    block it leaves open closed."""
    out: list[str] = []
    prose: list[str] = []
    fence = ""

    def flush() -> None:
        if prose:
            out.append(_outside_code("\n".join(prose)))
            prose.clear()

    for line in visible(text).split("\n"):
        opening = _FENCE_LINE.match(line)
        if fence:
            out.append(line)
            closes = opening and opening[1][0] == fence[0] and len(opening[1]) >= len(fence)
            if closes and not line[opening.end() :].strip():
                fence = ""
        elif opening and not (opening[1][0] == "`" and "`" in line[opening.end() :]):
            flush()
            out.append(line)
            fence = opening[1]
        else:
            prose.append(line)
    flush()
    if fence:  # closed here, so nothing after this text is taken for code
        out.append(fence)
    return "\n".join(out)


def inline_code(text: str) -> str:
    """``text`` as a Markdown code span that nothing in it can close, on one line."""
    shown = visible_line(text)
    longest = max((len(run) for run in _BACKTICKS.findall(shown)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{ticks}{pad}{shown}{pad}{ticks}"


def markdown_line(text: str) -> str:
    """``text`` as one line of Markdown that starts no HTML, link or image (a name, an error,
    an image's description inside ``![...]``)."""
    shown = _outside_code(" ".join(visible_line(text).split()))
    return shown.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def data_url(mime_type: object, data: object) -> str | None:
    """A ``data:`` URL for an image, or ``None`` when its type is not one of
    :data:`IMAGE_TYPES` or its data is not base64 (a server chose both)."""
    if mime_type not in IMAGE_TYPES or not isinstance(data, str):
        return None
    if not _BASE64.fullmatch(data):
        return None
    return f"data:{mime_type};base64,{data}"


def _outside_code(text: str) -> str:
    """``<`` escaped in ``text`` except inside code spans (a backtick run closed by the next
    run of the same length); one pass over the runs."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    closing: list[int | None] = [None] * len(runs)
    last: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        closing[index] = last.get(length)
        last[length] = index
    parts = []
    position = index = 0
    while index < len(runs):
        end = closing[index]
        if end is None:
            index += 1
            continue
        parts.append(text[position : runs[index][0]].replace("<", "&lt;"))
        parts.append(text[runs[index][0] : runs[end][1]])
        position, index = runs[end][1], end + 1
    parts.append(text[position:].replace("<", "&lt;"))
    return "".join(parts)
