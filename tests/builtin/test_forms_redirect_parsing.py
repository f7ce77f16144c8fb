"""Same-host redirects are judged by the parsing requests sends with, across real hosts.

Two loopback servers (127.0.0.1 and 127.0.0.2) stand in for a site and an attacker's host.
Every case redirects a POST carrying a form body and a session ``Authorization`` header;
whatever the ``Location`` looks like, the other host must receive nothing.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

import pytest
import requests
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from aimu.tools.builtin import _http
from aimu.tools.builtin._forms import make_web_tools

SECRET = "Bearer session-secret"


class RawSite:
    """A stdlib HTTP server on 127.0.0.1: ``/start`` answers 307 with ``location`` sent byte
    for byte (no framework re-encodes it); any other path echoes the request as JSON."""

    def __init__(self) -> None:
        self.location = ""
        self.paths: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                site.paths.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(parse_qsl(self.rfile.read(length).decode()))
                if self.path == "/start":
                    self.send_response(307)
                    self.send_header("Location", site.location)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps({"host": self.headers["Host"], "form": form}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def start(self, location: str) -> str:
        self.location = location
        return f"http://127.0.0.1:{self.port}/start"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def running_site() -> Iterator[RawSite]:
    site = RawSite()
    yield site
    site.close()


@pytest.fixture
def site(running_site) -> Iterator[RawSite]:
    yield running_site
    running_site.paths.clear()


@pytest.fixture(scope="module")
def running_other() -> Iterator[HTTPServer]:
    with HTTPServer("127.0.0.2", 0, threaded=True) as other:
        yield other


@pytest.fixture
def other(running_other) -> Iterator[HTTPServer]:
    running_other.expect_request("/x").respond_with_handler(_echo)
    yield running_other
    running_other.clear()


@pytest.fixture
def submit_form():
    session = requests.Session()
    session.headers["Authorization"] = SECRET
    return make_web_tools(session=session)[1]


def _echo(request: Request) -> Response:
    body = {"host": request.host, "path": request.full_path, "form": request.form.to_dict()}
    return Response(json.dumps(body), content_type="application/json")


SMUGGLING = {
    "backslash-before-userinfo": "http://127.0.0.2:{P}\\@127.0.0.1:{Q}/x",
    "userinfo-shaped-like-the-site": "http://127.0.0.1:{Q}@127.0.0.2:{P}/x",
    "percent-encoded-host": "http://127.0.0.%32:{P}/x",
    "tab-inside-the-host": "http://127.0.0.2\t:{P}/x",
    "scheme-relative": "//127.0.0.2:{P}/x",
    "upper-case-scheme": "HTTP://127.0.0.2:{P}/x",
    "ipv4-mapped-ipv6": "http://[::ffff:127.0.0.2]:{P}/x",
    "encoded-at-in-userinfo": "http://127.0.0.1:{Q}%40@127.0.0.2:{P}/x",
    "semicolon-userinfo": "http://127.0.0.1:{Q};@127.0.0.2:{P}/x",
}


def _submit_through(site, other, submit_form, template: str) -> str:
    """POST a card number to the site's /start, which redirects to ``template`` filled in;
    the other host must have received nothing, whatever happened."""
    start = site.start(template.format(P=other.port, Q=site.port))
    text = submit_form(start, data={"card": "4111-1111"})
    assert other.log == []
    return text


@pytest.mark.parametrize("template", list(SMUGGLING.values()), ids=list(SMUGGLING))
def test_a_location_naming_another_host_sends_it_nothing(site, other, submit_form, template):
    text = _submit_through(site, other, submit_form, template)

    assert text.startswith("Status: 307"), text
    assert "Not followed:" in text and "Nothing was sent there." in text
    assert site.paths == ["/start"]
    assert SECRET not in text


STAYING = {
    "fragment-shaped-like-a-host": "http://127.0.0.1:{Q}/x#@127.0.0.2:{P}/",
    "query-shaped-like-a-host": "http://127.0.0.1:{Q}/x?@127.0.0.2:{P}/",
    "backslashes-in-the-path": "/\\\\127.0.0.2:{P}/x",
    "upper-case-scheme": "HTTP://127.0.0.1:{Q}/x",
}


@pytest.mark.parametrize("template", list(STAYING.values()), ids=list(STAYING))
def test_a_location_that_stays_on_the_site_is_followed_there(site, other, submit_form, template):
    text = _submit_through(site, other, submit_form, template)

    assert text.startswith("Status: 200"), text
    assert len(site.paths) == 2
    echoed = json.loads(text.split("\n\n", 1)[1])
    assert echoed == {"host": f"127.0.0.1:{site.port}", "form": {"card": "4111-1111"}}


def test_the_default_port_is_the_same_port():
    assert _http.same_host("http://127.0.0.1/a", "http://127.0.0.1:80/b")
    assert _http.same_host("https://Example.COM/a", "https://example.com:443/b")
    assert _http.same_host("http://example.com/a", "https://example.com/b")
    assert not _http.same_host("http://example.com:8080/a", "https://example.com/b")
    assert not _http.same_host("https://example.com/a", "http://example.com/b")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.2:{P}\\@127.0.0.1:{Q}/x",
        "http://127.0.0.%32:{P}/x",
    ],
    ids=["backslash", "percent-encoded-host"],
)
def test_an_ambiguous_address_from_the_model_is_refused_before_sending(site, other, url):
    session = requests.Session()
    session.headers["Authorization"] = SECRET
    find_forms, submit_form, submit_json = make_web_tools(session=session)
    target = url.format(P=other.port, Q=site.port)

    for text in (
        find_forms(target),
        submit_form(target, data={"a": "b"}),
        submit_json(target, {"a": 1}),
    ):
        assert text.startswith("Ambiguous web address:"), text
    assert other.log == [] and site.paths == []


@pytest.mark.parametrize(
    "url",
    [
        "http://bücher.example/katalog",
        "http://[::1]:8080/x",
        "http://user:p%40ss@host.example/",
        "HTTP://Example.COM:80/a?b=@c#@d",
    ],
    ids=["idn", "ipv6", "userinfo", "case-and-default-port"],
)
def test_plain_addresses_of_every_shape_are_not_called_ambiguous(url):
    assert _http.check_url(url) == url
