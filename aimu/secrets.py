"""What a secret is, and text with its secrets hidden: the one rule every path uses
(``aimu.secrets``, public so the notebook layer and other frontends use the same rule).

Model context (``read_cells``, ``describe_variable``, ``%agent_fix``), provider and MCP errors,
MCP results and logs, client names and URLs, event sinks, batch checkpoints and the run
record all go through :func:`redact` (or a :class:`Redactor` holding the credentials a client
was given). A secret is:

- a value known to be one: a credential given to a client (API key, bearer token, the value
  of a secret-named header or ``env`` entry, a URL's password) and the value of every
  secret-named environment variable of this process, wherever it appears;
- the value written beside a secret name: ``api_key = "…"`` (``b"…"``, ``("…" "…")``),
  ``{"Authorization": "Bearer …"}``, ``TOKEN=…``, ``?access_token=…``, ``X-Api-Key: …``,
  ``%env OPENAI_API_KEY …``;
- a known token shape: ``sk-…``, ``ghp_…``, ``Bearer …``, AWS key ids, JWTs, private-key
  blocks, and a run of adjacent string literals that together make one;
- a URL's password, and its user part when that is a token (``https://TOKEN@host``).

A name is secret by its whole words (``OPENAI_API_KEY``, ``apiKey`` and ``X-Api-Key`` are;
``GIT_AUTHOR_NAME``, ``KEYBOARD``, ``KeyError`` and ``monkey`` are not), so anything that is
not a secret is left exactly as it was. Every pattern runs in linear time: the text often
comes from a model or a server.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

#: What a hidden secret reads as.
REDACTED = "[hidden]"
#: Known values shorter than this are too common to replace wherever they appear.
MIN_LENGTH = 8

_SECRET_WORDS = frozenset(
    (
        *("token", "secret", "secrets", "password", "passwords", "passwd", "pass"),
        *("passphrase", "auth", "authorization", "credential", "credentials", "cookie"),
        *("apikey", "accesskey", "secretkey", "privatekey", "authtoken", "accesstoken"),
        *("bearer", "jwt", "sig", "signature"),
    )
)
_KEY_WORDS = frozenset(("key", "keys"))
_HEADER_NAMES = frozenset(("authorization", "proxy-authorization", "cookie", "apikey"))
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

_LITERAL = (
    r"""(?:[bBrRuUfF]{0,2}"""
    r"""(?:"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"|'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'))"""
)
_LITERALS = rf"{_LITERAL}(?:\s*+(?:\+\s*+)?{_LITERAL})*+"
_NAMED_LITERAL = re.compile(
    rf"""(?<![\w-])(?P<name>[A-Za-z_][\w-]*+)"""
    rf"""(?P<sep>['"]?\]?[ \t]*+(?::|=(?!=))[ \t]*+(?:\([ \t]*+)?|['"][ \t]*+,[ \t]*+)"""
    rf"""(?P<value>{_LITERALS})"""
)
_ONE_LITERAL = re.compile(_LITERAL)
_LITERAL_RUN = re.compile(_LITERALS)
_ASSIGNED = re.compile(
    r"""(?<![\w.-])(?P<lead>-*+)(?P<name>[A-Za-z_][\w.-]*+)=(?![=\s'"(\[{])"""
    r"""(?P<value>[^\s'"\\&,;)}\]<>]++)"""
)
_HEADER = re.compile(
    r"""(?<![\w-])(?P<name>[A-Za-z][\w-]*+)(?P<gap>:[ \t]*+)"""
    r"""(?>(?P<scheme>(?:Bearer|Basic|Token)[ \t]++)?)(?P<value>(?!\[)[^\s'"\\,;)}\]<>]++)"""
)
_ENV_MAGIC = re.compile(
    r"""(?P<head>(?:%|run_line_magic\(['"])(?:set_)?env(?:['"],[ \t]*+['"]|[ \t]++))"""
    r"""(?P<name>[A-Za-z_]\w*+)(?P<gap>[ \t]++)(?P<value>[^\s'"]++)"""
)
_USERINFO = re.compile(
    r"""(?P<scheme>(?<![\w+.-])[A-Za-z][\w+.-]*+://)(?P<user>[^/@\s:'"<>\[\]]++)"""
    r"""(?::(?P<password>[^/@\s'"<>]*+))?@"""
)
_PLAIN_USER = re.compile(r"[A-Za-z][A-Za-z._-]{0,15}")
_BEARER = re.compile(
    r"\b(?P<scheme>Bearer|Basic)[ \t]++(?=[A-Za-z]*+[0-9._~+/=-])(?P<value>[A-Za-z0-9._~+/=-]{8,})"
)
_SHAPES = re.compile(
    "|".join(
        (
            r"(?<![\w-])sk-(?=[A-Za-z_-]*+\d)[A-Za-z0-9_-]{12,}",
            r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"\bglpat-[A-Za-z0-9_-]{20,}",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            r"\bAIza[0-9A-Za-z_-]{35}",
            r"\bhf_[A-Za-z0-9]{30,}",
            r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}",
            r"-----BEGIN [A-Z ]{0,24}PRIVATE KEY-----[\s\S]{0,16000}?-----END [A-Z ]{0,24}"
            r"PRIVATE KEY-----",
        )
    )
)


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a variable, header, key or query name says its value is secret, by whole words:
    ``OPENAI_API_KEY``, ``apiKey``, ``X-Api-Key``, ``access_token``, ``DB_PASSWORD`` are;
    ``GIT_AUTHOR_NAME``, ``KEYBOARD``, ``key`` alone, ``client`` are not."""
    words = [word.lower() for word in _WORD.findall(name)]
    if any(word in _SECRET_WORDS for word in words):
        return True
    return len(words) > 1 and words[-1] in _KEY_WORDS


def secret_values(named: Mapping[Any, Any] | None) -> set[str]:
    """The values of the secret-named entries of ``named`` (an ``env`` dict, headers, a
    namespace), and the secrets inside URL-valued ones."""
    if not isinstance(named, Mapping):
        return set()
    values: set[str] = set()
    for name, value in named.items():
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if not isinstance(value, str):
            continue
        if is_secret_name(str(name)):
            values.add(value)
        elif "://" in value:
            values |= url_secrets(value)
    return values


def environment_secrets() -> set[str]:
    """The values of this process's secret-named environment variables."""
    return secret_values(os.environ)


def url_secrets(url: str) -> set[str]:
    """A URL's password, its user part when that is a token, and its secret-named query values."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return {url}
    values = {value for name, value in parse_qsl(parts.query) if is_secret_name(name)}
    if password:
        values.add(password)
    elif user and not _PLAIN_USER.fullmatch(user):
        values.add(user)
    return values


def shown_url(url: str) -> str:
    """``url`` as it may be shown: any ``user[:password]@`` part and secret-named query
    values replaced by :data:`REDACTED` (a user part given in a URL may be the token)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    if "@" in parts.netloc:
        parts = parts._replace(netloc=f"{REDACTED}@{parts.netloc.rpartition('@')[2]}")
    return redact(urlunsplit(parts), ())


class Redactor:
    """Hides a set of known secrets, and everything :func:`redact` hides, in any text."""

    def __init__(self, secrets: Iterable[str] = ()):
        kept = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_LENGTH}
        self._secrets = tuple(sorted(kept, key=len, reverse=True))

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __repr__(self) -> str:
        return f"<Redactor of {len(self._secrets)} secrets>"

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)


def redact(text: str, known: Iterable[str | None] = ()) -> str:
    """``text`` with every secret replaced by :data:`REDACTED`: the ``known`` values, the
    process's secret-named environment values, and what the patterns of this module find."""
    values = {v for v in (*known, *environment_secrets()) if v and len(v) >= MIN_LENGTH}
    for value in sorted(values, key=len, reverse=True):
        for form in {value, quote(value, safe="")}:
            if form in text:
                text = text.replace(form, REDACTED)
    text = _NAMED_LITERAL.sub(_named_literal, text)
    text = _LITERAL_RUN.sub(_literal_run, text)
    text = _ENV_MAGIC.sub(_env_magic, text)
    text = _ASSIGNED.sub(_assigned, text)
    text = _HEADER.sub(_header, text)
    text = _BEARER.sub(lambda m: f"{m['scheme']} {REDACTED}", text)
    text = _USERINFO.sub(_userinfo, text)
    return _SHAPES.sub(REDACTED, text)


def redact_data(value: Any, known: Iterable[str | None] = ()) -> Any:
    """A copy of ``value`` (dicts, lists, tuples, strings) with :func:`redact` applied to
    every string in it, and the text under a secret-named key hidden whole; keys kept."""
    known = tuple(known)
    if isinstance(value, str):
        return redact(value, known)
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if isinstance(key, str) and isinstance(item, str | bytes) and is_secret_name(key)
            else redact_data(item, known)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(redact_data(item, known) for item in value)
    return value


def _named_literal(match: re.Match[str]) -> str:
    head, value = match["name"] + match["sep"], match["value"]
    if not is_secret_name(match["name"]):
        return head + _LITERAL_RUN.sub(_literal_run, value)
    return head + _hidden_literal(value)


def _literal_run(match: re.Match[str]) -> str:
    """A run of adjacent literals (``"sk-ab" "cd…"``) is hidden when it joins into a token."""
    pieces = _ONE_LITERAL.findall(match[0])
    joined = "".join(piece[piece.index(piece[-1]) + 1 : -1] for piece in pieces)
    if len(pieces) > 1 and _SHAPES.search(joined):
        return _hidden_literal(match[0])
    return match[0]


def _hidden_literal(literals: str) -> str:
    """``b"[hidden]"`` for literals opening with ``b"``: one literal, its prefix and quote kept."""
    quote_mark = literals[-1]
    return literals[: literals.index(quote_mark) + 1] + REDACTED + quote_mark


def _env_magic(match: re.Match[str]) -> str:
    if not is_secret_name(match["name"]):
        return match[0]
    return f"{match['head']}{match['name']}{match['gap']}{REDACTED}"


def _assigned(match: re.Match[str]) -> str:
    if not is_secret_name(match["name"]) or match["value"] == REDACTED:
        return match[0]
    return f"{match['lead']}{match['name']}={REDACTED}"


def _header(match: re.Match[str]) -> str:
    name = match["name"]
    header_like = "-" in name or name.lower() in _HEADER_NAMES
    if not (header_like and is_secret_name(name)) or match["value"] == REDACTED:
        return match[0]
    return f"{name}{match['gap']}{match['scheme'] or ''}{REDACTED}"


def _userinfo(match: re.Match[str]) -> str:
    user, password = match["user"], match["password"]
    if password is not None:
        return f"{match['scheme']}{user}:{REDACTED}@" if password else match[0]
    if user == REDACTED or _PLAIN_USER.fullmatch(user):
        return match[0]
    return f"{match['scheme']}{REDACTED}@"
