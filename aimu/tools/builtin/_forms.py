"""``make_web_tools``: find and submit forms, and call JSON APIs, over one shared session.

The three tools close over one ``requests.Session``, so cookies set by one call ride on the
next and a login flow works end to end. Credentials belong on that session, set by the host:
no tool lets the model name a header. Submissions follow redirects only on the same host
(see :func:`aimu.tools.builtin._http.send_same_host`), so a payload never travels to a host
the model did not name and no approval policy saw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urljoin

import requests
from bs4 import BeautifulSoup, Tag

from aimu.tools.builtin import _html, _http
from aimu.tools.builtin._address import Reach
from aimu.tools.builtin._http import DEFAULT_USER_AGENT, FetchError
from aimu.tools.decorator import tool

_MAX_OPTIONS = 50
_CONTROLS = ["input", "select", "textarea", "button"]
_JSON_METHODS = ("POST", "PUT", "PATCH")


def make_web_tools(
    *,
    session: requests.Session | None = None,
    timeout: float = 15,
    max_content_chars: int = 20000,
    user_agent: str | None = DEFAULT_USER_AGENT,
    allow_hosts: Iterable[str] = (),
) -> list[Callable[..., str]]:
    """Build ``find_forms``, ``submit_form`` and ``submit_json`` over one ``requests.Session``.

    The shared session preserves cookies across calls, so a GET-then-POST form flow works:
    ``find_forms`` shows hidden fields (CSRF tokens included), then ``submit_form`` echoes
    them back with the session's cookies intact. ``submit_json`` does the same for a JSON
    API. Pass them to an agent alongside the stateless ``get_webpage_html``::

        agent = Agent(client, tools=[get_webpage_html, *make_web_tools()])

    Pass your own ``session`` to share one across tool sets or to carry credentials (a bearer
    token in ``session.headers``, a cookie from a prior login); otherwise a fresh one is made.
    ``timeout`` is the seconds one call may take in all, redirects included (a server that
    trickles its answer is cut off); ``max_content_chars`` caps each result.
    ``user_agent`` is sent on every call, over the session's own; ``None`` sends none and
    leaves the session's User-Agent in charge.

    These fetch server-rendered HTML only, without running JavaScript. ``submit_form`` and
    ``submit_json`` write to any URL the model names, carrying the session's credentials:
    gate them with ``tool_approval`` when that matters.

    Like every web tool they connect only to public addresses and loopback (the user's own
    machine, where the course's website runs), checked on the resolved address at every
    redirect hop; link-local (cloud metadata), private-network and other non-public
    addresses are refused unless named in ``allow_hosts`` (host names, ``*.corp.example``,
    addresses or networks such as ``"10.0.0.0/8"``) or in ``AIMU_WEB_ALLOW_HOSTS``. The
    check is an adapter mounted on the session for ``http://`` and ``https://``.
    """
    allowed = Reach.of(allow_hosts)
    session = session if session is not None else requests.Session()
    limits: dict[str, Any] = {"session": session, "timeout": timeout, "user_agent": user_agent}

    def reach() -> Reach:
        return allowed.joined(_http.reach())

    @tool(read_only=True)
    def find_forms(url: str) -> str:
        """Fetch a page and list its HTML forms, with everything needed to submit one.

        For each form: its index, the absolute URL it submits to, its HTTP method, and its
        fields: name, type, current value, hidden fields (CSRF tokens must be sent back
        unchanged), select options, textareas, checkboxes and radio buttons. Cookies the
        page sets are kept for the next submit_form call. Forms built by JavaScript are not
        visible.

        Args:
            url: The page's URL (http:// or https://).
        """
        try:
            response = _http.request("GET", url, allowed=reach(), **limits)
        except FetchError as exc:
            return str(exc)
        if response.oversize:
            return _http.too_large_message(response.url)
        if response.kind != "html":
            return f"{response.url} is {response.media_type or 'untyped'}, not an HTML page."
        soup = _html.parse(response.text(html=True))
        base = response.url
        if (base_tag := soup.find("base", href=True)) is not None:
            base = urljoin(response.url, str(base_tag["href"]))
        forms = soup.find_all("form")
        lines = [f"Page: {response.url} (HTTP {response.status_line})"]
        if not forms:
            lines.append(
                "No <form> elements on this page (forms built by JavaScript are not seen)."
            )
        labels = _labels(soup)
        for index, form in enumerate(forms):
            lines.append(_describe_form(index, form, soup, base, labels))
        return _cap("\n\n".join(lines), max_content_chars)

    @tool(read_only=False)
    def submit_form(
        url: str, method: str = "POST", data: dict[str, str | list[str]] | None = None
    ) -> str:
        """Submit form fields to a URL and return the response, whatever its status.

        POST sends the fields as a form body; GET sends them as query parameters. Include
        every field find_forms listed that you are not changing, hidden ones above all.
        Cookies persist across calls, so a login followed by a GET of a protected page works.
        Redirects are followed only within the same host (at most 5); one to another host is
        reported, not followed. The result gives the status, the final URL and the body (an
        error body such as 400 or 422 usually names the field to correct).

        Args:
            url: The form's action URL, as find_forms reported it.
            method: "POST" (default) or "GET".
            data: Field names mapped to values; a list sends the field once per value
                (multi-selects, checkbox groups).
        """
        verb = str(method).strip().upper()
        if verb not in ("GET", "POST"):
            return (
                f"submit_form sends GET or POST, not {method!r}. For a JSON API with PUT or "
                "PATCH use submit_json."
            )
        fields = {str(k): _field_value(v) for k, v in (data or {}).items()}
        try:
            if verb == "GET":
                target = requests.Request("GET", _http.check_url(url), params=fields).prepare()
                result = _http.send_same_host("GET", str(target.url), allowed=reach(), **limits)
            else:
                result = _http.send_same_host("POST", url, data=fields, allowed=reach(), **limits)
        except (FetchError, ValueError) as exc:
            return str(exc)
        return _report(result, max_content_chars)

    @tool(read_only=False)
    def submit_json(url: str, payload: dict[str, Any], method: str = "POST") -> str:
        """Send a JSON object to an API and return the response, whatever its status.

        The payload is sent JSON-encoded with Content-Type application/json; give it as an
        object, not as a string of JSON. A top-level array cannot be sent. Cookies and
        credentials of the shared session ride along. Redirects are followed only within the
        same host (at most 5); one to another host is reported, not followed. The result
        gives the status, the final URL and the body (a 400 or 422 body usually says what
        to fix).

        Args:
            url: The API endpoint (http:// or https://).
            payload: The JSON object to send as the request body.
            method: "POST" (default), "PUT" or "PATCH". For GET use submit_form with
                method="GET"; DELETE is not offered.
        """
        verb = str(method).strip().upper()
        if verb not in _JSON_METHODS:
            hint = (
                'a GET carries no body: use submit_form(url, method="GET", data=...)'
                if verb == "GET"
                else "DELETE and other methods are not offered by these tools"
            )
            return f"submit_json sends POST, PUT or PATCH, not {method!r}; {hint}."
        if not isinstance(payload, dict):
            return f"payload must be a JSON object, got {type(payload).__name__}."
        try:
            result = _http.send_same_host(verb, url, json=payload, allowed=reach(), **limits)
        except (FetchError, ValueError) as exc:
            return str(exc)
        return _report(result, max_content_chars)

    return [find_forms, submit_form, submit_json]


def _field_value(value: Any) -> str | list[str]:
    if isinstance(value, list | tuple):
        return [_scalar(v) for v in value]
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else ""
    return "" if value is None else str(value)


def _report(result: _http.Submitted, max_chars: int) -> str:
    response = result.response
    lines = [f"Status: {response.status_line}", f"URL: {response.url}"]
    if result.stopped:
        lines.append(result.stopped)
    if response.has_content_type:
        lines.append(f"Content-Type: {response.media_type}")
    if response.oversize:
        body = "(The body is over the size limit and was not read.)"
    elif not response.body:
        body = "(empty body)"
    elif response.kind in ("", "pdf"):
        kind = response.media_type or "undeclared type"
        body = f"(The body is {kind}, {len(response.body):,} bytes, not text; not shown.)"
    else:
        body = _cap(response.text(html=response.kind == "html"), max_chars)
    return "\n".join(lines) + "\n\n" + body


def _cap(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return (
        f"{text[:max_chars]}\n\n[Truncated: showing the first {max_chars} of {len(text)} "
        "characters.]"
    )


def _describe_form(
    index: int, form: Tag, soup: BeautifulSoup, base: str, labels: dict[str, str]
) -> str:
    """One form: where and how it submits, then each named field a submission would send."""
    action = urljoin(base, str(form.get("action") or "").strip())
    method = str(form.get("method") or "GET").strip().upper()
    ident = ", ".join(f'{k} "{form[k]}"' for k in ("id", "name") if form.get(k))
    lines = [f"Form {index}: {method} {action}" + (f" ({ident})" if ident else "")]
    if "multipart" in str(form.get("enctype", "")).lower():
        lines.append(
            "  Note: this form is multipart/form-data; submit_form sends url-encoded fields "
            "and cannot upload files."
        )
    controls = list(form.find_all(_CONTROLS))
    if form.get("id"):
        inside = {id(control) for control in controls}
        outside = soup.find_all(_CONTROLS, form=form["id"])
        controls += [control for control in outside if id(control) not in inside]
    entries: list[tuple[str, list[str] | None]] = []
    radios: dict[str, list[str]] = {}
    for control in controls:
        name = str(control.get("name") or "").strip()
        kind = str(control.get("type") or "").lower()
        if not name:
            continue
        if control.name == "input" and kind == "radio":
            if name not in radios:
                radios[name] = []
                entries.append((f"{name} (radio): ", radios[name]))
            marker = " (checked)" if control.has_attr("checked") else ""
            radios[name].append(f'"{control.get("value", "on")}"{marker}')
            continue
        if (line := _describe_control(control, name, kind)) is not None:
            entries.append((line + _extras(control, labels), None))
    if not entries:
        lines.append("  (no named fields)")
    for head, group in entries:
        lines.append(f"  - {head}" + (", ".join(group) if group is not None else ""))
    return "\n".join(lines)


def _extras(control: Tag, labels: dict[str, str]) -> str:
    extras = []
    if control.get("id") and (label := labels.get(str(control["id"]))):
        extras.append(f'label "{label}"')
    if control.get("placeholder"):
        extras.append(f'placeholder "{control["placeholder"]}"')
    if control.has_attr("required"):
        extras.append("required")
    if control.has_attr("disabled"):
        extras.append("disabled, not sent")
    return f" [{'; '.join(extras)}]" if extras else ""


def _describe_control(control: Tag, name: str, kind: str) -> str | None:
    if control.name == "select":
        options = control.find_all("option")
        shown = []
        for option in options[:_MAX_OPTIONS]:
            label = option.get_text(" ", strip=True)
            value = str(option.get("value", label))
            text = f'"{value}"' + (f" = {label}" if label and label != value else "")
            shown.append(text + (" (selected)" if option.has_attr("selected") else ""))
        if len(options) > _MAX_OPTIONS:
            shown.append(f"... and {len(options) - _MAX_OPTIONS} more")
        multiple = " multiple" if control.has_attr("multiple") else ""
        return f"{name} (select{multiple}): " + "; ".join(shown)
    if control.name == "textarea":
        return f'{name} (textarea) = "{control.get_text()}"'
    if control.name == "button":
        if kind not in ("", "submit"):
            return None
        value = control.get("value", "")
        return f'{name} (submit button "{control.get_text(" ", strip=True)}") value "{value}"'
    kind = kind or "text"
    if kind in ("reset", "image"):
        return None
    if kind == "file":
        return f"{name} (file upload; not supported by submit_form)"
    value = control.get("value")
    if kind == "checkbox":
        state = "checked" if control.has_attr("checked") else "unchecked"
        return f'{name} (checkbox, {state}) value "{value if value is not None else "on"}"'
    return f"{name} ({kind})" + (f' = "{value}"' if value is not None else "")


def _labels(soup: BeautifulSoup) -> dict[str, str]:
    return {
        str(label["for"]): label.get_text(" ", strip=True)
        for label in soup.find_all("label", attrs={"for": True})
    }
