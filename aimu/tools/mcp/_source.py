"""Where an MCP client connects: checked once at construction, a fresh transport per connect.

A :class:`Source` also knows the secrets it was given (tokens, header and env values, URL
credentials and query strings) so every message built from it can be scrubbed of them.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx2
from fastmcp import FastMCP
from fastmcp.client.transports import (
    ClientTransport,
    FastMCPTransport,
    NodeStdioTransport,
    PythonStdioTransport,
    SSETransport,
    StdioTransport,
    StreamableHttpTransport,
)
from fastmcp.client.transports.config import MCPConfigTransport
from fastmcp.mcp_config import MCPConfig, infer_transport_type_from_url
from mcp.server.mcpserver import MCPServer
from pydantic import ValidationError

REDACTED = "***"
_MIN_SECRET = 4  # shorter values ("1", "yes") are not worth mangling text over


class Source:
    """A validated connection target: ``label`` is safe to show, ``transport()`` connects,
    ``hint`` says what to check when connecting fails."""

    def __init__(
        self,
        label: str,
        build: Callable[[], ClientTransport],
        secrets: set[str],
        hint: str = "Check that the server is running.",
    ):
        self.label = label
        self.hint = hint
        self._build = build
        self._secrets = sorted((s for s in secrets if len(s) >= _MIN_SECRET), key=len, reverse=True)

    def transport(self) -> ClientTransport:
        return self._build()

    def redact(self, text: str) -> str:
        """``text`` with every secret this source holds replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text


def resolve(
    config: Mapping[str, Any] | None,
    server: Any,
    file: str | os.PathLike[str] | None,
    url: str | None,
    auth: Any,
    headers: Mapping[str, str] | None,
) -> Source:
    """Check the constructor's arguments and return where to connect.

    Raises ``ValueError`` for a wrong combination or value, ``TypeError`` for a wrong type,
    ``FileNotFoundError`` for a missing server script. Messages never quote secrets.
    """
    given = [
        name
        for name, value in (("config", config), ("server", server), ("file", file), ("url", url))
        if value is not None
    ]
    if len(given) != 1:
        got = " and ".join(f"{name}=" for name in given) if given else "none"
        raise ValueError(
            "MCPClient needs exactly one of config= (an mcpServers dict), server= (a FastMCP "
            f"instance), file= (a server script) or url= (a remote server); got {got}"
        )
    if url is None and (auth is not None or headers is not None):
        raise ValueError(
            "auth= and headers= apply only with url=; for config=, put them in the server's "
            "entry of the config"
        )
    if config is not None:
        return _from_config(config)
    if server is not None:
        return _from_server(server)
    if file is not None:
        return _from_file(file)
    return _from_url(url, auth, headers)


def _from_server(server: Any) -> Source:
    if not isinstance(server, FastMCP | MCPServer):
        raise TypeError(f"server must be a fastmcp.FastMCP instance, not {type(server).__name__}")
    return Source(f"in-memory server {server.name!r}", lambda: FastMCPTransport(server), set())


def _from_file(file: str | os.PathLike[str]) -> Source:
    if not isinstance(file, str | os.PathLike):
        raise TypeError(f"file must be a path to a server script, not {type(file).__name__}")
    path = Path(file).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"MCP server script not found: {path}")
    hint = f"Check that the script starts on its own ({path.name}) and prints no errors."
    label = f"server script {path}"
    if path.suffix == ".py":
        return Source(
            label, lambda: PythonStdioTransport(path, log_file=_server_log()), set(), hint
        )
    if path.suffix == ".js":
        return Source(label, lambda: NodeStdioTransport(path, log_file=_server_log()), set(), hint)
    raise ValueError(f"file must be a .py or .js MCP server script, not {path.name!r}")


def _from_url(url: Any, auth: Any, headers: Mapping[str, str] | None) -> Source:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError("url must be an http:// or https:// address, e.g. 'http://host:8000/mcp'")
    secrets = _url_secrets(url)
    header_dict = _check_headers(headers)
    secrets.update(header_dict.values())
    if isinstance(auth, str):
        token = auth.removeprefix("Bearer ").strip()
        if not token:
            raise ValueError("auth is an empty token; pass the bearer token, or 'oauth'")
        if token != "oauth":
            secrets.add(token)
            if any(name.lower() == "authorization" for name in header_dict):
                raise ValueError(
                    "pass the token either as auth= or as an Authorization header, not both"
                )
        auth = token
    elif auth is not None:
        if not isinstance(auth, httpx2.Auth):
            raise TypeError(
                "auth must be a bearer-token str, 'oauth', or an httpx2.Auth object such as "
                f"fastmcp.client.auth.OAuth (FastMCP's HTTP library), not {type(auth).__name__}"
            )
        if headers is not None:
            raise ValueError("an auth object cannot be combined with headers=; pass one of them")
    kind = SSETransport if infer_transport_type_from_url(url) == "sse" else StreamableHttpTransport

    def build() -> ClientTransport:
        return kind(url, headers=dict(header_dict), auth=auth)

    hint = "Check that the server is running and that url=, auth= and headers= are right."
    return Source(f"server at {_safe_url(url)}", build, secrets, hint)


def _from_config(config: Any) -> Source:
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be an mcpServers dict, not {type(config).__name__}")
    servers = config.get("mcpServers", config)
    if not isinstance(servers, Mapping) or not servers:
        raise ValueError("config has no servers: expected {'mcpServers': {'name': {...}}}")
    secrets: set[str] = set()
    for name, entry in servers.items():
        if not isinstance(entry, Mapping) or not (
            isinstance(entry.get("url"), str) or isinstance(entry.get("command"), str)
        ):
            raise ValueError(
                f"config server {name!r} needs a 'url' (remote server) or a 'command' (local "
                "server run over stdio)"
            )
        secrets |= _entry_secrets(entry)
    normalized = {"mcpServers": copy.deepcopy(dict(servers))}
    try:
        MCPConfig.from_dict(copy.deepcopy(normalized))
    except ValidationError as exc:
        problem = exc.errors(include_url=False, include_input=False, include_context=False)[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise ValueError(
            f"config is not a valid mcpServers config: {where}: {problem['msg']}"
        ) from None
    label = "config servers " + ", ".join(repr(str(name)) for name in servers)
    return Source(label, lambda: _ConfigTransport(copy.deepcopy(normalized)), secrets)


class _ConfigTransport(MCPConfigTransport):
    """FastMCP's config transport, with each stdio server's stderr sent where it can go."""

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        if len(self.config.mcpServers) == 1:
            _route_log(self.transport)

    @staticmethod
    def _create_transport(config: Any) -> ClientTransport:
        return _route_log(MCPConfigTransport._create_transport(config))


def _route_log(transport: ClientTransport) -> ClientTransport:
    if isinstance(transport, StdioTransport) and transport.log_file is None:
        transport.log_file = _server_log()
    return transport


def _server_log() -> TextIO | Path | None:
    """Where a stdio server's stderr goes: our stderr when it is a real file; otherwise (a
    Jupyter kernel's stderr is not) the process's original stderr, the kernel's log."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ if sys.__stderr__ is not None else Path(os.devnull)
    return None


def _entry_secrets(entry: Mapping[str, Any]) -> set[str]:
    secrets: set[str] = set()
    for key in ("headers", "env"):
        values = entry.get(key)
        if isinstance(values, Mapping):
            secrets.update(str(v) for v in values.values())
    auth = entry.get("auth")
    if isinstance(auth, str) and auth != "oauth":
        secrets.add(auth)
    if isinstance(entry.get("url"), str):
        secrets |= _url_secrets(entry["url"])
    return secrets


def _check_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise TypeError("headers must be a dict of str names to str values")
    return dict(headers)


def _url_secrets(url: str) -> set[str]:
    parts = urlsplit(url)
    secrets = {value for _, value in parse_qsl(parts.query)}
    if parts.query:
        secrets.add(parts.query)
    if parts.password:
        secrets.add(parts.password)
    return secrets


def _safe_url(url: str) -> str:
    """``url`` without credentials, query string or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    query = REDACTED if parts.query else ""
    return urlunsplit((parts.scheme, host, parts.path, query, ""))
