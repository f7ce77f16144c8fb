"""make_web_tools: find_forms, submit_form and submit_json against real loopback servers.

Two servers on two loopback addresses (127.0.0.1 and 127.0.0.2) stand in for two hosts, so
the redirect policy is tested across a real host boundary.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import threading
from collections.abc import Iterator

import pytest
import requests
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from aimu import Agent
from aimu.models.base import ToolCallRequest
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.tools.approval import Denied
from aimu.tools.builtin._forms import make_web_tools
from aimu.tools.dispatch import dispatch


@pytest.fixture(scope="module")
def running_servers() -> Iterator[tuple[HTTPServer, HTTPServer]]:
    with (
        HTTPServer("127.0.0.1", 0, threaded=True) as site,
        HTTPServer("127.0.0.2", 0, threaded=True) as other,
    ):
        yield site, other


@pytest.fixture
def site(running_servers) -> Iterator[HTTPServer]:
    yield running_servers[0]
    running_servers[0].clear()


@pytest.fixture
def other_host(running_servers) -> Iterator[HTTPServer]:
    yield running_servers[1]
    running_servers[1].clear()


@pytest.fixture
def tools():
    find_forms, submit_form, submit_json = make_web_tools()
    return find_forms, submit_form, submit_json


def _redirect(location: str, status: int):
    def handler(_request: Request) -> Response:
        return Response("", status=status, headers={"Location": location})

    return handler


def _echo(request: Request) -> Response:
    return Response(
        json.dumps(
            {
                "method": request.method,
                "path": request.path,
                "args": request.args.to_dict(flat=False),
                "form": request.form.to_dict(flat=False),
                "body": request.get_data(as_text=True),
                "content_type": request.headers.get("Content-Type"),
            }
        ),
        content_type="application/json",
    )


# --- find_forms ----------------------------------------------------------------------------

SIGNUP = """<html><head><title>Sign up</title></head><body>
<form id="search" action="/search" method="get"><input name="q"></form>
<form id="signup" action="/accounts/new" method="post" enctype="multipart/form-data">
  <input type="hidden" name="csrf_token" value="tok-123">
  <label for="email">Email address</label>
  <input id="email" type="email" name="email" placeholder="you@example.com" required>
  <input type="password" name="password">
  <select name="plan"><option value="free">Free</option>
    <option value="pro" selected>Pro</option></select>
  <textarea name="bio">Hello there</textarea>
  <input type="checkbox" name="newsletter" value="yes" checked>
  <input type="radio" name="size" value="s"><input type="radio" name="size" value="m" checked>
  <input type="file" name="avatar">
  <input type="text" name="legacy" value="x" disabled>
  <button type="submit" name="action" value="create">Create account</button>
  <button type="reset">Clear</button>
</form>
<input form="signup" type="hidden" name="source" value="footer">
<form id="tiny" action="/t"><input form="tiny" name="only_once"></form>
</body></html>"""


def test_find_forms_lists_action_method_and_every_kind_of_field(site, tools):
    site.expect_request("/signup").respond_with_data(SIGNUP, content_type="text/html")
    find_forms = tools[0]

    text = find_forms(site.url_for("/signup"))

    assert text == (
        f"Page: {site.url_for('/signup')} (HTTP 200 OK)\n\n"
        f'Form 0: GET {site.url_for("/search")} (id "search")\n'
        "  - q (text)\n\n"
        f'Form 1: POST {site.url_for("/accounts/new")} (id "signup")\n'
        "  Note: this form is multipart/form-data; submit_form sends url-encoded fields and "
        "cannot upload files.\n"
        '  - csrf_token (hidden) = "tok-123"\n'
        '  - email (email) [label "Email address"; placeholder "you@example.com"; required]\n'
        "  - password (password)\n"
        '  - plan (select): "free" = Free; "pro" = Pro (selected)\n'
        '  - bio (textarea) = "Hello there"\n'
        '  - newsletter (checkbox, checked) value "yes"\n'
        '  - size (radio): "s", "m" (checked)\n'
        "  - avatar (file upload; not supported by submit_form)\n"
        '  - legacy (text) = "x" [disabled, not sent]\n'
        '  - action (submit button "Create account") value "create"\n'
        '  - source (hidden) = "footer"\n\n'
        f'Form 2: GET {site.url_for("/t")} (id "tiny")\n'
        "  - only_once (text)"
    )


def test_find_forms_on_a_page_without_forms_says_so(site, tools):
    site.expect_request("/plain").respond_with_data("<p>hi</p>", content_type="text/html")

    assert "No <form> elements on this page" in tools[0](site.url_for("/plain"))


def test_find_forms_resolves_actions_against_base_href(site, tools):
    page = '<html><head><base href="/app/"></head><body><form action="save"></form></body></html>'
    site.expect_request("/page").respond_with_data(page, content_type="text/html")

    assert f"Form 0: GET {site.url_for('/app/save')}" in tools[0](site.url_for("/page"))


# --- the login flow ------------------------------------------------------------------------


class LoginSite:
    """A small site with a CSRF-protected login form and a page behind it."""

    def __init__(self) -> None:
        self.csrf: dict[str, str] = {}
        self.sessions: set[str] = set()

    def install(self, server: HTTPServer) -> None:
        server.expect_request("/login", method="GET").respond_with_handler(self.form)
        server.expect_request("/login", method="POST").respond_with_handler(self.login)
        server.expect_request("/account").respond_with_handler(self.account)

    def form(self, request: Request) -> Response:
        visitor = request.cookies.get("visitor") or secrets.token_hex(8)
        token = self.csrf.setdefault(visitor, secrets.token_hex(16))
        page = (
            '<html><body><form action="/login" method="post">'
            f'<input type="hidden" name="csrf_token" value="{token}">'
            '<input name="username"><input type="password" name="password">'
            "</form></body></html>"
        )
        response = Response(page, content_type="text/html")
        response.set_cookie("visitor", visitor)
        return response

    def login(self, request: Request) -> Response:
        visitor = request.cookies.get("visitor", "")
        if not visitor or request.form.get("csrf_token") != self.csrf.get(visitor):
            return Response("CSRF token missing or wrong", status=403)
        if (request.form.get("username"), request.form.get("password")) != ("ada", "engine"):
            return Response("Wrong username or password", status=401)
        session = secrets.token_hex(16)
        self.sessions.add(session)
        response = Response("", status=302, headers={"Location": "/account"})
        response.set_cookie("session", session)
        return response

    def account(self, request: Request) -> Response:
        if request.cookies.get("session") not in self.sessions:
            return Response("Please log in first", status=401)
        return Response("<h1>Welcome back, ada</h1><p>Balance: 42</p>", content_type="text/html")


def test_login_flow_works_end_to_end_over_the_shared_session(site, tools):
    LoginSite().install(site)
    find_forms, submit_form, _ = tools

    forms = find_forms(site.url_for("/login"))
    token = re.search(r'csrf_token \(hidden\) = "([0-9a-f]+)"', forms).group(1)
    action = re.search(r"Form 0: POST (\S+)", forms).group(1)
    logged_in = submit_form(
        action, data={"csrf_token": token, "username": "ada", "password": "engine"}
    )
    again = submit_form(site.url_for("/account"), method="GET")

    assert logged_in.startswith(f"Status: 200 OK\nURL: {site.url_for('/account')}\n")
    assert "Welcome back, ada" in logged_in
    assert "Balance: 42" in again
    stranger = make_web_tools()[1](site.url_for("/account"), method="GET")
    assert stranger.startswith("Status: 401 UNAUTHORIZED") and "Please log in first" in stranger


def test_wrong_csrf_token_gets_the_error_body_back(site, tools):
    LoginSite().install(site)
    find_forms, submit_form, _ = tools
    find_forms(site.url_for("/login"))

    text = submit_form(site.url_for("/login"), data={"csrf_token": "forged", "username": "ada"})

    assert text == (
        f"Status: 403 FORBIDDEN\nURL: {site.url_for('/login')}\n"
        "Content-Type: text/plain\n\nCSRF token missing or wrong"
    )


# --- submit_form ---------------------------------------------------------------------------


def test_submit_form_post_sends_a_form_body(site, tools):
    site.expect_request("/echo").respond_with_handler(_echo)

    text = tools[1](site.url_for("/echo"), data={"name": "Ada", "tags": ["a", "b"], "n": 3})

    sent = json.loads(text.split("\n\n", 1)[1])
    assert sent["method"] == "POST"
    assert sent["form"] == {"name": ["Ada"], "tags": ["a", "b"], "n": ["3"]}
    assert sent["content_type"] == "application/x-www-form-urlencoded"


def test_submit_form_get_sends_query_parameters(site, tools):
    site.expect_request("/echo").respond_with_handler(_echo)

    text = tools[1](site.url_for("/echo?lang=en"), method="get", data={"q": "tide & time"})

    sent = json.loads(text.split("\n\n", 1)[1])
    assert (sent["method"], sent["args"]) == ("GET", {"lang": ["en"], "q": ["tide & time"]})
    assert sent["body"] == ""


def test_submit_form_refuses_other_methods(site, tools):
    assert tools[1](site.url_for("/x"), method="PUT").startswith(
        "submit_form sends GET or POST, not 'PUT'"
    )
    assert site.log == []


def test_same_host_307_replays_method_and_body(site, tools):
    site.expect_request("/old").respond_with_handler(_redirect("/new", 307))
    site.expect_request("/new").respond_with_handler(_echo)

    text = tools[1](site.url_for("/old"), data={"k": "v"})

    assert text.startswith(f"Status: 200 OK\nURL: {site.url_for('/new')}\n")
    sent = json.loads(text.split("\n\n", 1)[1])
    assert (sent["method"], sent["form"]) == ("POST", {"k": ["v"]})


def test_same_host_303_continues_as_a_bodyless_get(site, tools):
    site.expect_request("/create").respond_with_handler(_redirect("/done", 303))
    site.expect_request("/done").respond_with_handler(_echo)

    text = tools[1](site.url_for("/create"), data={"k": "v"})

    sent = json.loads(text.split("\n\n", 1)[1])
    assert (sent["method"], sent["body"], sent["content_type"]) == ("GET", "", None)


def test_get_redirect_does_not_carry_the_old_query_along(site, tools):
    site.expect_request("/s").respond_with_handler(_redirect("/results?page=1", 307))
    site.expect_request("/results").respond_with_handler(_echo)

    text = tools[1](site.url_for("/s"), method="GET", data={"q": "x"})

    assert json.loads(text.split("\n\n", 1)[1])["args"] == {"page": ["1"]}


def test_cross_host_redirect_is_reported_not_followed(site, other_host, tools):
    sink = other_host.url_for("/sink")
    site.expect_request("/start").respond_with_handler(_redirect(sink, 307))
    other_host.expect_request("/sink").respond_with_handler(_echo)

    text = tools[1](site.url_for("/start"), data={"card": "4111-1111"})

    assert text.startswith(
        f"Status: 307 TEMPORARY REDIRECT\nURL: {site.url_for('/start')}\n"
        f"Not followed: this redirects to {sink} on a different host. Nothing was sent there. "
        "Submit to that URL directly if you intend to."
    )
    assert other_host.log == []


def test_redirect_to_the_same_address_under_another_name_is_not_followed(site, tools):
    elsewhere = site.url_for("/echo").replace("127.0.0.1", "localhost")
    site.expect_request("/start").respond_with_handler(_redirect(elsewhere, 308))
    site.expect_request("/echo").respond_with_handler(_echo)

    text = tools[2](site.url_for("/start"), {"secret": "payload"})

    assert f"Not followed: this redirects to {elsewhere}" in text
    assert [request.path for request, _ in site.log] == ["/start"]


def test_redirect_loop_is_capped_at_five_hops(site, tools):
    site.expect_request("/loop").respond_with_handler(_redirect("/loop", 302))

    text = tools[1](site.url_for("/loop"), data={"a": "1"})

    assert "Not followed: stopped after 5 redirects, the limit" in text
    assert len(site.log) == 6


# --- submit_json ---------------------------------------------------------------------------


def _items_api(request: Request) -> Response:
    item = request.get_json(silent=True)
    if not isinstance(item, dict) or "name" not in item:
        detail = {"detail": [{"loc": ["body", "name"], "msg": "field required"}]}
        return Response(json.dumps(detail), status=422, content_type="application/json")
    created = {"id": 7, **item, "content_type": request.headers.get("Content-Type")}
    return Response(json.dumps(created), status=201, content_type="application/json")


def test_submit_json_sends_a_json_body(site, tools):
    site.expect_request("/items", method="POST").respond_with_handler(_items_api)

    text = tools[2](site.url_for("/items"), {"name": "widget", "tags": ["a", "b"]})

    assert text.startswith(
        f"Status: 201 CREATED\nURL: {site.url_for('/items')}\nContent-Type: application/json\n\n"
    )
    assert json.loads(text.split("\n\n", 1)[1]) == {
        "id": 7,
        "name": "widget",
        "tags": ["a", "b"],
        "content_type": "application/json",
    }


def test_validation_error_body_comes_back_for_a_corrected_retry(site, tools):
    site.expect_request("/items").respond_with_handler(_items_api)

    text = tools[2](site.url_for("/items"), {"title": "widget"}, method="put")

    assert text.startswith("Status: 422 UNPROCESSABLE ENTITY\n")
    assert '"loc": ["body", "name"], "msg": "field required"' in text
    assert site.log[0][0].method == "PUT"


@pytest.mark.parametrize("method", ["DELETE", "GET", "HEAD", "TRACE"])
def test_submit_json_refuses_other_methods_before_any_request(site, tools, method):
    text = tools[2](site.url_for("/items"), {"a": 1}, method=method)

    assert text.startswith(f"submit_json sends POST, PUT or PATCH, not '{method}'")
    assert site.log == []


def test_payload_is_advertised_as_an_object_and_checked_at_dispatch(site, tools):
    site.expect_request("/items").respond_with_handler(_items_api)
    submit_json = tools[2]
    schema = submit_json.__tool_spec__["function"]["parameters"]
    assert schema["properties"]["payload"]["type"] == "object"
    assert "headers" not in schema["properties"]

    def call(payload):
        request = ToolCallRequest("c1", "submit_json", {"url": site.url_for("/items"), **payload})
        return asyncio.run(dispatch(request, {"submit_json": submit_json}))

    refused = call({"payload": [{"name": "a"}, {"name": "b"}]})
    assert refused.is_error and "payload" in refused.text and "object" in refused.text
    assert site.log == []
    accepted = call({"payload": '{"name": "from a string"}'})
    assert accepted.text.startswith("Status: 201 CREATED")


# --- session, identity, failures -----------------------------------------------------------


def test_default_user_agent_is_sent(site, tools):
    site.expect_request("/ua").respond_with_handler(
        lambda r: Response(r.headers.get("User-Agent", ""), content_type="text/plain")
    )

    assert "aimu-jupyter" in tools[1](site.url_for("/ua"), method="GET")


def test_user_agent_none_leaves_the_sessions_own_and_credentials_ride_on_the_session(site):
    session = requests.Session()
    session.headers.update({"User-Agent": "host-agent/2", "Authorization": "Bearer s3cret"})
    site.expect_request("/who").respond_with_handler(
        lambda r: Response(
            f"{r.headers.get('User-Agent')} | {r.headers.get('Authorization')}",
            content_type="text/plain",
        )
    )
    _, submit_form, _ = make_web_tools(session=session, user_agent=None)

    assert submit_form(site.url_for("/who"), method="GET").endswith("host-agent/2 | Bearer s3cret")


def test_large_body_is_truncated_to_max_content_chars(site):
    site.expect_request("/big").respond_with_data("z" * 5000, content_type="text/plain")
    _, submit_form, _ = make_web_tools(max_content_chars=1000)

    text = submit_form(site.url_for("/big"), method="GET")

    assert text.endswith("z" * 1000 + "\n\n[Truncated: showing the first 1000 of 5000 characters.]")


def test_binary_response_body_is_described_not_shown(site, tools):
    site.expect_request("/img").respond_with_data(b"\x89PNG" + bytes(60), content_type="image/png")

    text = tools[1](site.url_for("/img"), method="GET")

    assert text.endswith("\n\n(The body is image/png, 64 bytes, not text; not shown.)")


def test_timeout_is_a_short_error_string():
    release = threading.Event()

    def stall(_request: Request) -> Response:
        release.wait(10)
        return Response("late")

    _, submit_form, _ = make_web_tools(timeout=0.3)
    with HTTPServer("127.0.0.1", 0, threaded=True) as slow:
        slow.expect_request("/slow").respond_with_handler(stall)
        try:
            text = submit_form(slow.url_for("/slow"), data={"a": "b"})
        finally:
            release.set()

    assert text.startswith("Timed out after 0.3 s waiting for 127.0.0.1:")


def test_transport_failure_is_a_short_error_string_without_credentials(tools):
    session = requests.Session()
    session.headers["Authorization"] = "Bearer s3cret"
    find_forms, submit_form, submit_json = make_web_tools(session=session)

    for text in (
        find_forms("http://no-such-host.invalid/"),
        submit_form("http://no-such-host.invalid/", data={"a": "b"}),
        submit_json("http://no-such-host.invalid/", {"a": 1}),
    ):
        assert text.startswith("Could not resolve the host name 'no-such-host.invalid'")
        assert "s3cret" not in text


def test_agent_with_a_submit_gate_reads_forms_but_sends_nothing(site):
    LoginSite().install(site)
    login = site.url_for("/login")
    client = ScriptedClient(
        [
            reply(tool_calls=[call("find_forms", url=login)]),
            reply(tool_calls=[call("submit_form", url=login, data={"username": "ada"})]),
            "The submission was refused.",
        ]
    )

    def policy(name, arguments):
        return name == "find_forms" or Denied(f"no submits to {arguments['url']}")

    agent = Agent(client, tools=make_web_tools(), tool_approval=policy)

    assert agent.run("Log in") == "The submission was refused."
    tool_messages = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert "csrf_token (hidden)" in tool_messages[0]
    assert f"no submits to {login}" in tool_messages[1]
    assert [(r.method, r.path) for r, _ in site.log] == [("GET", "/login")]
