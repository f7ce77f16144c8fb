"""``acp:<command line>``: an outside coding agent, reached over the Agent Client Protocol.

``aimu.client("acp:npx @zed-industries/claude-code-acp")`` starts the command as a
subprocess speaking ACP on its stdio (through the ``agent-client-protocol`` SDK), opens a
session in the working folder and sends each turn's new user messages as one prompt. What the
agent streams comes back as the loop's events: message text, thoughts, plans, the tool calls
it runs itself (:class:`~aimu.models.base.OutsideToolCall`, with their output and file
diffs), and its permission requests (:class:`~aimu.models.base.PermissionRequest`), which the
loop puts to the run's approval policy. The session lives as long as the client: the next
turn continues it (:meth:`ACPClient.clone` starts another).

The agent runs in a session of its own (``start_new_session``): a kernel interrupt, a
SIGINT to the kernel's whole process group, does not kill it. Stopping a turn sends ACP's
``session/cancel`` instead and waits up to ``settle_seconds`` for the agent to end the turn;
an agent that does not is killed. The agent inherits the environment (it needs its own
login). The client offers none of ACP's file-system or terminal methods (its capabilities
say so and the methods answer "method not found"): the agent reads and writes with its own
tools, and asks permission first. The run's own tools, when a turn has any, are offered to
the agent as an MCP server on loopback (:mod:`aimu.models.providers._acp_tools`), if the
agent takes MCP over HTTP.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import shlex
import signal
import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from aimu.models.base import (
    GenerationOptions,
    HostedToolCall,
    ModelClient,
    ModelEvent,
    OutsideToolCall,
    PermissionRequest,
    PlanUpdate,
    TextDelta,
    ThinkingDelta,
    TurnEnd,
    Usage,
)
from aimu.models.errors import (
    AuthenticationError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ProviderNotInstalledError,
    UnsupportedOptionError,
)
from aimu.secrets import redact

#: Seconds a cancelled turn waits for the agent to end it before the agent is killed.
SETTLE_SECONDS = 10.0
#: Seconds the agent has to answer ``initialize`` and ``session/new``.
START_SECONDS = 60.0
#: Lines of the agent's stderr kept for an error message.
STDERR_LINES = 20
_STREAM_LIMIT = 50 * 1024 * 1024
_END = object()
_STOPS = {"end_turn": "stop"}


def _sdk() -> Any:
    try:
        import acp
    except ImportError:
        raise ProviderNotInstalledError(
            "the acp provider needs the 'agent-client-protocol' package: "
            "pip install 'aimu-jupyter[acp]'"
        ) from None
    return acp


class _AgentTool:
    """What the run's policy is shown as the tool behind an agent's permission request.

    It writes, executes or submits (the agent asked first), so it asks; its spec names the
    agent and the call, so "Always allow" covers calls of that title by that agent only.
    """

    __tool_read_only__ = False

    def __init__(self, agent: str, name: str, kind: str | None):
        description = f"a {kind or 'tool'} call of the ACP agent {agent}"
        self.__tool_spec__ = {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": {}},
        }


@dataclass
class _Turn:
    """One prompt in flight: its events in order, and the questions the agent is waiting on."""

    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    waiting: set[asyncio.Future] = field(default_factory=set)

    def wait_for(self, future: asyncio.Future) -> asyncio.Future:
        self.waiting.add(future)
        future.add_done_callback(self.waiting.discard)
        return future

    def close(self) -> None:
        """Answer every open question: a cancelled turn's requests are cancelled (ACP)."""
        for future in list(self.waiting):
            if not future.done():
                future.set_result(None)


class _Link:
    """One running agent process, its connection and its session."""

    def __init__(self, process: Any, conn: Any, loop: asyncio.AbstractEventLoop):
        self.process = process
        self.conn = conn
        self.loop = loop
        self.session_id = ""
        self.fresh = True
        self.can_load = False
        self.takes_http_mcp = False
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self.reader: asyncio.Task | None = None
        self._reap = weakref.finalize(self, _kill_group, process.pid)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def ended(self, seconds: float = 2.0) -> None:
        """Wait (briefly) for the process to exit and its stderr to be read to the end."""
        waits = [asyncio.ensure_future(self.process.wait())]
        if self.reader is not None:
            waits.append(self.reader)
        await asyncio.wait(waits, timeout=seconds)

    def kill(self) -> None:
        """Kill the agent's process group now (it runs in a session of its own)."""
        self._reap()
        if self.reader is not None:
            self.reader.cancel()

    def close_soon(self) -> None:
        """Close the connection on its loop, for a caller that cannot await: its reader and
        sender tasks then end instead of being destroyed while pending."""
        if self.loop.is_running():
            asyncio.run_coroutine_threadsafe(_quietly(self.conn.close()), self.loop)

    async def close(self) -> None:
        """End the agent: close its stdin, wait briefly, then kill it."""
        with contextlib.suppress(Exception):
            await self.conn.close()
        with contextlib.suppress(Exception):
            self.process.stdin.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.process.wait(), 2.0)
        self.kill()
        with contextlib.suppress(Exception):
            await self.process.wait()


async def _quietly(closing: Any) -> None:
    with contextlib.suppress(Exception):
        await closing


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, signal.SIGKILL)


class _Handler:
    """The client side of ACP the agent calls: session updates and permission requests.

    File-system and terminal methods are not defined: the SDK answers "method not found",
    as the capabilities sent in ``initialize`` declared.
    """

    def __init__(self, owner: ACPClient):
        self._owner = owner

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self._owner._on_update(update)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> Any:
        return await self._owner._on_permission(tool_call, options)

    def on_connect(self, conn: Any) -> None:
        pass


class ACPClient(ModelClient):
    """A :class:`ModelClient` whose model is an outside agent run by ``command`` over ACP.

    ``command`` is a shell-style command line (or an argv list); ``cwd`` the session's folder
    (default: the working directory when the session opens); ``env`` variables laid over the
    inherited environment. ``tool_server`` (an :class:`~aimu.models.providers._acp_tools.
    ToolServer`, made on demand) offers the run's own tools to the agent over MCP.
    """

    provider = "acp"
    holds_session = True

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | os.PathLike | None = None,
        env: dict[str, str] | None = None,
        settle_seconds: float = SETTLE_SECONDS,
        start_seconds: float = START_SECONDS,
    ):
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ModelNotFoundError(
                "acp: give the agent's command line, e.g. "
                "aimu.client('acp:npx @zed-industries/claude-code-acp')"
            )
        self.argv = argv
        self.model = shlex.join(argv)
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.env = dict(env or {})
        self.settle_seconds = settle_seconds
        self.start_seconds = start_seconds
        self._link: _Link | None = None
        self._turn: _Turn | None = None
        self._calls: dict[str, dict[str, Any]] = {}
        self._session_id = ""
        self._tool_server: Any = None
        #: The agent's name and version, as it told them in ``initialize``.
        self.agent_info: dict[str, str] = {}

    @property
    def sees_images(self) -> bool:
        return False

    def clone(self) -> ACPClient:
        return ACPClient(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            settle_seconds=self.settle_seconds,
            start_seconds=self.start_seconds,
        )

    async def aclose(self) -> None:
        """End the agent process and the session; the next turn opens a new one."""
        self._session_id = ""
        link, self._link = self._link, None
        if link is not None:
            await link.close()
        if self._tool_server is not None:
            await self._tool_server.aclose()
            self._tool_server = None

    def close(self) -> None:
        """Kill the agent process now and end the session, from code that cannot await."""
        self._session_id = ""
        link, self._link = self._link, None
        if link is not None:
            link.kill()
            link.close_soon()
        if self._tool_server is not None:
            self._tool_server.close()
            self._tool_server = None

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        options: GenerationOptions | None = None,
    ) -> AsyncIterator[ModelEvent]:
        _refuse(options)
        acp = _sdk()
        link = await self._connect(tools)
        if tools and self._tool_server is not None:
            self._tool_server.offer(tools)
        text = _prompt_text(messages, fresh=link.fresh)
        turn = self._turn = _Turn()
        self._calls.clear()
        prompt = asyncio.ensure_future(
            link.conn.prompt(session_id=link.session_id, prompt=[acp.text_block(text)])
        )
        prompt.add_done_callback(lambda _: turn.queue.put_nowait(_END))
        link.fresh = False
        try:
            while (event := await turn.queue.get()) is not _END:
                yield event
            response = await self._result(link, prompt)
        finally:
            self._turn = None
            turn.close()
            if not prompt.done():
                await self._cancel(link, prompt)
        usage = getattr(response, "usage", None)
        stop = str(getattr(response, "stop_reason", "end_turn"))
        yield TurnEnd(
            Usage(getattr(usage, "input_tokens", 0), getattr(usage, "output_tokens", 0)),
            _STOPS.get(stop, stop),
        )

    # -- the agent process -----------------------------------------------------------------

    async def _connect(self, tools: list[dict[str, Any]] | None) -> _Link:
        """The running agent and its session, started (or restarted) as needed."""
        loop = asyncio.get_running_loop()
        link = self._link
        if link is not None and link.alive and link.loop is loop:
            return link
        if link is not None:
            link.kill()  # gone, or bound to another event loop
        acp = _sdk()
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env={**os.environ, **self.env},
                start_new_session=True,
                limit=_STREAM_LIMIT,
            )
        except FileNotFoundError:
            raise ModelNotFoundError(
                f"the ACP agent command {self.argv[0]!r} was not found: install the agent or "
                f"give its full path (--model acp:{self.model})"
            ) from None
        except PermissionError:
            raise ModelNotFoundError(
                f"the ACP agent command {self.argv[0]!r} cannot be run (permission denied)"
            ) from None
        conn = acp.connect_to_agent(_Handler(self), process.stdin, process.stdout)
        link = _Link(process, conn, loop)
        link.reader = asyncio.ensure_future(_read_lines(process.stderr, link.stderr))
        try:
            await asyncio.wait_for(self._open_session(acp, link, tools), self.start_seconds)
        except BaseException as exc:
            await link.close()
            if isinstance(exc, TimeoutError):
                raise ModelConnectionError(
                    f"the ACP agent {self.model!r} did not open a session within "
                    f"{self.start_seconds:g} s{_tail(link)}"
                ) from None
            if isinstance(exc, acp.RequestError | ConnectionError | OSError):
                raise self._failure(exc, link, "could not start") from None
            raise
        self._link = link
        return link

    async def _open_session(self, acp: Any, link: _Link, tools: list | None) -> None:
        from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

        offered = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
            terminal=False,
        )
        hello = await link.conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=offered,
            client_info=Implementation(name="aimu-jupyter", version=_version()),
        )
        caps = hello.agent_capabilities
        link.can_load = bool(caps and caps.load_session)
        link.takes_http_mcp = bool(caps and caps.mcp_capabilities and caps.mcp_capabilities.http)
        info = hello.agent_info
        if info is not None:
            self.agent_info = {"name": info.name, "version": info.version}
        servers = await self._mcp_servers(link, tools) if tools else []
        cwd = self.cwd or os.getcwd()
        if self._session_id and link.can_load:
            await link.conn.load_session(cwd=cwd, session_id=self._session_id, mcp_servers=servers)
            link.fresh = False
        else:
            opened = await link.conn.new_session(cwd=cwd, mcp_servers=servers)
            self._session_id = opened.session_id
        link.session_id = self._session_id

    async def _mcp_servers(self, link: _Link, tools: list[dict[str, Any]]) -> list[Any]:
        """The run's tools as an MCP server the session gets (when the agent takes HTTP)."""
        if not link.takes_http_mcp:
            return []
        from aimu.models.providers._acp_tools import ToolServer

        if self._tool_server is None:
            self._tool_server = ToolServer(self._hosted)
        return [await self._tool_server.descriptor(tools)]

    async def _hosted(self, call: Any) -> tuple[str, bool]:
        """A call the agent made of one of the run's tools: the loop runs it; its result."""
        turn = self._turn
        if turn is None:
            return "Not executed: no run is going on to answer this call.", True
        future = turn.wait_for(asyncio.get_running_loop().create_future())
        turn.queue.put_nowait(
            HostedToolCall(call, lambda text, failed: _settle(future, (text, failed)))
        )
        answer = await future
        return answer if answer is not None else ("Not executed: the run was stopped.", True)

    async def _cancel(self, link: _Link, prompt: asyncio.Future) -> None:
        """Send ``session/cancel`` and wait for the agent to end the turn; kill it if it
        does not within ``settle_seconds``."""
        try:
            await link.conn.cancel(session_id=link.session_id)
            await asyncio.wait({prompt}, timeout=self.settle_seconds)
        except Exception:
            pass
        if not prompt.done():
            prompt.cancel()
            link.kill()
            if self._link is link:
                self._link = None
        with contextlib.suppress(BaseException):
            await prompt

    async def _result(self, link: _Link, prompt: asyncio.Future) -> Any:
        acp = _sdk()
        try:
            return prompt.result()
        except (acp.RequestError, ConnectionError, OSError) as exc:
            if not isinstance(exc, acp.RequestError):
                await link.ended()  # a hang-up: let the exit code and last words come in
            if not link.alive and self._link is link:
                self._link = None
            raise self._failure(exc, link, "failed") from None

    def _failure(self, exc: BaseException, link: _Link, what: str) -> ModelError:
        """The error to raise for an agent that refused, crashed or hung up."""
        code = getattr(exc, "code", None)
        detail = getattr(exc, "data", None)
        message = str(exc) + (f" ({detail})" if detail else "")
        if code == -32000:
            return AuthenticationError(
                f"the ACP agent {self.model!r} needs you to log in first ({message}): run "
                f"its login command in a terminal, then run the cell again{_tail(link)}"
            )
        if code is not None:
            return ModelError(f"the ACP agent {self.model!r} {what}: {message}{_tail(link)}")
        exited = link.process.returncode
        if exited is not None:
            return ModelConnectionError(
                f"the ACP agent {self.model!r} exited with code {exited}{_tail(link)}"
            )
        return ModelConnectionError(f"the ACP agent {self.model!r} {what}: {message}")

    # -- what the agent sends ----------------------------------------------------------------

    def _on_update(self, update: Any) -> None:
        turn = self._turn
        if turn is None:
            return  # an update outside a prompt (a replayed session): nothing shows it
        event = self._event(update)
        if event is not None:
            turn.queue.put_nowait(event)

    def _event(self, update: Any) -> ModelEvent | None:
        kind = getattr(update, "session_update", "")
        if kind == "agent_message_chunk":
            return TextDelta(_block_text(update.content))
        if kind == "agent_thought_chunk":
            return ThinkingDelta(_block_text(update.content))
        if kind in ("tool_call", "tool_call_update"):
            return self._tool_call(update)
        if kind == "plan":
            return PlanUpdate(
                tuple(
                    {"content": e.content, "status": e.status, "priority": e.priority}
                    for e in update.entries
                )
            )
        return None

    def _tool_call(self, update: Any) -> OutsideToolCall:
        state = self._calls.setdefault(
            update.tool_call_id,
            {"title": "tool call", "kind": None, "status": "pending", "content": [], "input": None},
        )
        for name, key in (
            ("title", "title"),
            ("kind", "kind"),
            ("status", "status"),
            ("content", "content"),
            ("raw_input", "input"),
        ):
            value = getattr(update, name, None)
            if value is not None:
                state[key] = value
        texts, diffs = [], []
        for item in state["content"] or ():
            if getattr(item, "type", "") == "diff":
                diffs.append({"path": item.path, "old": item.old_text, "new": item.new_text})
            elif getattr(item, "type", "") == "content":
                texts.append(_block_text(item.content))
            else:
                texts.append(f"[terminal {getattr(item, 'terminal_id', '')}]")
        raw = state["input"]
        arguments = raw if isinstance(raw, dict) else ({} if raw is None else {"input": raw})
        return OutsideToolCall(
            id=update.tool_call_id,
            name=str(state["title"]),
            arguments=arguments,
            status=str(state["status"]),
            output="\n".join(t for t in texts if t),
            diffs=tuple(diffs),
        )

    async def _on_permission(self, tool_call: Any, options: list[Any]) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        turn = self._turn
        call = self._tool_call(tool_call)
        state = self._calls[call.id]
        chosen = None
        if turn is not None:
            future = turn.wait_for(asyncio.get_running_loop().create_future())
            arguments = {
                **call.arguments,
                "agent offers": [f"{o.name} ({o.kind})" for o in options],
            }
            turn.queue.put_nowait(
                PermissionRequest(
                    id=call.id,
                    name=call.name,
                    arguments=arguments,
                    tool=_AgentTool(self.model, call.name, state["kind"]),
                    answer=lambda ok, always, _reason: _settle(future, _pick(options, ok, always)),
                )
            )
            chosen = await future
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )


def _pick(options: list[Any], approved: bool, always: bool) -> str | None:
    """The agent's option matching the decision (``None``: no such option, so cancelled)."""
    if approved:
        kinds = ("allow_always", "allow_once") if always else ("allow_once", "allow_always")
    else:
        kinds = ("reject_once", "reject_always")
    for kind in kinds:
        for option in options:
            if option.kind == kind:
                return option.option_id
    return None


def _settle(future: asyncio.Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _block_text(block: Any) -> str:
    """The text of an ACP content block; other kinds are named, not shown."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind == "resource_link":
        return f"[{getattr(block, 'name', '') or getattr(block, 'uri', '')}]"
    return f"[{kind or 'content'}]"


def _prompt_text(messages: list[dict[str, Any]], fresh: bool) -> str:
    """The user messages since the agent last answered; for a new session, what came before."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    new = [_content(m) for m in messages[last + 1 :] if m.get("role") == "user"]
    if not new:
        raise ModelError("acp: there is no new user message to send to the agent")
    if not fresh:
        return "\n\n".join(new)
    before = []
    for message in messages[: last + 1]:
        role = message.get("role")
        if role == "system":
            before.append(_content(message))
        elif role in ("user", "assistant") and _content(message):
            before.append(f"[{role}] {_content(message)}")
    if not before:
        return "\n\n".join(new)
    return "\n\n".join(["Earlier in this conversation:", *before, "Now:", *new])


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _refuse(options: GenerationOptions | None) -> None:
    if options is None:
        return
    asked = [
        name
        for name, given in (
            ("thinking", options.thinking is not None),
            ("generate options", bool(options.generate_kwargs)),
            ("a response schema", options.response_format is not None),
        )
        if given
    ]
    if asked:
        raise UnsupportedOptionError(
            f"acp: an outside agent chooses its own model settings; {', '.join(asked)} "
            "cannot be given to it"
        )


async def _read_lines(stream: Any, kept: collections.deque[str]) -> None:
    """Keep the last lines the agent wrote to stderr (read always, so it never blocks)."""
    with contextlib.suppress(Exception):
        while line := await stream.readline():
            kept.append(line.decode("utf-8", "replace").rstrip())


def _tail(link: _Link) -> str:
    """The agent's last stderr lines, secrets hidden, for an error message."""
    lines = [line for line in link.stderr if line.strip()]
    if not lines:
        return ""
    text = redact("\n".join(lines[-5:]))
    return f". It said:\n{text}"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("aimu-jupyter")
    except PackageNotFoundError:
        return "0"


def from_spec(model: str = "", **options: Any) -> ACPClient:
    """Factory behind ``aimu.client("acp:<command line>")``."""
    return ACPClient(model, **options)
