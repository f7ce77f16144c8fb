"""HTTP for the web tools: one place for limits, decoding, redirects and error wording.

Every web tool sends through :func:`request`, so the body size cap, the User-Agent, charset
detection, the addresses that may be reached (:mod:`._address`, checked at every hop) and the
short error strings a model reads are the same everywhere. The submit tools add
:func:`send_same_host`, which follows a redirect only while it stays on one host.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from email.message import Message
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from bs4.dammit import EncodingDetector
from dotenv import dotenv_values, find_dotenv
from requests.structures import CaseInsensitiveDict

from aimu.tools.builtin._address import ALLOW_SETTING, Reach, guard, refusal_in

DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (compatible; aimu-jupyter; +https://pypi.org/project/aimu-jupyter/)"
)
TIMEOUT_SECONDS = 15.0
MAX_BODY_BYTES = 10 * 1024 * 1024
MAX_REDIRECTS = 5

_CHUNK_BYTES = 256 * 1024
_REDIRECT_STATUSES = (301, 302, 303, 307, 308)
# WHATWG: browsers read these labels as windows-1252, and so do real pages that use them.
_AS_WINDOWS_1252 = {"iso-8859-1", "iso8859-1", "latin-1", "latin1", "l1", "us-ascii", "ascii"}
_HTML_TYPES = {"text/html", "application/xhtml+xml"}
_TEXT_APPLICATION_TYPES = {
    "application/javascript", "application/x-javascript", "application/ecmascript",
    "application/yaml", "application/x-yaml", "application/toml", "application/sql",
    "application/graphql", "application/x-ndjson", "application/x-sh", "application/x-tex",
}  # fmt: skip


class FetchError(Exception):
    """No usable response came back; the message is the short text the model reads."""


def setting(name: str, default: str) -> str:
    """A web setting, read at call time: the environment wins, else a ``.env`` file found
    from the working directory upward, else ``default``."""
    value = os.environ.get(name)
    if value is None:
        value = dotenv_values(find_dotenv(usecwd=True)).get(name)
    return (value or default).strip().rstrip("/")


def reach(allow_hosts: Iterable[str] = ()) -> Reach:
    """The non-public hosts the web tools may reach: ``allow_hosts`` and those named
    (comma-separated) in ``AIMU_WEB_ALLOW_HOSTS``. See :mod:`._address`."""
    named = [entry for entry in setting(ALLOW_SETTING, "").split(",") if entry.strip()]
    return Reach.of([*allow_hosts, *named])


@dataclass(frozen=True)
class Response:
    """A response read in full (up to the size cap) and closed."""

    url: str
    status: int
    reason: str
    headers: CaseInsensitiveDict = field(repr=False)
    body: bytes = field(repr=False)
    oversize: bool = False

    @property
    def has_content_type(self) -> bool:
        return bool(self.headers.get("Content-Type", "").strip())

    @property
    def media_type(self) -> str:
        """The declared media type, lower case; ``""`` when none was declared."""
        return _content_type(self.headers).get_content_type() if self.has_content_type else ""

    @property
    def charset(self) -> str | None:
        return _content_type(self.headers).get_param("charset") if self.has_content_type else None

    @property
    def status_line(self) -> str:
        return f"{self.status} {self.reason}".strip()

    @property
    def kind(self) -> str:
        """What the body is: "html", "pdf", "json", "xml", "text", or "" for anything else.

        Judged by the declared type; a PDF is also recognised by its signature when served
        as application/octet-stream or with no type, as file stores often do.
        """
        media = self.media_type
        if media == "application/pdf" or (
            media in ("", "application/octet-stream") and self.body.startswith(b"%PDF-")
        ):
            return "pdf"
        if media in _HTML_TYPES:
            return "html"
        if media == "application/json" or media.endswith("+json"):
            return "json"
        if media in ("application/xml", "text/xml") or media.endswith("+xml"):
            return "xml"
        if media.startswith("text/") or media in _TEXT_APPLICATION_TYPES:
            return "text"
        return ""

    def text(self, *, html: bool = False) -> str:
        """The body decoded as :func:`decode` does."""
        return decode(self.body, self.charset, html=html)


def _content_type(headers: CaseInsensitiveDict) -> Message:
    message = Message()
    message["Content-Type"] = headers.get("Content-Type", "")
    return message


def decode(body: bytes, charset: str | None, *, html: bool = False) -> str:
    """Decode ``body``: a BOM, the declared ``charset``, strict UTF-8, the document's own
    declaration, then Windows-1252, which every byte sequence decodes as.

    UTF-8 goes before the in-document declaration because bytes that decode as UTF-8 almost
    always are. Undeclared bytes that are not UTF-8 are read as Windows-1252 (what browsers
    do for Western pages) rather than guessed at: a statistical guess on a short Latin-1
    text picks a wrong code page and turns "crème" into "crčme".
    """
    stripped, bom = EncodingDetector.strip_byte_order_mark(body)
    if (text := _decode_as(stripped, bom)) is not None:
        return text
    for label in (charset, "utf-8"):
        if (text := _decode_as(body, label)) is not None:
            return text
    declared = EncodingDetector.find_declared_encoding(body, is_html=html)
    return _decode_as(body, declared) or _windows_1252(body)


def _decode_as(data: bytes, label: Any) -> str | None:
    """``data`` decoded with the codec ``label`` names, or ``None`` when it cannot be."""
    if not isinstance(label, str) or not label.strip():
        return None
    name = label.strip().strip("'\"").lower()
    if name in _AS_WINDOWS_1252 or name in ("windows-1252", "cp1252"):
        return _windows_1252(data)
    try:
        return data.decode(name)
    except (LookupError, UnicodeDecodeError):
        return None


def _windows_1252(data: bytes) -> str:
    """WHATWG's windows-1252: the five bytes cp1252 leaves undefined map to C1 controls."""
    return data.decode("latin-1").translate(_CP1252_HIGH)


_CP1252_HIGH = {
    byte: bytes([byte]).decode("cp1252")
    for byte in range(0x80, 0xA0)
    if byte not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)
}


def check_url(url: str) -> str:
    """``url`` stripped, or :class:`FetchError` when it is not an absolute http(s) URL, or
    when the standard library and the HTTP client would send it to different places.

    The second refusal closes parser differentials: ``http://a:1\\@b:2/`` names host ``b``
    to :func:`urllib.parse.urlsplit` (and so to an approval policy or a log reading it) but
    host ``a`` to requests, which would connect there.
    """
    url = url.strip() if isinstance(url, str) else ""
    refusal = f"Not a web address: {url!r}. Give a full URL starting with http:// or https://."
    if not _is_web_url(url):
        raise FetchError(refusal)
    try:
        sent = destination(prepared_url(url))
    except (requests.RequestException, ValueError):
        raise FetchError(refusal) from None
    read = destination(url, idna=True)
    if sent != read:
        raise FetchError(
            f"Ambiguous web address: {url!r} names host {read[1]}:{read[2]} to one URL "
            f"reader and {sent[1]}:{sent[2]} to the HTTP client. Write it without "
            "backslashes, percent-escapes or '@' in the host part."
        )
    return url


def prepared_url(url: str) -> str:
    """The URL exactly as requests will send it (its own parsing and normalisation)."""
    prepared = requests.PreparedRequest()
    prepared.prepare_url(url, None)
    return str(prepared.url)


def destination(url: str, *, idna: bool = False) -> tuple[str, str, int]:
    """``(scheme, host, port)`` a URL connects to, read the way requests' transport reads a
    prepared URL (:func:`urllib.parse.urlsplit`, default ports filled in). ``idna``
    encodes a non-ASCII host as requests does when preparing it. Raises ``ValueError`` for
    a port that is not a number."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if idna and not host.isascii():
        with contextlib.suppress(UnicodeError):
            host = host.encode("idna").decode("ascii")
    return scheme, host, parts.port or (443 if scheme == "https" else 80)


def _is_web_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return (
            parts.scheme.lower() in ("http", "https")
            and bool(parts.hostname)
            and (parts.port is None or parts.port > 0)
        )
    except ValueError:
        return False


def request(
    method: str,
    url: str,
    *,
    session: requests.Session | None = None,
    timeout: float = TIMEOUT_SECONDS,
    user_agent: str | None = DEFAULT_USER_AGENT,
    max_bytes: int = MAX_BODY_BYTES,
    allow_redirects: bool = True,
    deadline: float | None = None,
    allowed: Reach | None = None,
    **kwargs: Any,
) -> Response:
    """Send one request and read its body, at most ``max_bytes`` of it (decompressed).

    Every connection, redirects included, goes only to addresses ``allowed`` permits
    (default: :func:`reach`); a refused one is a :class:`FetchError` saying how to allow it.

    ``timeout`` bounds the whole exchange, not each read: a server that trickles its answer
    a byte at a time is cut off when the time is up. ``deadline`` (a ``time.monotonic()``
    instant) bounds it instead, for a caller spending one budget over several requests. The
    exchange runs on a worker thread so the caller is answered on time even while a read is
    blocked; on expiry its connection is shut down. A body over the cap is not kept: the
    response comes back with ``oversize`` set and an empty body. Transport failures raise
    :class:`FetchError` with a message a model can act on; it names the host, never a
    header, so no credential reaches the model.
    """
    url = check_url(url)
    headers = {"User-Agent": user_agent} if user_agent is not None else {}
    owner = guard(session or requests.Session(), allowed if allowed is not None else reach())
    if deadline is None:
        deadline = time.monotonic() + timeout
    done: Future[Response] = Future()
    answered: list[requests.Response] = []

    def exchange() -> None:
        try:
            remaining = max(deadline - time.monotonic(), 0.001)
            with owner.request(
                method,
                url,
                headers=headers,
                timeout=remaining,
                allow_redirects=allow_redirects,
                stream=True,
                **kwargs,
            ) as response:
                answered.append(response)
                body, oversize = _read_capped(response, max_bytes)
                done.set_result(
                    Response(
                        url=response.url,
                        status=response.status_code,
                        reason=response.reason or "",
                        headers=response.headers,
                        body=body,
                        oversize=oversize,
                    )
                )
        except BaseException as exc:
            done.set_exception(exc)

    worker = threading.Thread(target=exchange, name="aimu-web-request", daemon=True)
    worker.start()
    try:
        return done.result(max(deadline - time.monotonic(), 0.0))
    except FutureTimeout:
        host = urlsplit(url).netloc
        if not answered:
            raise FetchError(
                f"Timed out after {timeout:g} s waiting for {host} to answer. The server is slow "
                "or stuck; try again later."
            ) from None
        raise FetchError(
            f"Timed out after {timeout:g} s: {host} had not finished sending its response. "
            "The server is too slow; try again later."
        ) from None
    except requests.RequestException as exc:
        raise FetchError(describe_failure(exc, url, timeout)) from None
    finally:
        if not done.done():
            for response in answered:
                _shut_down(response)
        if session is None:
            owner.close()


def _shut_down(response: requests.Response) -> None:
    """Wake a read blocked on ``response``'s socket by shutting the connection down."""
    connection = getattr(response.raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _read_capped(response: requests.Response, max_bytes: int) -> tuple[bytes, bool]:
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        return b"", True
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(_CHUNK_BYTES):
        size += len(chunk)
        if size > max_bytes:
            return b"", True
        chunks.append(chunk)
    return b"".join(chunks), False


def too_large_message(url: str, max_bytes: int = MAX_BODY_BYTES) -> str:
    return (
        f"The response from {url} is larger than the {max_bytes // (1024 * 1024)} MB limit, "
        "so it was not read. Look for a smaller page or a text version of the document."
    )


def describe_failure(exc: BaseException, url: str, timeout: float) -> str:
    """A one-line account of a transport failure, saying what to try next."""
    parts = urlsplit(url)
    host = parts.netloc or url
    causes = list(_causes(exc))
    refused = refusal_in(causes)
    if refused is not None:
        return refused
    text = " ".join(str(c) for c in causes)
    if any(isinstance(c, requests.exceptions.SSLError) for c in causes):
        return (
            f"TLS error talking to {host}: {_tls_reason(text)}. The certificate could not be "
            "verified or the server does not speak HTTPS there; check the address (http vs https)."
        )
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return (
            f"Timed out after {timeout:g} s connecting to {host}. The host may be down or "
            "unreachable; check the address or try again later."
        )
    if isinstance(exc, requests.exceptions.Timeout):
        return (
            f"Timed out after {timeout:g} s waiting for {host} to answer. The server is slow "
            "or stuck; try again later."
        )
    if isinstance(exc, requests.exceptions.TooManyRedirects):
        return (
            f"Too many redirects starting from {url}; the site is probably redirecting in a loop."
        )
    if isinstance(
        exc,
        requests.exceptions.InvalidURL
        | requests.exceptions.MissingSchema
        | requests.exceptions.InvalidSchema,
    ):
        return f"Not a valid web address: {url!r}."
    if isinstance(
        exc, requests.exceptions.ChunkedEncodingError | requests.exceptions.ContentDecodingError
    ):
        return f"The connection to {host} broke while reading the response; try again."
    if any(type(c).__name__ == "NameResolutionError" for c in causes) or any(
        marker in text
        for marker in ("Name or service not known", "nodename nor servname", "getaddrinfo failed")
    ):
        return (
            f"Could not resolve the host name {parts.hostname!r} (DNS lookup failed). "
            "Check the spelling of the address."
        )
    if any(isinstance(c, ConnectionRefusedError) for c in causes) or "Connection refused" in text:
        return (
            f"Connection refused by {host}: nothing is listening there. Check the address and "
            "port, or whether the server is running."
        )
    if isinstance(exc, requests.exceptions.ConnectionError):
        return f"Could not connect to {host}; check the address or try again later."
    return f"The request to {host} failed ({type(exc).__name__})."


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    stack: list[Any] = [exc]
    while stack:
        item = stack.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        stack.extend([item.__cause__, item.__context__, getattr(item, "reason", None)])
        stack.extend(item.args)


def _tls_reason(text: str) -> str:
    for marker in (
        "certificate verify failed",
        "wrong version number",
        "hostname mismatch",
        "unexpected eof",
        "handshake failure",
        "record layer failure",
    ):
        if marker in text.lower():
            return marker
    return "handshake failed"


@dataclass(frozen=True)
class Submitted:
    """Where a same-host submission ended: the last response and, if it stopped short, why."""

    response: Response
    stopped: str = ""


def send_same_host(
    method: str,
    url: str,
    *,
    session: requests.Session,
    timeout: float,
    user_agent: str | None,
    max_bytes: int = MAX_BODY_BYTES,
    allowed: Reach | None = None,
    **body: Any,
) -> Submitted:
    """Send ``method`` to ``url`` and follow redirects only while they stay on its host.

    301, 302 and 303 continue as a GET without a body; 307 and 308 replay the method and body.
    ``timeout`` bounds the whole chain of requests.
    A redirect to another host, or past :data:`MAX_REDIRECTS` hops, is not followed: the
    redirect response comes back with ``stopped`` explaining it, and nothing is sent onward.
    """
    current = check_url(url)
    deadline = time.monotonic() + timeout
    hops = 0
    while True:
        response = request(
            method,
            current,
            session=session,
            timeout=timeout,
            user_agent=user_agent,
            max_bytes=max_bytes,
            allow_redirects=False,
            deadline=deadline,
            allowed=allowed,
            **body,
        )
        location = response.headers.get("Location")
        if response.status not in _REDIRECT_STATUSES or not location:
            return Submitted(response)
        target = urljoin(response.url, location)
        try:
            check_url(target)
        except FetchError as exc:
            return Submitted(response, f"Not followed: {exc} Nothing was sent there.")
        if not same_host(current, target):
            return Submitted(
                response,
                f"Not followed: this redirects to {target} on a different host. Nothing was "
                "sent there. Submit to that URL directly if you intend to.",
            )
        if hops == MAX_REDIRECTS:
            return Submitted(
                response,
                f"Not followed: stopped after {MAX_REDIRECTS} redirects, the limit; the next "
                f"one points to {target}. The site may be redirecting in a loop.",
            )
        if response.status in (301, 302, 303):
            method, body = "GET", {}
        current = target
        hops += 1


def same_host(origin: str, target: str) -> bool:
    """Whether ``target`` is on ``origin``'s host and port (an upgrade to https counts).

    Both are compared as requests will send them (:func:`prepared_url`), so the rule is
    decided by the same parsing that picks the connection.
    """
    try:
        a, b = destination(prepared_url(origin)), destination(prepared_url(target))
    except (requests.RequestException, ValueError):
        return False
    if b[0] not in ("http", "https") or a[1] != b[1]:
        return False
    if (a[0], b[0]) == ("http", "https"):
        return a[2] == 80 and b[2] == 443
    return a == b
