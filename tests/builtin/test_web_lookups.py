"""web_search, wikipedia and get_weather against loopback fakes speaking the real JSON shapes.

The payloads below follow what SearXNG (``/search?format=json``), Wikipedia's REST summary
and Action API search, and Open-Meteo's geocoding and forecast endpoints actually return.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from pytest_httpserver import HTTPServer

from aimu.tools.builtin._web import get_weather, web_search, wikipedia


@pytest.fixture(scope="module")
def running_server() -> Iterator[HTTPServer]:
    with HTTPServer("127.0.0.1", 0, threaded=True) as running:
        yield running


@pytest.fixture
def server(running_server: HTTPServer, monkeypatch) -> Iterator[HTTPServer]:
    base = running_server.url_for("").rstrip("/")
    for name in ("SEARXNG_BASE_URL", "AIMU_WIKIPEDIA_BASE_URL"):
        monkeypatch.setenv(name, base)
    monkeypatch.setenv("AIMU_OPEN_METEO_BASE_URL", base + "/forecast-api")
    monkeypatch.setenv("AIMU_GEOCODING_BASE_URL", base + "/geo-api")
    yield running_server
    running_server.clear()


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


# --- SearXNG -------------------------------------------------------------------------------

SEARXNG_RESPONSE = {
    "query": "tide tables",
    "number_of_results": 0,
    "results": [
        {
            "url": "https://tides.example/today",
            "title": "Tide tables for today",
            "content": "High water at 07:12 and 19:40.",
            "publishedDate": "2024-05-07T06:00:00",
            "thumbnail": "",
            "engine": "bing news",
            "template": "default.html",
            "parsed_url": ["https", "tides.example", "/today", "", "", ""],
            "engines": ["bing news"],
            "positions": [1],
            "score": 1.0,
            "category": "news",
        },
        {
            "url": "https://almanac.example/tides",
            "title": "How tides work",
            "content": "The moon's   pull\n explained.",
            "publishedDate": None,
            "engine": "duckduckgo",
            "template": "default.html",
            "parsed_url": ["https", "almanac.example", "/tides", "", "", ""],
            "engines": ["duckduckgo"],
            "positions": [2],
            "score": 0.5,
            "category": "general",
        },
        {
            "url": "https://third.example/",
            "title": "Third result",
            "content": "",
            "engine": "duckduckgo",
            "engines": ["duckduckgo"],
            "positions": [3],
            "score": 0.2,
            "category": "general",
        },
    ],
    "answers": [],
    "corrections": [],
    "infoboxes": [],
    "suggestions": ["tide times"],
    "unresponsive_engines": [],
}


def test_search_returns_title_url_snippet_and_published_date(server):
    server.expect_request(
        "/search",
        query_string={
            "q": "tide tables",
            "format": "json",
            "time_range": "day",
            "categories": "news",
        },
    ).respond_with_json(SEARXNG_RESPONSE)

    text = web_search("tide tables", num_results=2, time_range="day", categories="news")

    assert text == (
        "1. Tide tables for today\n"
        "   URL: https://tides.example/today\n"
        "   Published: 2024-05-07T06:00:00\n"
        "   High water at 07:12 and 19:40.\n\n"
        "2. How tides work\n"
        "   URL: https://almanac.example/tides\n"
        "   The moon's pull explained."
    )


def test_search_base_url_is_read_at_call_time(server, monkeypatch):
    server.expect_request("/search").respond_with_json(SEARXNG_RESPONSE)
    monkeypatch.setenv("SEARXNG_BASE_URL", _closed_port_url())
    assert web_search("tides").startswith("No SearXNG instance answered")

    monkeypatch.setenv("SEARXNG_BASE_URL", server.url_for("/"))

    assert web_search("tides").startswith("1. Tide tables for today")


def test_search_base_url_comes_from_a_dotenv_file(server, monkeypatch, tmp_path):
    server.expect_request("/search").respond_with_json(SEARXNG_RESPONSE)
    (tmp_path / ".env").write_text(f"SEARXNG_BASE_URL={server.url_for('')}\n")
    work = tmp_path / "project" / "notebooks"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.delenv("SEARXNG_BASE_URL")

    assert web_search("tides", num_results=1).startswith("1. Tide tables for today")


def test_missing_searxng_instance_says_how_to_point_at_one(monkeypatch):
    base = _closed_port_url()
    monkeypatch.setenv("SEARXNG_BASE_URL", base)

    text = web_search("anything")

    assert text.startswith(f"No SearXNG instance answered at {base}: Connection refused")
    assert "SEARXNG_BASE_URL (in the environment or a .env file)" in text


def test_searxng_without_json_format_enabled_is_explained(server):
    server.expect_request("/search").respond_with_data("Forbidden", status=403)

    assert web_search("tides") == (
        f"SearXNG at {server.url_for('').rstrip('/')} refused JSON output (403). Enable it by "
        "adding 'json' to search.formats in the instance's settings.yml."
    )


def test_address_that_is_not_searxng_is_explained(server):
    server.expect_request("/search").respond_with_data("<html>router login</html>")

    assert "check that SEARXNG_BASE_URL points at a SearXNG instance" in web_search("tides")


def test_no_results_names_engines_that_did_not_answer(server):
    empty = SEARXNG_RESPONSE | {
        "results": [],
        "unresponsive_engines": [["google", "timeout"], ["bing", "HTTP error"]],
    }
    server.expect_request("/search").respond_with_json(empty)

    assert web_search("zzz") == (
        "No results for 'zzz'.\n\nThese engines did not answer: google, bing; try again later."
    )


def test_bad_time_range_is_refused_before_any_request(server):
    text = web_search("tides", time_range="fortnight")

    assert text == "time_range must be one of day, week, month, year, or empty; got 'fortnight'."
    assert server.log == []


# --- Wikipedia -----------------------------------------------------------------------------


def _summary(title: str, extract: str, kind: str = "standard") -> dict:
    slug = title.replace(" ", "_")
    return {
        "type": kind,
        "title": title,
        "displaytitle": f'<span class="mw-page-title-main">{title}</span>',
        "namespace": {"id": 0, "text": ""},
        "wikibase_item": "Q1",
        "titles": {"canonical": slug, "normalized": title, "display": title},
        "pageid": 736,
        "lang": "en",
        "dir": "ltr",
        "revision": "1223456789",
        "tid": "a1b2c3",
        "timestamp": "2024-05-01T12:00:00Z",
        "description": "German-born physicist (1879–1955)" if kind == "standard" else None,
        "description_source": "local",
        "content_urls": {
            "desktop": {"page": f"https://en.wikipedia.org/wiki/{slug}"},
            "mobile": {"page": f"https://en.m.wikipedia.org/wiki/{slug}"},
        },
        "extract": extract,
        "extract_html": f"<p>{extract}</p>",
    }


NOT_FOUND = {
    "type": "https://mediawiki.org/wiki/HyperSwitch/errors/not_found",
    "title": "Not found.",
    "method": "get",
    "detail": "Page or revision not found.",
    "uri": "/en.wikipedia.org/v1/page/summary/Relativty_theory",
}


def _search(*titles: str) -> dict:
    return {
        "batchcomplete": True,
        "continue": {"sroffset": len(titles), "continue": "-||"},
        "query": {
            "searchinfo": {"totalhits": 1234},
            "search": [
                {
                    "ns": 0,
                    "title": title,
                    "pageid": 1000 + n,
                    "size": 120000,
                    "wordcount": 9000,
                    "snippet": f'<span class="searchmatch">{title}</span> is a topic',
                    "timestamp": "2024-04-30T10:00:00Z",
                }
                for n, title in enumerate(titles)
            ],
        },
    }


def test_wikipedia_returns_the_article_summary(server):
    extract = "Albert Einstein was a German-born theoretical physicist."
    server.expect_request("/api/rest_v1/page/summary/Albert_Einstein").respond_with_json(
        _summary("Albert Einstein", extract)
    )

    assert wikipedia("Albert Einstein") == (
        "# Albert Einstein\n\nGerman-born physicist (1879–1955)\n\n"
        f"{extract}\n\nSource: https://en.wikipedia.org/wiki/Albert_Einstein"
    )


def test_wikipedia_falls_back_to_search_and_says_so(server):
    server.expect_request("/api/rest_v1/page/summary/relativty_theory").respond_with_json(
        NOT_FOUND, status=404
    )
    server.expect_request("/w/api.php").respond_with_json(
        _search("Theory of relativity", "Special relativity")
    )
    server.expect_request("/api/rest_v1/page/summary/Theory_of_relativity").respond_with_json(
        _summary("Theory of relativity", "The theory of relativity usually encompasses...")
    )

    text = wikipedia("relativty theory")

    assert text.startswith(
        "No article is titled 'relativty theory'; this is the best search match. "
        "Other matches: Special relativity.\n\n# Theory of relativity"
    )
    search = next(r for r, _ in server.log if r.path == "/w/api.php")
    assert search.args["list"] == "search" and search.args["srsearch"] == "relativty theory"


def test_wikipedia_disambiguation_page_lists_candidates(server):
    server.expect_request("/api/rest_v1/page/summary/Mercury").respond_with_json(
        _summary("Mercury", "Mercury usually refers to:", kind="disambiguation")
    )
    server.expect_request("/w/api.php").respond_with_json(
        _search("Mercury", "Mercury (planet)", "Mercury (element)")
    )

    assert wikipedia("Mercury") == (
        "'Mercury' is a Wikipedia disambiguation page: the name covers several topics. "
        "Candidates: Mercury (planet), Mercury (element). Ask again with a more specific title."
    )


def test_wikipedia_with_no_match_says_so(server):
    server.expect_request("/api/rest_v1/page/summary/Qwxzv").respond_with_json(
        NOT_FOUND, status=404
    )
    server.expect_request("/w/api.php").respond_with_json(_search())

    assert wikipedia("Qwxzv") == "No Wikipedia article matches 'Qwxzv'. Try other words."


def test_wikipedia_unreachable_is_a_short_error(monkeypatch):
    monkeypatch.setenv("AIMU_WIKIPEDIA_BASE_URL", _closed_port_url())

    assert wikipedia("Anything").startswith("Wikipedia could not be reached: Connection refused")


# --- Open-Meteo ----------------------------------------------------------------------------


def _place(name, latitude, longitude, country, code, admin1) -> dict:
    return {
        "id": 2988507,
        "name": name,
        "latitude": latitude,
        "longitude": longitude,
        "elevation": 42.0,
        "feature_code": "PPLC",
        "country_code": code,
        "admin1_id": 3012874,
        "timezone": "Europe/Paris",
        "population": 2138551,
        "country_id": 3017382,
        "country": country,
        "admin1": admin1,
    }


PARIS = _place("Paris", 48.85341, 2.3488, "France", "FR", "Île-de-France")
PARIS_TX = _place("Paris", 33.66094, -95.55551, "United States", "US", "Texas")

FORECAST = {
    "latitude": 48.86,
    "longitude": 2.3399997,
    "generationtime_ms": 0.05,
    "utc_offset_seconds": 7200,
    "timezone": "Europe/Paris",
    "timezone_abbreviation": "GMT+2",
    "elevation": 43.0,
    "current_units": {
        "time": "iso8601",
        "interval": "seconds",
        "temperature_2m": "°C",
        "apparent_temperature": "°C",
        "relative_humidity_2m": "%",
        "precipitation": "mm",
        "weather_code": "wmo code",
        "cloud_cover": "%",
        "wind_speed_10m": "km/h",
        "wind_direction_10m": "°",
        "wind_gusts_10m": "km/h",
    },
    "current": {
        "time": "2024-05-07T14:15",
        "interval": 900,
        "temperature_2m": 17.4,
        "apparent_temperature": 16.1,
        "relative_humidity_2m": 62,
        "precipitation": 0.0,
        "weather_code": 3,
        "cloud_cover": 100,
        "wind_speed_10m": 12.2,
        "wind_direction_10m": 225,
        "wind_gusts_10m": 27.7,
    },
}


def test_weather_for_a_city_geocodes_then_reports_with_units(server):
    server.expect_request("/geo-api/v1/search").respond_with_json(
        {"results": [PARIS, PARIS_TX], "generationtime_ms": 0.6}
    )
    server.expect_request("/forecast-api/v1/forecast").respond_with_json(FORECAST)

    text = get_weather("Paris")

    assert text == (
        "Current weather in Paris, Île-de-France, France (48.86, 2.3399997) at 2024-05-07T14:15 "
        "local time (Europe/Paris GMT+2):\n"
        "Overcast. Temperature 17.4 °C (feels like 16.1 °C). Humidity 62 %. "
        "Precipitation 0.0 mm. Cloud cover 100 %. Wind 12.2 km/h from the SW (225 °), "
        "gusts 27.7 km/h.\nSource: Open-Meteo."
    )
    forecast = next(r for r, _ in server.log if r.path.endswith("/forecast"))
    assert (forecast.args["latitude"], forecast.args["longitude"]) == ("48.85341", "2.3488")
    assert "temperature_2m" in forecast.args["current"].split(",")


def test_weather_qualifier_picks_the_right_place(server):
    server.expect_request("/geo-api/v1/search").respond_with_json(
        {"results": [PARIS, PARIS_TX], "generationtime_ms": 0.6}
    )
    server.expect_request("/forecast-api/v1/forecast").respond_with_json(FORECAST)

    assert get_weather("Paris, Texas").startswith("Current weather in Paris, Texas, United States")
    geocode = next(r for r, _ in server.log if r.path.endswith("/search"))
    assert geocode.args["name"] == "Paris"


def test_coordinates_skip_geocoding(server):
    server.expect_request("/forecast-api/v1/forecast").respond_with_json(FORECAST)

    text = get_weather("48.8566, 2.3522")

    assert text.startswith("Current weather in 48.8566, 2.3522 (48.86, 2.3399997)")
    assert [r.path for r, _ in server.log] == ["/forecast-api/v1/forecast"]


def test_unknown_place_is_reported(server):
    server.expect_request("/geo-api/v1/search").respond_with_json({"generationtime_ms": 0.4})

    assert get_weather("Atlantis") == (
        "No place named 'Atlantis' was found. Check the spelling, or give 'latitude,longitude'."
    )


def test_out_of_range_coordinates_are_refused_before_any_request(server):
    assert "out of range" in get_weather("123.0,45.0")
    assert server.log == []


def test_open_meteo_error_reason_is_passed_on(server):
    server.expect_request("/forecast-api/v1/forecast").respond_with_json(
        {"error": True, "reason": "Cannot initialize WeatherVariable from invalid String value"},
        status=400,
    )

    assert get_weather("10,10") == (
        "Open-Meteo refused the request: Cannot initialize WeatherVariable from invalid String "
        "value."
    )
