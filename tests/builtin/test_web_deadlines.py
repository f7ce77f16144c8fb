"""The web tools' timeout bounds a whole response, against real trickling loopback servers."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from aimu.tools.builtin import _http, get_web_content, get_webpage_html, make_web_tools

TIMEOUT = 2.0
MARGIN = 2.0


class Trickler:
    """A TCP server on 127.0.0.1 that answers HTTP one byte per second, for a minute.

    ``headers_first`` sends the status line and headers at once and trickles the body;
    otherwise the headers themselves trickle. ``hung_up`` is set when the client closes.
    """

    def __init__(self, *, headers_first: bool) -> None:
        self.headers_first = headers_first
        self.hung_up = threading.Event()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def url(self, path: str = "/slow") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _serve(self) -> None:
        conn, _ = self._listener.accept()
        with conn:
            conn.recv(65536)
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 60\r\n\r\n"
            body = b"<p>" + b"x" * 53 + b"</p>"
            if self.headers_first:
                conn.sendall(head)
                trickle = body
            else:
                trickle = head + body
            for byte in trickle:
                if self._stop.wait(1.0):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    self.hung_up.set()
                    return
                if _peer_closed(conn):
                    self.hung_up.set()
                    return

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        self._thread.join(5)


def _peer_closed(conn: socket.socket) -> bool:
    conn.setblocking(False)
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        conn.setblocking(True)


@pytest.fixture(params=[True, False], ids=["trickled-body", "trickled-headers"])
def trickler(request) -> Iterator[Trickler]:
    server = Trickler(headers_first=request.param)
    yield server
    server.close()


def _timed(fn, *args, **kwargs) -> tuple[str, float]:
    start = time.monotonic()
    out = fn(*args, **kwargs)
    return out, time.monotonic() - start


@pytest.mark.parametrize("reader", [get_web_content, get_webpage_html])
def test_a_reader_gives_up_on_a_trickling_server_near_its_timeout(monkeypatch, trickler, reader):
    monkeypatch.setattr(_http, "TIMEOUT_SECONDS", TIMEOUT)

    out, took = _timed(reader, trickler.url())

    assert out.startswith(f"Timed out after {TIMEOUT:g} s"), out
    assert f"127.0.0.1:{trickler.port}" in out
    assert TIMEOUT - 0.5 <= took < TIMEOUT + MARGIN


def test_the_abandoned_connection_is_closed_not_left_reading(monkeypatch):
    monkeypatch.setattr(_http, "TIMEOUT_SECONDS", TIMEOUT)
    server = Trickler(headers_first=True)
    try:
        out = get_web_content(server.url())
        assert "had not finished sending" in out
        assert server.hung_up.wait(3.0), "the server kept sending to a reader nobody waits for"
    finally:
        server.close()


@pytest.mark.parametrize("tool_index", [0, 1, 2], ids=["find_forms", "submit_form", "submit_json"])
def test_form_tools_give_up_on_a_trickling_server_near_their_timeout(trickler, tool_index):
    tool = make_web_tools(timeout=TIMEOUT)[tool_index]
    args = {
        0: (trickler.url(),),
        1: (trickler.url(), "POST", {"a": "b"}),
        2: (trickler.url(), {"a": 1}),
    }

    out, took = _timed(tool, *args[tool_index])

    assert f"Timed out after {TIMEOUT:g} s" in out, out
    assert took < TIMEOUT + MARGIN
