"""Guided tool calls: what keeps a small model's calls on what the user asked for.

Two narrowings of what constrained decoding lets the model write, both from the request (the
user's last message): the tools it names in plain words (:func:`named_tools`), and string
arguments quoted from it word for word (:func:`quotable`, :func:`quote`).

A model of a few hundred million parameters reads a tool's documentation and copies its
example (``"oat milk"``, ``"~/notes.txt"``) into the call, or a word of the instructions,
instead of what the user asked for. Constrained decoding can stop that: a *required* string
parameter may only take a run of consecutive words of the request (the user's last message),
so the model still chooses, but among the request's own words. When the request names
something specific (a path, a number, an expression, a quoted phrase, a proper name), the
first such parameter gets only those. Optional strings, and strings a schema already
constrains (``enum``, ``const``, ``pattern``, ``format``), are left as they are.

``quotable(messages)`` lists the runs of words; ``quote(parameters, quotes)`` rewrites a
tool's parameter schema so that its required free strings must be one of them.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: The longest run of words one argument may quote.
LONGEST_QUOTE = 12
#: Above this many runs the request is too long to enumerate, and arguments stay free.
MOST_QUOTES = 4000
#: A request longer than this (a pasted document, far past a small model's window) is not
#: enumerated at all: its arguments stay free and the model's own window check decides.
MOST_REQUEST_CHARS = 32_000
#: How many earlier requests lend their specific runs to a follow-up.
EARLIER = 4
_QUOTES = "\"'`"
_SENTENCE_END = ".,;:!?"
_SYMBOLS = "/\\._@:~*=+%#$&<>|^"
_QUOTATION = r'"([^"\n]{1,400})"|\u201c([^\u201d\n]{1,400})\u201d|`([^`\n]{1,400})`'
_CONSTRAINED = ("enum", "const", "pattern", "format")


@dataclass(frozen=True)
class Quotable:
    """What string arguments may quote from a request: its *specific* runs of words, and every
    run of up to :data:`LONGEST_QUOTE` words within a sentence (empty when there are too many
    to enumerate, a pasted document, which leaves those arguments free)."""

    specific: list[str]
    every: list[str]


def quotable(messages: list[dict[str, Any]]) -> Quotable:
    """The runs of words arguments may quote from the user's last message.

    The specific runs are what the request puts in quotation marks, a letter it names by its
    plural (``r's``), and each longest run of
    specific words (holding a digit or a symbol such as ``/ . _ @ : =``, or capitalised inside
    a sentence) joined by operators: ``/tmp/work``, ``48 * 52``, ``Ada Lovelace``. ``How many
    croissants are in stock?`` has none. The specific runs of the last few earlier requests
    follow the last one's: a follow-up ("And in raspberry?") leans on them.
    """
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    if last_user < 0:
        return Quotable([], [])
    text = _text(messages[last_user])
    if len(text) > MOST_REQUEST_CHARS:
        return Quotable([], [])
    words = text.split()
    earlier = [_text(m) for m in messages[:last_user] if m["role"] == "user"][-EARLIER:]
    earlier = [t for t in earlier if len(t) <= MOST_REQUEST_CHARS]
    specific = _distinct([run for t in [text, *reversed(earlier)] for run in _specific_of(t)])
    every = dict.fromkeys(specific)
    for run in filter(None, _runs(words)):
        every.setdefault(run)
        if len(every) > MOST_QUOTES:
            return Quotable(specific[:MOST_QUOTES], [])
    return Quotable(specific[:MOST_QUOTES], list(every))


def quote(parameters: dict[str, Any], quotes: Quotable, tool: str = "") -> dict[str, Any]:
    """A copy of a tool's ``parameters`` schema whose required free strings must quote.

    The first takes a specific run when the request has any (a path, a number: what a call
    is usually about), the others any other run (``write_file``'s content is not its path). A run
    holding a word of the parameter's or the tool's name is not offered for that parameter
    (unless nothing else is left): asked for ``"letter": "``, a small model writes ``letter``
    or ``letter r``.
    """
    out = copy.deepcopy(parameters)
    properties = out.get("properties") or {}
    free = [
        name
        for name in out.get("required") or ()
        if isinstance(properties.get(name), dict) and _free_string(properties[name])
    ]
    first: set[str] = set()  # what the first argument may quote; the others may not
    for position, name in enumerate(free):
        specific = position == 0 and bool(quotes.specific)
        runs = quotes.specific if specific else quotes.every
        runs = [run for run in runs if first.isdisjoint(map(_bare, run.split()))] or runs
        echoes = {word for word in f"{name}_{tool}".lower().split("_") if word}
        fitting = [run for run in runs if _fits(run, properties[name])]
        offered = [run for run in fitting if echoes.isdisjoint(run.lower().split())] or fitting
        if offered:
            properties[name] = {"type": "string", "enum": offered}
        if specific:
            first = {_bare(word) for run in offered for word in run.split()}
    return out


def named_tools(
    tools: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The tools the request names in plain words, when it names any, else all of them.

    A tool is named when every word of its name begins a word of the request, to four
    letters: "Read the file…" names ``read_file``, "Use the calculator" names ``calculate``.
    A small model otherwise picks a tool by the sound of its name (``list_directory`` for
    "Read the file…").
    """
    asked = {word[:4] for word in re.findall(r"[a-z0-9]+", _request(messages).lower())}
    named = [
        spec
        for spec in tools
        if all(word[:4] in asked for word in spec["function"]["name"].lower().split("_") if word)
    ]
    return named or tools


def _request(messages: list[dict[str, Any]]) -> str:
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    return _text(messages[last_user]) if last_user >= 0 else ""


def _fits(run: str, schema: dict[str, Any]) -> bool:
    """Whether ``run`` is as long as the parameter's ``minLength``/``maxLength`` allow."""
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
    return len(run) >= shortest and (longest is None or len(run) <= longest)


def _distinct(runs: list[str]) -> list[str]:
    return [run for run in dict.fromkeys(runs) if run]


def _free_string(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and not any(key in schema for key in _CONSTRAINED)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        return " ".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return str(content or "")


def _runs(words: list[str]) -> Iterator[str]:
    """Every run of up to :data:`LONGEST_QUOTE` words within one sentence, trimmed."""
    for start in range(len(words)):
        for end in range(start, min(len(words), start + LONGEST_QUOTE)):
            yield _trimmed(" ".join(words[start : end + 1]))
            if _ends_sentence(words[end]):
                break


def _specific_runs(words: list[str]) -> list[str]:
    """The longest runs of specific words between punctuation marks, operators (``*``, ``-``)
    allowed between them."""
    marks = _specific(words)
    runs: list[str] = []
    first = last = None  # the current run's first and last specific word
    for index, word in enumerate(words):
        if marks[index]:
            first = index if first is None else first
            last = index
        elif any(c.isalnum() for c in word):  # an ordinary word ends the run
            first = last = _close(runs, words, first, last)
        if word.rstrip(_QUOTES)[-1:] in _SENTENCE_END:  # so does a comma or a full stop
            first = last = _close(runs, words, first, last)
    _close(runs, words, first, last)
    return runs


def _close(runs: list[str], words: list[str], first: int | None, last: int | None) -> None:
    if first is not None and last is not None:
        runs.append(_trimmed(" ".join(words[first : last + 1])))


def _specific(words: list[str]) -> list[bool]:
    """Which words name something: a digit or a symbol among letters or digits (``a.txt``,
    ``1.08``, ``x_1``), or a capital inside a sentence or right before another one (``Ada
    Lovelace``, not ``Cheers, Grace``)."""
    capital = [_trimmed(w)[:1].isupper() for w in words]
    marks = []
    for index, word in enumerate(words):
        bare = _trimmed(word)
        starts_sentence = index == 0 or _ends_sentence(words[index - 1]) or word[0] in _QUOTES
        joined = index + 1 < len(words) and capital[index + 1] and bare == word.rstrip(_QUOTES)
        named = capital[index] and (not starts_sentence or joined)
        marks.append(
            any(c.isalnum() for c in bare)
            and (any(c.isdigit() or c in _SYMBOLS for c in bare) or named)
        )
    return marks


def _ends_sentence(word: str) -> bool:
    return word.rstrip(_QUOTES)[-1:] in (".", "!", "?", ":")


def _quoted_runs(text: str) -> list[str]:
    """What the text puts in quotation marks (straight or curly, double or backticks)."""
    found = re.findall(
        r'"([^"\n]{1,400})"|\u201c([^\u201d\n]{1,400})\u201d|`([^`\n]{1,400})`', text
    )
    return [_trimmed(next(part for part in groups if part)) for groups in found]


def _specific_of(text: str) -> list[str]:
    return _quoted_runs(text) + _letters(text) + _specific_runs(text.split())


def _bare(word: str) -> str:
    """A word without quotes, the sentence's end, or a plural's ``'s``: ``r's`` is ``r``."""
    return re.sub(r"['’]s$", "", _trimmed(word))


def _letters(text: str) -> list[str]:
    """Single letters the request names by their plural: ``How many r's…`` names ``r``."""
    return re.findall(r"(?<![\w'])([A-Za-z])['’]s\b", text)


def _trimmed(run: str) -> str:
    """A run without the quotes around it and the sentence's end (``data/cafe.md.`` is
    ``data/cafe.md``); brackets stay, they may be part of an expression."""
    return run.strip(_QUOTES).rstrip(_SENTENCE_END).strip(_QUOTES)
