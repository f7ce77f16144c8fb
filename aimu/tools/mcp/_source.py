"""Where an MCP client connects: checked once at construction, a fresh transport per connect.

A :class:`Source` also holds the :class:`~aimu.secrets.Redactor` of the secrets it was given
(tokens, secret-named headers, ``env`` values and query values, URL credentials), so every
message and log record built from it can be scrubbed of them.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx2
from fastmcp import FastMCP
from fastmcp.client.transports import (
    ClientTransport,
    FastMCPTransport,
    NodeStdioTransport,
    PythonStdioTransport,
    SSETransport,
    StreamableHttpTransport,
)
from fastmcp.mcp_config import infer_transport_type_from_url
from mcp.server.mcpserver import MCPServer

from aimu.secrets import Redactor, secret_values, shown_url, url_secrets
from aimu.tools.mcp._config import ConfigTransport, check_config
from aimu.tools.mcp._logs import scrub_logs_of
from aimu.tools.mcp._stderr import Stderrs
from aimu.tools.mcp._trust import split_config


class Source:
    """A validated connection target: ``label`` is safe to show, ``transport()`` makes a new
    transport (and the :class:`Stderrs` of the servers it starts), ``hint`` says what to check
    when connecting fails. ``servers`` names a config's servers and ``trusted`` those of them
    marked ``trust_annotations`` (:mod:`._trust`)."""

    def __init__(
        self,
        label: str,
        build: Callable[[Stderrs], ClientTransport],
        secrets: set[str],
        hint: str = "Check that the server is running.",
        servers: tuple[str, ...] = (),
        trusted: frozenset[str] = frozenset(),
    ):
        self.label = label
        self.hint = hint
        self.servers = servers
        self.trusted = trusted
        self._build = build
        self.redactor = Redactor(secrets)
        scrub_logs_of(self.redactor)

    def transport(self) -> tuple[ClientTransport, Stderrs]:
        stderrs = Stderrs(self.redactor)
        return self._build(stderrs), stderrs

    def redact(self, text: str) -> str:
        """``text`` with every secret this source holds (and any other secret) hidden."""
        return self.redactor.redact(text)


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
    return Source(f"in-memory server {server.name!r}", lambda _: FastMCPTransport(server), set())


def _from_file(file: str | os.PathLike[str]) -> Source:
    if not isinstance(file, str | os.PathLike):
        raise TypeError(f"file must be a path to a server script, not {type(file).__name__}")
    path = Path(file).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"MCP server script not found: {path}")
    kinds = {".py": PythonStdioTransport, ".js": NodeStdioTransport}
    kind = kinds.get(path.suffix)
    if kind is None:
        raise ValueError(f"file must be a .py or .js MCP server script, not {path.name!r}")
    hint = f"Check that the script starts on its own ({path.name}) and prints no errors."
    return Source(
        f"server script {path}", lambda stderrs: stderrs.route(path.name, kind(path)), set(), hint
    )


def _from_url(url: Any, auth: Any, headers: Mapping[str, str] | None) -> Source:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError("url must be an http:// or https:// address, e.g. 'http://host:8000/mcp'")
    secrets = url_secrets(url)
    header_dict = _check_headers(headers)
    secrets |= secret_values(header_dict)
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

    def build(_: Stderrs) -> ClientTransport:
        return kind(url, headers=dict(header_dict), auth=auth)

    hint = "Check that the server is running and that url=, auth= and headers= are right."
    return Source(f"server at {shown_url(url)}", build, secrets, hint)


def _from_config(config: Any) -> Source:
    config, trusted = split_config(config)
    normalized, secrets = check_config(config)
    names = tuple(str(name) for name in normalized["mcpServers"])
    label = "config servers " + ", ".join(map(repr, names))

    def build(stderrs: Stderrs) -> ClientTransport:
        return ConfigTransport(copy.deepcopy(normalized), stderrs)

    hint = "Check each named server's entry in the config (command, args, url, auth)."
    return Source(label, build, secrets, hint, names, trusted)


def _check_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise TypeError("headers must be a dict of str names to str values")
    return dict(headers)
