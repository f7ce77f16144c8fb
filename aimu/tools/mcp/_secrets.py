"""The secrets an MCP client was given, and how text is scrubbed of them.

Secrets are bearer tokens, header values, URL passwords and query strings, and the values of
``env`` variables whose names say they are secret (``OPENAI_API_KEY``, ``DB_PASSWORD``, ...).
Other ``env`` values (``TZ=Asia/Tokyo``) are configuration, and stay readable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

REDACTED = "***"
_MIN_SECRET = 4  # shorter values ("1", "yes") are not worth mangling text over

SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|AUTH|CREDENTIAL|PRIVATE|COOKIE|SESSION",
    re.IGNORECASE,
)
"""A variable or header name whose value is treated as secret."""


class Redactor:
    """Replaces each of a set of secrets with ``***`` in any text."""

    def __init__(self, secrets: Iterable[str] = ()):
        kept = {s for s in secrets if isinstance(s, str) and len(s) >= _MIN_SECRET}
        self._secrets = sorted(kept, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __repr__(self) -> str:
        return f"<Redactor of {len(self._secrets)} secrets>"

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text


def env_secrets(env: Any) -> set[str]:
    """The values of secret-named variables, and passwords inside URL-valued ones."""
    if not isinstance(env, Mapping):
        return set()
    secrets: set[str] = set()
    for name, value in env.items():
        value = str(value)
        if SECRET_NAME.search(str(name)):
            secrets.add(value)
        elif "://" in value:
            secrets |= url_secrets(value)
    return secrets


def url_secrets(url: str) -> set[str]:
    """A URL's password, its query string and each query value."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return {url}
    secrets = {value for _, value in parse_qsl(parts.query)}
    if parts.query:
        secrets.add(parts.query)
    if password:
        secrets.add(password)
    return secrets


def safe_url(url: str) -> str:
    """``url`` without credentials, query string or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    query = REDACTED if parts.query else ""
    return urlunsplit((parts.scheme, host, parts.path, query, ""))
