"""An ``mcpServers`` config as a connection: every server must start, or the connection fails.

FastMCP's config transport skips a server that fails to connect (logging a warning with a
traceback) and goes on with the others, so an agent silently loses that server's tools. Here
the connection fails instead, with :class:`ServersFailed` naming each server that did not
start: the user listed the servers they need, and a partial tool set changes what the agent
can do without anyone noticing. Each stdio server's stderr goes to the connection's
:class:`Stderrs`, so the error can say why a server exited.
"""

from __future__ import annotations

import contextvars
import copy
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types
from fastmcp.client.transports import ClientTransport
from fastmcp.client.transports.config import MCPConfigTransport
from fastmcp.mcp_config import MCPConfig
from pydantic import ValidationError

from aimu.secrets import secret_values, url_secrets
from aimu.tools.mcp._stderr import Stderrs


class ServersFailed(ConnectionError):
    """Servers of a config that did not start, by name, with the exception of each."""

    def __init__(self, failures: Mapping[str, BaseException]):
        super().__init__("MCP servers failed to start: " + ", ".join(map(repr, failures)))
        self.failures = dict(failures)


def check_config(config: Any) -> tuple[dict[str, Any], set[str]]:
    """The config normalized to ``{"mcpServers": {...}}``, and the secrets it holds.

    Raises ``TypeError`` / ``ValueError`` for a config FastMCP would refuse, without quoting it.
    """
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
    return normalized, secrets


def _entry_secrets(entry: Mapping[str, Any]) -> set[str]:
    """The auth token, and the values of secret-named headers and ``env`` variables."""
    secrets = secret_values(entry.get("env")) | secret_values(entry.get("headers"))
    auth = entry.get("auth")
    if isinstance(auth, str) and auth != "oauth":
        secrets.add(auth.removeprefix("Bearer ").strip())
    if isinstance(entry.get("url"), str):
        secrets |= url_secrets(entry["url"])
    return secrets


_failures: contextvars.ContextVar[dict[str, BaseException] | None] = contextvars.ContextVar(
    "aimu_mcp_config_failures", default=None
)


class ConfigTransport(MCPConfigTransport):
    """FastMCP's config transport, failing when any server fails, stderr sent to ``stderrs``.

    With several servers FastMCP puts a proxy in front of them, which forwards a server's
    ``list_changed`` notifications only while it relays a request (otherwise it raises, and
    the SDK prints the traceback on stderr). Here a server's changed tool list calls
    ``tools_changed`` instead, whenever it comes.
    """

    def __init__(self, config: dict[str, Any], stderrs: Stderrs):
        self._stderrs = stderrs
        self.tools_changed: Callable[[], None] = _nothing
        super().__init__(config)
        if len(self.config.mcpServers) == 1:
            stderrs.route(next(iter(self.config.mcpServers)), self.transport)

    def _prepare_transports(self) -> dict[str, ClientTransport]:
        transports = super()._prepare_transports()
        for name, transport in transports.items():
            self._stderrs.route(name, transport)
        return transports

    async def _build_composite(self, *args: Any, **kwargs: Any) -> Any:
        failures: dict[str, BaseException] = {}
        token = _failures.set(failures)
        try:
            built = await super()._build_composite(*args, **kwargs)
        except ConnectionError:  # every server failed
            if not failures:
                raise
            built = None
        finally:
            _failures.reset(token)
        if failures:
            raise ServersFailed(failures)
        return built

    async def _create_proxy(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            built = await super()._create_proxy(name, *args, **kwargs)
        except Exception as exc:
            failures = _failures.get()
            if failures is not None:
                failures[name] = exc
            raise
        _, client, _ = built
        session = client.session
        forward = getattr(session, "_message_handler", None)
        if forward is not None:
            session._message_handler = self._list_changes_here(forward)
        return built

    def _list_changes_here(self, forward: Callable[[Any], Awaitable[None]]) -> Any:
        """A backend session's message handler that keeps list changes from the proxy."""

        async def handle(message: Any) -> None:
            if isinstance(message, mcp_types.ToolListChangedNotification):
                self.tools_changed()
            elif not isinstance(message, _LIST_CHANGES):
                await forward(message)

        return handle


_LIST_CHANGES = (
    mcp_types.ToolListChangedNotification,
    mcp_types.ResourceListChangedNotification,
    mcp_types.PromptListChangedNotification,
)


def _nothing() -> None:
    pass


class _DropSkipWarning(logging.Filter):
    """FastMCP's "Failed to connect to MCP server, skipping" (with a traceback), while a
    :class:`ConfigTransport` is about to report that failure itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _failures.get() is None or not str(record.msg).startswith("Failed to connect")


logging.getLogger("fastmcp.client.transports.config").addFilter(_DropSkipWarning())
