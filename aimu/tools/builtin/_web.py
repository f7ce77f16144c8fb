"""The web tools: read a page or document, search, look up Wikipedia and the weather.

Stateless: each call opens its own connection and keeps no cookies (the session-sharing form
tools are in :mod:`aimu.tools.builtin._forms`). Every expected failure comes back as a short
string saying what to try, never as an exception.

Service addresses are read at call time, so a notebook can change them mid-session:
``SEARXNG_BASE_URL`` (default ``http://localhost:8080``), ``AIMU_WIKIPEDIA_BASE_URL``
(``https://en.wikipedia.org``), ``AIMU_OPEN_METEO_BASE_URL`` (``https://api.open-meteo.com``)
and ``AIMU_GEOCODING_BASE_URL`` (``https://geocoding-api.open-meteo.com``). The environment
wins; a ``.env`` file found from the working directory upward is read otherwise.

The reading tools connect only to public addresses and loopback unless the user names other
hosts in ``AIMU_WEB_ALLOW_HOSTS`` (comma-separated hosts, addresses or networks); a service
named by one of the settings above is reached wherever it is. See
:mod:`aimu.tools.builtin._address`.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from io import BytesIO
from typing import Any
from urllib.parse import quote, urlsplit

from aimu.tools.builtin import _html, _http
from aimu.tools.builtin._http import FetchError
from aimu.tools.decorator import tool

HTML_WINDOW_CHARS = 20000

_TIME_RANGES = ("day", "week", "month", "year")
_MAX_SEARCH_RESULTS = 20


class _Unreadable(Exception):
    """A body that cannot be turned into text; the message says why, for the model."""


# --- reading ------------------------------------------------------------------------------


@tool(read_only=True)
def get_web_content(url: str, max_chars: int = 20000, offset: int = 1) -> str:
    """Fetches a URL and returns its content as Markdown, for a web page or a document.

    Handles HTML pages (scripts, styles and navigation removed; links made absolute), PDF
    documents, and any textual body: plain text, JSON, and XML (including feed formats like
    RSS and Atom). A page's publication timestamp is prepended as a "Published:" line when
    the page exposes one, and a PDF's text is marked with a "## Page N" heading per page so
    it can be cited.

    A response that declares no Content-Type, or one that is not text (an image, an archive,
    a video), is reported rather than returned. Bodies over 10 MB are refused, and a fetch
    still unfinished after 15 s is abandoned with a message.

    If the result says it was truncated, call again with the offset it names before drawing
    any conclusion from it: a partial document reads exactly like a complete one. Each call
    re-fetches the URL, so prefer a window large enough to answer the question.

    Args:
        url: The URL to retrieve (http:// or https://).
        max_chars: Maximum characters to return (default 20000).
        offset: 1-indexed character to start reading from (default 1, the start).
    """
    try:
        response = _read(url)
        document = _to_markdown(response)
    except (FetchError, _Unreadable) as exc:
        return str(exc)
    if not document.strip():
        return (
            f"{response.url} has no readable text; the page may be built by JavaScript. "
            "get_webpage_html shows its markup."
        )
    return _window(document, offset, max_chars)


@tool(read_only=True)
def get_webpage_html(url: str, offset: int = 1) -> str:
    """Fetches a web page and returns its raw HTML markup (tags and all).

    Use this when you need to see the page structure, e.g. to locate links, attributes, or
    form markup. For readable article text instead, use get_web_content. For inspecting and
    submitting forms with cookie/session persistence, use the tools from make_web_tools().

    This fetches server-rendered HTML only; it does not execute JavaScript. Markup is
    token-heavy, so each call returns a fixed window of 20000 characters; if the result says
    it was truncated, call again with the offset it names. The form or link you are looking
    for is often past the first window of a real page's head and navigation.

    Args:
        url: The URL of the page to retrieve (http:// or https://).
        offset: 1-indexed character to start reading from (default 1, the start).
    """
    try:
        response = _read(url)
        kind = response.kind
        if kind == "pdf":
            raise _Unreadable(f"{response.url} is a PDF, not HTML; read it with get_web_content.")
        if kind not in ("html", "text", "json", "xml"):
            raise _Unreadable(_not_text_message(response))
        markup = response.text(html=kind == "html")
    except (FetchError, _Unreadable) as exc:
        return str(exc)
    return _window(markup, offset, HTML_WINDOW_CHARS)


def _read(url: str) -> _http.Response:
    """GET ``url`` with the read tools' limits; refuse error statuses and oversize bodies."""
    response = _http.request("GET", url, timeout=_http.TIMEOUT_SECONDS)
    if response.oversize:
        raise FetchError(_http.too_large_message(response.url))
    if response.status >= 400:
        raise FetchError(f"The server answered {response.status_line} for {response.url}.")
    return response


def _not_text_message(response: _http.Response) -> str:
    size = f"{len(response.body):,} bytes"
    if not response.has_content_type:
        return (
            f"{response.url} declared no Content-Type ({size}), so its body was not read as "
            "text. It is probably a binary file; there is nothing here to read."
        )
    return (
        f"{response.url} is {response.media_type} ({size}), not text, so it was not returned. "
        "get_web_content reads HTML, PDF, plain text, JSON and XML."
    )


def _to_markdown(response: _http.Response) -> str:
    kind = response.kind
    if kind == "pdf":
        return _pdf_to_markdown(response.body)
    if kind == "html":
        try:
            return _html.page_to_markdown(response.text(html=True), response.url)
        except RecursionError:
            raise _Unreadable(
                f"{response.url} is nested too deeply to convert. get_webpage_html shows its "
                "markup."
            ) from None
    if kind == "json":
        text = response.text()
        try:
            return (
                "```json\n" + json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n```"
            )
        except (ValueError, RecursionError):
            return text
    if kind == "xml":
        text = response.text()
        return _feed_to_markdown(text, response.url) or text
    if kind == "text":
        return response.text()
    raise _Unreadable(_not_text_message(response))


def _pdf_to_markdown(data: bytes) -> str:
    """Each page with text under a ``## Page N`` heading; an owner-only password is tried.

    pypdf is imported here, on the first PDF, to keep it off ``import aimu.tools.builtin``.
    """
    from pypdf import PasswordType, PdfReader

    try:
        reader = PdfReader(BytesIO(data))
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise _Unreadable(
                "This PDF is encrypted and needs a password. Ask the user for an unprotected copy."
            )
        pages = [page.extract_text() or "" for page in reader.pages]
    except _Unreadable:
        raise
    except Exception as exc:  # pypdf on untrusted bytes fails in many ways; none may escape
        raise _Unreadable(f"This PDF could not be read ({type(exc).__name__}: {exc}).") from None
    if not any(text.strip() for text in pages):
        raise _Unreadable(
            f"This PDF has no extractable text in its {len(pages)} page(s); it is probably a "
            "scan, which needs OCR."
        )
    return "\n\n".join(
        f"## Page {number}\n\n{text.strip()}"
        for number, text in enumerate(pages, start=1)
        if text.strip()
    )


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def _child(element: ET.Element, *names: str) -> ET.Element | None:
    for name in names:
        for child in element:
            if _local(child.tag) == name:
                return child
    return None


def _child_text(element: ET.Element, *names: str) -> str:
    child = _child(element, *names)
    return " ".join("".join(child.itertext()).split()) if child is not None else ""


def _item_link(item: ET.Element) -> str:
    """An item's link: RSS's text, or Atom's ``href``, preferring ``rel="alternate"``."""
    links = [child for child in item if _local(child.tag) == "link"]
    links.sort(key=lambda link: link.get("rel", "alternate") != "alternate")
    return next(
        (
            href
            for link in links
            if (href := (link.get("href") or "".join(link.itertext())).strip())
        ),
        "",
    )


def _feed_to_markdown(xml: str, url: str) -> str:
    """An RSS (0.9x, 1.0, 2.0) or Atom feed as Markdown; ``""`` for any other XML."""
    try:
        root = ET.fromstring(xml.lstrip("\ufeff"))
    except ET.ParseError:
        return ""
    if _local(root.tag) not in ("rss", "feed", "rdf"):
        return ""
    channel = _child(root, "channel") if _local(root.tag) != "feed" else root
    head = channel if channel is not None else root
    lines = [f"# {_child_text(head, 'title') or 'Feed'}"]
    if about := _child_text(head, "subtitle", "description"):
        lines.append(_html.soup_to_markdown(_html.parse(about), url))
    for item in root.iter():
        if _local(item.tag) not in ("item", "entry"):
            continue
        lines.append(f"## {_child_text(item, 'title') or '(untitled)'}")
        if href := _item_link(item):
            lines.append(f"Link: {href}")
        if date := _child_text(item, "published", "pubdate", "date", "issued", "updated"):
            lines.append(f"Published: {date}")
        body = _child(item, "encoded", "content", "summary", "description")
        if body is not None and (html := "".join(body.itertext()).strip()):
            lines.append(_html.soup_to_markdown(_html.parse(html), url))
    return "\n\n".join(lines)


def _window(text: str, offset: int, max_chars: int) -> str:
    """``max_chars`` characters from 1-indexed ``offset``, with a notice when partial."""
    total = len(text)
    if offset < 1:
        return f"offset counts from 1 (the first character), got {offset}; use offset=1."
    if max_chars < 1:
        return f"max_chars must be at least 1, got {max_chars}."
    if offset > total:
        return (
            f"offset={offset} is past the end: the document has {total} characters. "
            f"Use an offset from 1 to {total}."
        )
    end = min(total, offset - 1 + max_chars)
    chunk = text[offset - 1 : end]
    if offset == 1 and end == total:
        return chunk
    if end < total:
        notice = (
            f"[Truncated: showing characters {offset}-{end} of {total}. "
            f"Call again with offset={end + 1} to continue.]"
        )
    else:
        notice = f"[Showing characters {offset}-{end} of {total}: the end of the document.]"
    return f"{chunk}\n\n{notice}"


# --- search and lookups ---------------------------------------------------------------------


def _get_json(url: str, params: dict[str, Any], service: str) -> tuple[int, Any]:
    """GET a JSON API: the status and the decoded body (``None`` when it is not JSON). The
    service's host is the user's setting, so it may be reached wherever it is."""
    service_host = urlsplit(url).hostname or ""
    response = _http.request(
        "GET", url, params=params, timeout=10, allowed=_http.reach([service_host])
    )
    if response.oversize:
        raise FetchError(f"{service} sent an answer over the size limit.")
    try:
        return response.status, json.loads(response.text())
    except ValueError:
        return response.status, None


@tool(read_only=True)
def web_search(query: str, num_results: int = 5, time_range: str = "", categories: str = "") -> str:
    """Search the web using a SearXNG instance and return the top results.

    Each result has its title, URL and snippet, plus its publication date when the search
    engine reports one (shown as a "Published:" line), useful for judging how recent an
    article is. Read a result in full with get_web_content.

    Args:
        query: The search query string.
        num_results: Number of results to return (default 5, at most 20).
        time_range: Optional recency filter, one of "day", "week", "month", or "year". Use
            "day" to restrict results to roughly the last 24 hours (best for fresh news).
        categories: Optional SearXNG category filter, e.g. "news" to restrict to news
            engines (which report publication dates far more reliably than general web
            engines). Comma-separated for multiple, e.g. "news,science".

    Set SEARXNG_BASE_URL env var to point to your SearXNG instance (or a .env file)
    (default: http://localhost:8080).
    """
    if not query.strip():
        return "The search query is empty; say what to search for."
    time_range = time_range.strip().lower()
    if time_range and time_range not in _TIME_RANGES:
        return f"time_range must be one of {', '.join(_TIME_RANGES)}, or empty; got {time_range!r}."
    base = _http.setting("SEARXNG_BASE_URL", "http://localhost:8080")
    params = {"q": query, "format": "json"}
    if time_range:
        params["time_range"] = time_range
    if categories.strip():
        params["categories"] = categories.strip()
    try:
        status, data = _get_json(f"{base}/search", params, "SearXNG")
    except FetchError as exc:
        return (
            f"No SearXNG instance answered at {base}: {exc} Point SEARXNG_BASE_URL (in the "
            "environment or a .env file) at a running SearXNG instance, e.g. "
            "http://localhost:8888."
        )
    if status == 403:
        return (
            f"SearXNG at {base} refused JSON output (403). Enable it by adding 'json' to "
            "search.formats in the instance's settings.yml."
        )
    if status != 200:
        return f"SearXNG at {base} answered HTTP {status}; try again or check the instance."
    if not isinstance(data, dict):
        return (
            f"{base} answered without SearXNG's JSON; check that SEARXNG_BASE_URL points at a "
            "SearXNG instance."
        )

    count = max(1, min(num_results, _MAX_SEARCH_RESULTS))
    results = [r for r in data.get("results") or [] if isinstance(r, dict)][:count]
    lines = [f"Answer: {_answer_text(a)}" for a in data.get("answers") or [] if _answer_text(a)]
    for number, result in enumerate(results, start=1):
        entry = [
            f"{number}. {result.get('title') or '(untitled)'}",
            f"   URL: {result.get('url', '')}",
        ]
        if published := result.get("publishedDate") or result.get("pubdate"):
            entry.append(f"   Published: {published}")
        if snippet := " ".join(str(result.get("content") or "").split()):
            entry.append(f"   {snippet}")
        lines.append("\n".join(entry))
    if not results:
        lines.append(f"No results for {query!r}.")
        failed = [str(e[0]) for e in data.get("unresponsive_engines") or [] if e]
        if failed:
            lines.append(f"These engines did not answer: {', '.join(failed)}; try again later.")
        elif time_range or categories:
            lines.append("Try again without the time_range or categories filter.")
    return "\n\n".join(lines)


def _answer_text(answer: Any) -> str:
    return str(answer.get("answer", "") if isinstance(answer, dict) else answer).strip()


@tool(read_only=True)
def wikipedia(query: str) -> str:
    """Fetches a Wikipedia article summary for the given query.

    Tries the query as an article title first, then falls back to a search and says so. A
    disambiguation page is reported with candidate titles to ask for instead.

    Args:
        query: Article title or search phrase (e.g. "Albert Einstein", "general relativity").
    """
    query = " ".join(query.split())
    if not query:
        return "The query is empty; give an article title or a search phrase."
    base = _http.setting("AIMU_WIKIPEDIA_BASE_URL", "https://en.wikipedia.org")
    try:
        summary = _wiki_summary(base, query)
        note = ""
        if summary is None:
            matches = _wiki_search(base, query)
            if not matches:
                return f"No Wikipedia article matches {query!r}. Try other words."
            summary = _wiki_summary(base, matches[0])
            if summary is None:
                return f"No Wikipedia article matches {query!r}. Try other words."
            others = ", ".join(matches[1:])
            note = f"No article is titled {query!r}; this is the best search match."
            if others:
                note += f" Other matches: {others}."
        if summary.get("type") == "disambiguation":
            title = summary.get("title", query)
            candidates = [t for t in _wiki_search(base, title) if t != title]
            listed = f" Candidates: {', '.join(candidates)}." if candidates else ""
            return (
                f"{title!r} is a Wikipedia disambiguation page: the name covers several topics."
                f"{listed} Ask again with a more specific title."
            )
    except FetchError as exc:
        return f"Wikipedia could not be reached: {exc}"
    return _wiki_text(summary, note)


def _wiki_summary(base: str, title: str) -> dict[str, Any] | None:
    path = quote(title.replace(" ", "_"), safe="")
    status, data = _get_json(f"{base}/api/rest_v1/page/summary/{path}", {}, "Wikipedia")
    if status == 404:
        return None
    if status != 200 or not isinstance(data, dict):
        raise FetchError(f"Wikipedia answered HTTP {status}; try again later.")
    return data


def _wiki_search(base: str, query: str) -> list[str]:
    params = {
        "action": "query",
        "list": "search",
        "srsearch": query,
        "srlimit": 5,
        "format": "json",
        "formatversion": 2,
    }
    status, data = _get_json(f"{base}/w/api.php", params, "Wikipedia search")
    if status != 200 or not isinstance(data, dict):
        raise FetchError(f"Wikipedia search answered HTTP {status}; try again later.")
    hits = (data.get("query") or {}).get("search") or []
    return [hit["title"] for hit in hits if isinstance(hit, dict) and hit.get("title")]


def _wiki_text(summary: dict[str, Any], note: str) -> str:
    title = summary.get("title") or "(untitled)"
    lines = [note] if note else []
    lines.append(f"# {title}")
    if description := summary.get("description"):
        lines.append(str(description))
    lines.append(summary.get("extract") or "(This article has no summary text.)")
    url = ((summary.get("content_urls") or {}).get("desktop") or {}).get("page")
    if url:
        lines.append(f"Source: {url}")
    return "\n\n".join(lines)


_COORDINATES = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$")
_CURRENT = (
    "temperature_2m,apparent_temperature,relative_humidity_2m,precipitation,weather_code,"
    "cloud_cover,wind_speed_10m,wind_direction_10m,wind_gusts_10m"
)
_WMO_CODES = {
    0: "Clear sky", 1: "Mainly clear", 2: "Partly cloudy", 3: "Overcast", 45: "Fog",
    48: "Depositing rime fog", 51: "Light drizzle", 53: "Moderate drizzle",
    55: "Dense drizzle", 56: "Light freezing drizzle", 57: "Dense freezing drizzle",
    61: "Slight rain", 63: "Moderate rain", 65: "Heavy rain", 66: "Light freezing rain",
    67: "Heavy freezing rain", 71: "Slight snowfall", 73: "Moderate snowfall",
    75: "Heavy snowfall", 77: "Snow grains", 80: "Slight rain showers",
    81: "Moderate rain showers", 82: "Violent rain showers", 85: "Slight snow showers",
    86: "Heavy snow showers", 95: "Thunderstorm", 96: "Thunderstorm with slight hail",
    99: "Thunderstorm with heavy hail",
}  # fmt: skip
_COMPASS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")


@tool(read_only=True)
def get_weather(location: str) -> str:
    """Returns the current weather for a given location, from Open-Meteo.

    The result states its units (temperature in °C, wind in km/h, precipitation in mm) and
    the local time of the observation.

    Args:
        location: City name, optionally with region or country ("Paris", "Portland, Oregon",
            "Paris, France"), or coordinates as "latitude,longitude" (e.g. "48.8566,2.3522").
    """
    try:
        place = _locate(location)
        if isinstance(place, str):
            return place
        name, latitude, longitude = place
        base = _http.setting("AIMU_OPEN_METEO_BASE_URL", "https://api.open-meteo.com")
        params = {"latitude": latitude, "longitude": longitude, "current": _CURRENT}
        status, data = _get_json(f"{base}/v1/forecast", params | {"timezone": "auto"}, "Open-Meteo")
    except FetchError as exc:
        return f"The weather service could not be reached: {exc}"
    if not isinstance(data, dict) or status != 200 or not isinstance(data.get("current"), dict):
        reason = data.get("reason") if isinstance(data, dict) else None
        return f"Open-Meteo refused the request: {reason or f'HTTP {status}'}."
    return _weather_text(name, data)


def _locate(location: str) -> tuple[str, float, float] | str:
    """``(name, latitude, longitude)``, or a message when the place cannot be found."""
    if match := _COORDINATES.match(location):
        latitude, longitude = float(match[1]), float(match[2])
        if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
            return (
                f"{location!r} is out of range: latitude is -90 to 90 and longitude -180 to 180, "
                "written as 'latitude,longitude'."
            )
        return f"{latitude:g}, {longitude:g}", latitude, longitude
    name, *qualifiers = [part.strip() for part in location.split(",") if part.strip()] or [""]
    if not name:
        return "The location is empty; give a city name or 'latitude,longitude'."
    base = _http.setting("AIMU_GEOCODING_BASE_URL", "https://geocoding-api.open-meteo.com")
    params = {"name": name, "count": 10, "language": "en", "format": "json"}
    status, data = _get_json(f"{base}/v1/search", params, "Open-Meteo geocoding")
    if status != 200 or not isinstance(data, dict):
        reason = data.get("reason") if isinstance(data, dict) else None
        return f"Open-Meteo geocoding refused {name!r}: {reason or f'HTTP {status}'}."
    places = [p for p in data.get("results") or [] if isinstance(p, dict) and "latitude" in p]
    if not places:
        return (
            f"No place named {name!r} was found. Check the spelling, or give 'latitude,longitude'."
        )
    wanted = [q.lower() for q in qualifiers]
    chosen = next((p for p in places if all(_matches(p, q) for q in wanted)), None)
    if chosen is None:
        found = "; ".join(_place_name(p) for p in places[:5])
        return f"No {name!r} in {', '.join(qualifiers)} was found. Places with that name: {found}."
    return _place_name(chosen), float(chosen["latitude"]), float(chosen["longitude"])


def _matches(place: dict[str, Any], qualifier: str) -> bool:
    fields = ("country", "country_code", "admin1", "admin2", "admin3", "admin4")
    return any(str(place.get(f) or "").lower().startswith(qualifier) for f in fields)


def _place_name(place: dict[str, Any]) -> str:
    parts = [place.get("name"), place.get("admin1"), place.get("country")]
    return ", ".join(dict.fromkeys(str(p) for p in parts if p))


def _weather_text(name: str, data: dict[str, Any]) -> str:
    now, units = data["current"], data.get("current_units") or {}

    def value(key: str) -> str:
        unit = units.get(key, "")
        return f"{now[key]} {unit}".strip() if now.get(key) is not None else "n/a"

    code = now.get("weather_code")
    sky = _WMO_CODES.get(code, f"Weather code {code}") if code is not None else "Conditions unknown"
    zone = " ".join(str(z) for z in (data.get("timezone"), data.get("timezone_abbreviation")) if z)
    when = f" at {now['time']} local time ({zone})" if now.get("time") else ""
    wind = f"Wind {value('wind_speed_10m')}"
    if (direction := now.get("wind_direction_10m")) is not None:
        point = _COMPASS[round(float(direction) / 45) % 8]
        wind += f" from the {point} ({value('wind_direction_10m')})"
    if now.get("wind_gusts_10m") is not None:
        wind += f", gusts {value('wind_gusts_10m')}"
    return (
        f"Current weather in {name} ({data.get('latitude')}, {data.get('longitude')}){when}:\n"
        f"{sky}. Temperature {value('temperature_2m')} (feels like "
        f"{value('apparent_temperature')}). Humidity {value('relative_humidity_2m')}. "
        f"Precipitation {value('precipitation')}. Cloud cover {value('cloud_cover')}. {wind}.\n"
        "Source: Open-Meteo."
    )


WEB_TOOLS = [get_web_content, get_webpage_html, web_search, wikipedia, get_weather]
