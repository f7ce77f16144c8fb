"""Loopback HTTP servers that speak the providers' real streaming wire formats.

A :class:`WireServer` answers each request with the next scripted :class:`Reply` (or its
default) and records every request, so a test can assert exactly what a client sent. The
builders produce the byte streams the providers document: Chat Completions SSE with
tool-call deltas, Anthropic Messages SSE events, Ollama NDJSON.

Run ``python tests/providers/provider_wire.py openai|anthropic|ollama`` to serve one canned turn
forever (the benchmarks do; ``openai-agent`` answers a one-tool-call agent run); it prints the
base URL on its first line. ``connections`` counts the TCP connections the server accepted,
``hung_up`` is released as each one ends.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aimu.models.base import GenerationOptions, ModelClient, ModelEvent


@dataclass
class Reply:
    """One scripted HTTP response, written piece by piece (chunked) when streamed.

    ``gate``: before writing piece ``gate_at`` the server waits for the event (the test sets
    it, or the server does on close). ``drop_at``: the connection is closed before that piece.
    ``pieces`` may be an endless iterator (keep-alives until the client hangs up), written
    ``interval`` seconds apart.
    """

    status: int = 200
    pieces: Iterable[bytes] = field(default_factory=list)
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    gate: threading.Event | None = None
    gate_at: int = 0
    drop_at: int | None = None
    streamed: bool = True
    interval: float = 0.0


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class WireServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 with an ephemeral port."""

    def __init__(self, default: Reply | Callable[[Request], Reply] | None = None, port: int = 0):
        self.default = default
        self.connections = 0
        self.hung_up = threading.Semaphore(0)  # released once per connection the client closed
        self.requests: list[Request] = []
        self._replies: deque[Reply] = deque()
        self._gates: list[threading.Event] = []
        self._closing = threading.Event()
        self._open: set[socket.socket] = set()
        self.served = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                server.connections += 1
                server._open.add(self.connection)
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def finish(self) -> None:
                server._open.discard(self.connection)
                super().finish()
                server.hung_up.release()

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.requests.append(Request(self.command, self.path, headers, body))
                reply = server._next(server.requests[-1])
                try:
                    self._write(reply)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                finally:
                    server.served.set()

            def _write(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if not reply.streamed:
                    data = b"".join(reply.pieces)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for index, piece in enumerate(reply.pieces):
                    if reply.gate is not None and index == reply.gate_at:
                        self.wfile.flush()
                        reply.gate.wait()
                    if reply.drop_at is not None and index == reply.drop_at:
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    if reply.interval and index:
                        self.wfile.flush()
                        if server._closing.wait(reply.interval):
                            self.close_connection = True
                            return
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._server = _QuietServer(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def script(self, *replies: Reply) -> WireServer:
        """Queue replies, answered in order before the default."""
        for reply in replies:
            if reply.gate is not None:
                self._gates.append(reply.gate)
        self._replies.extend(replies)
        return self

    def _next(self, request: Request) -> Reply:
        if self._replies:
            return self._replies.popleft()
        if callable(self.default):
            return self.default(request)
        if self.default is not None:
            return self.default
        return json_error(500, {"error": {"message": "no scripted reply left"}})

    @property
    def bodies(self) -> list[Any]:
        return [r.json for r in self.requests]

    def close(self) -> None:
        self._closing.set()
        for gate in self._gates:
            gate.set()
        self._server.shutdown()
        self._server.server_close()
        # A kept-alive connection would outlive the server: a client cached by URL (the sync
        # driver keeps one per thread) could then reach this server's script from a later
        # test whose server got the same port.
        for connection in list(self._open):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> WireServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _QuietServer(ThreadingHTTPServer):
    """Clients hanging up on a kept-alive connection is normal here, not worth a traceback."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def json_error(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    """A plain JSON error response (retry hints go in ``headers``)."""
    return Reply(status, [json.dumps(body).encode()], headers=headers or {}, streamed=False)


def _split(text: str, parts: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


# --- OpenAI Chat Completions -------------------------------------------------------------


def openai_chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> dict:
    """One ``chat.completion.chunk`` object (``delta=None`` for the usage-only chunk)."""
    chunk: dict[str, Any] = {
        "id": "chatcmpl-wire",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "wire-model",
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    chunk.update(extra)
    return chunk


def openai_sse(chunks: list[dict[str, Any]], *, done: bool = True, **reply: Any) -> Reply:
    pieces = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks]
    if done:
        pieces.append(b"data: [DONE]\n\n")
    return Reply(pieces=pieces, content_type="text/event-stream", **reply)


def openai_turn(
    text: str = "",
    tool_calls: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    *,
    reasoning: str = "",
    usage: tuple[int, int] = (12, 7),
    parts: int = 3,
    **reply: Any,
) -> Reply:
    """A whole turn as OpenAI streams it; ``tool_calls`` are ``(id, name, arguments_text)``."""
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"reasoning_content": p}) for p in _split(reasoning, parts)]
    chunks += [openai_chunk({"content": p}) for p in _split(text, parts)]
    for index, (call_id, name, arguments) in enumerate(tool_calls):
        first = {"index": index, "id": call_id, "type": "function"}
        first["function"] = {"name": name, "arguments": ""}
        chunks.append(openai_chunk({"tool_calls": [first]}))
        for fragment in _split(arguments, parts):
            chunks.append(
                openai_chunk(
                    {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
                )
            )
    chunks.append(openai_chunk({}, "tool_calls" if tool_calls else "stop"))
    chunks.append(
        openai_chunk(
            None,
            usage={
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": sum(usage),
            },
        )
    )
    return openai_sse(chunks, **reply)


# --- Anthropic Messages ------------------------------------------------------------------


def anthropic_sse(events: list[dict[str, Any]], **reply: Any) -> Reply:
    pieces = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    return Reply(pieces=pieces, content_type="text/event-stream", **reply)


def anthropic_turn(
    text: str = "",
    tool_uses: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    *,
    thinking: str = "",
    usage: tuple[int, int] = (12, 7),
    stop_reason: str | None = None,
    parts: int = 3,
    **reply: Any,
) -> Reply:
    """A whole turn as the Messages API streams it; ``tool_uses`` are ``(id, name, json)``."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_wire",
                "type": "message",
                "role": "assistant",
                "model": "wire-model",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": usage[0], "output_tokens": 1},
            },
        }
    ]
    index = 0
    if thinking:
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
        )
        for piece in _split(thinking, parts):
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "thinking_delta", "thinking": piece},
                }
            )
        events.append(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": "sig-wire"},
            }
        )
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    events.append({"type": "ping"})
    if text:
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
        )
        for piece in _split(text, parts):
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    for tool_id, name, arguments in tool_uses:
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}},
            }
        )
        for piece in _split(arguments, parts):
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    events.append(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": stop_reason or ("tool_use" if tool_uses else "end_turn"),
                "stop_sequence": None,
            },
            "usage": {"output_tokens": usage[1]},
        }
    )
    events.append({"type": "message_stop"})
    return anthropic_sse(events, **reply)


# --- Ollama ------------------------------------------------------------------------------


def ollama_ndjson(lines: list[dict[str, Any]], **reply: Any) -> Reply:
    pieces = [json.dumps(line).encode() + b"\n" for line in lines]
    return Reply(pieces=pieces, content_type="application/x-ndjson", **reply)


def ollama_turn(
    text: str = "",
    tool_calls: list[tuple[str, dict[str, Any]]] = (),  # type: ignore[assignment]
    *,
    thinking: str = "",
    usage: tuple[int, int] = (12, 7),
    parts: int = 3,
    **reply: Any,
) -> Reply:
    """A whole turn as Ollama's /api/chat streams it; ``tool_calls`` are ``(name, args)``."""

    def line(message: dict[str, Any], done: bool = False, **extra: Any) -> dict[str, Any]:
        return {
            "model": "wire-model",
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "", **message},
            "done": done,
            **extra,
        }

    lines = [line({"thinking": p}) for p in _split(thinking, parts)]
    lines += [line({"content": p}) for p in _split(text, parts)]
    if tool_calls:
        lines.append(
            line(
                {
                    "tool_calls": [
                        {"function": {"index": i, "name": name, "arguments": arguments}}
                        for i, (name, arguments) in enumerate(tool_calls)
                    ]
                }
            )
        )
    lines.append(
        line(
            {},
            True,
            done_reason="stop",
            total_duration=1000,
            load_duration=10,
            prompt_eval_count=usage[0],
            prompt_eval_duration=100,
            eval_count=usage[1],
            eval_duration=100,
        )
    )
    return ollama_ndjson(lines, **reply)


# --- test helpers ------------------------------------------------------------------------


async def collect(
    client: ModelClient,
    messages: list[dict[str, Any]],
    tools: list[dict] | None = None,
    options: GenerationOptions | None = None,
) -> list[ModelEvent]:
    return [event async for event in client.stream(messages, tools, options)]


def tool_spec(name: str = "add", **properties: Any) -> dict[str, Any]:
    properties = properties or {"a": {"type": "integer"}, "b": {"type": "integer"}}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": sorted(properties),
                "additionalProperties": False,
            },
        },
    }


def openai_agent_reply(request: Request) -> Reply:
    """A one-tool-call agent run: a call to ``add`` first, the answer once its result is in.

    Streamed when the request asks for a stream, else one ``chat.completion`` object.
    """
    body = request.json or {}
    answered = (body.get("messages") or [{}])[-1].get("role") == "tool"
    if body.get("stream"):
        if answered:
            return openai_turn("The answer is 42.")
        return openai_turn("", [("call_1", "add", '{"a": 40, "b": 2}')])
    message: dict[str, Any] = {"role": "assistant", "content": "The answer is 42."}
    if not answered:
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 40, "b": 2}'},
            }
        ]
    completion = {
        "id": "chatcmpl-wire",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "wire-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "stop" if answered else "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    }
    return Reply(pieces=[json.dumps(completion).encode()], streamed=False)


def lookup_reply(request: Request) -> Reply:
    """An agent run with one ``lookup`` call, streamed: a request offering tools asks for
    ``lookup``; once its result is in, the answer quotes it; a request with a JSON schema
    is answered with JSON; one without tools answers the last user message."""
    body = request.json or {}
    last = (body.get("messages") or [{}])[-1]
    if "response_format" in body:
        return openai_turn('{"value": 42}')
    if last.get("role") == "tool":
        return openai_turn(f"The lookup said {last.get('content')}.")
    if body.get("tools"):
        return openai_turn("", [("call_7", "lookup", '{"topic": "sales"}')])
    return openai_turn(f"Answer to: {last.get('content')}")


CANNED = {
    "openai-agent": lambda: openai_agent_reply,
    "openai": lambda: openai_turn(
        "The answer is forty-two, as computed.", [("call_1", "add", '{"a": 40, "b": 2}')]
    ),
    "anthropic": lambda: anthropic_turn(
        "The answer is forty-two, as computed.", [("toolu_1", "add", '{"a": 40, "b": 2}')]
    ),
    "ollama": lambda: ollama_turn(
        "The answer is forty-two, as computed.", [("add", {"a": 40, "b": 2})]
    ),
}


def main() -> None:
    server = WireServer(default=CANNED[sys.argv[1]]())
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
