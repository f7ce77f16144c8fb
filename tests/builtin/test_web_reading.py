"""get_web_content and get_webpage_html against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from aimu.tools.builtin._http import MAX_BODY_BYTES
from aimu.tools.builtin._web import get_web_content, get_webpage_html

ARTICLE = """<!doctype html>
<html lang="en"><head>
  <meta charset="utf-8">
  <title>Tide pools | Coast Weekly</title>
  <meta property="article:published_time" content="2024-05-01T09:30:00Z">
  <style>.promo { color: red } /* STYLE-MARKER */</style>
  <script>window.tracker = "SCRIPT-MARKER";</script>
</head><body>
  <header><a href="/">Coast Weekly</a> <nav><a href="/news">NAV-MARKER News</a></nav></header>
  <main>
    <article>
      <h1>Life in the tide pools</h1>
      <p>Anemones and <a href="/species/crab">shore crabs</a> share the <em>rocky</em> shelf.</p>
      <h2>What lives there</h2>
      <ul><li>Sea anemones</li><li>Hermit crabs</li><li>Periwinkles</li></ul>
      <h2>Counts by month</h2>
      <table>
        <tr><th>Month</th><th>Anemones</th></tr>
        <tr><td>May</td><td>41</td></tr>
        <tr><td>June</td><td>57</td></tr>
      </table>
      <div hidden>HIDDEN-MARKER</div>
      <script>document.write("INLINE-SCRIPT-MARKER")</script>
    </article>
  </main>
  <aside>ASIDE-MARKER related stories</aside>
  <footer>FOOTER-MARKER copyright</footer>
</body></html>"""


def _make_pdf(pages: list[str]) -> bytes:
    """A minimal valid PDF, one line of Helvetica text per page."""
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for text in pages:
        stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET"
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {len(objects)} 0 R"
            " /Resources << /Font << /F1 3 0 R >> >> >>"
        )
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n".encode()
    out += f"startxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


@pytest.fixture(scope="module")
def running_server() -> Iterator[HTTPServer]:
    with HTTPServer("127.0.0.1", 0, threaded=True) as running:
        yield running


@pytest.fixture
def server(running_server: HTTPServer) -> Iterator[HTTPServer]:
    yield running_server
    running_server.clear()


def _serve(server: HTTPServer, path: str, body: bytes | str, content_type: str | None) -> str:
    def handler(_request: Request) -> Response:
        response = Response(body)
        if content_type is None:
            del response.headers["Content-Type"]
        else:
            response.headers["Content-Type"] = content_type
        return response

    server.expect_request(path).respond_with_handler(handler)
    return server.url_for(path)


def test_article_page_keeps_headings_lists_links_and_tables_but_not_scripts(server):
    url = _serve(server, "/article", ARTICLE, "text/html; charset=utf-8")

    text = get_web_content(url)

    assert text.startswith("Published: 2024-05-01T09:30:00Z\n\n# Life in the tide pools")
    assert "## What lives there" in text
    assert "- Sea anemones\n- Hermit crabs\n- Periwinkles" in text
    assert f"[shore crabs]({server.url_for('/species/crab')})" in text
    assert "| Month | Anemones |" in text and "| June | 57 |" in text
    assert "*rocky*" in text
    for marker in ("SCRIPT-MARKER", "STYLE-MARKER", "NAV-MARKER", "ASIDE-MARKER", "FOOTER"):
        assert marker not in text
    assert "HIDDEN-MARKER" not in text


@pytest.mark.parametrize(
    "head, body, expected",
    [
        ('<meta name="date" content="2023-11-02">', "<p>x</p>", "2023-11-02"),
        (
            '<script type="application/ld+json">{"@context": "https://schema.org", "@graph": '
            '[{"@type": "NewsArticle", "datePublished": "2022-03-04T05:06:07+01:00"}]}</script>',
            "<p>x</p>",
            "2022-03-04T05:06:07+01:00",
        ),
        ("", '<article><time datetime="2021-07-08">July 8</time><p>x</p></article>', "2021-07-08"),
    ],
    ids=["meta", "json-ld", "time"],
)
def test_publication_time_is_found_in_meta_json_ld_or_time(server, head, body, expected):
    url = _serve(server, "/p", f"<html><head>{head}</head><body>{body}</body></html>", "text/html")

    assert get_web_content(url).startswith(f"Published: {expected}\n\n")


def test_page_without_a_date_has_no_published_line(server):
    url = _serve(server, "/p", "<html><body><p>Plain</p></body></html>", "text/html")

    assert get_web_content(url) == "Plain"


def test_pdf_made_here_reads_with_a_heading_per_page(server):
    pdf = _make_pdf(["Quarterly revenue rose", "Costs fell in March"])
    url = _serve(server, "/report.pdf", pdf, "application/pdf")

    text = get_web_content(url)

    assert text == "## Page 1\n\nQuarterly revenue rose\n\n## Page 2\n\nCosts fell in March"


def test_pdf_served_as_octet_stream_is_still_read(server):
    url = _serve(server, "/dl", _make_pdf(["Signed copy"]), "application/octet-stream")

    assert get_web_content(url) == "## Page 1\n\nSigned copy"


def test_corrupt_pdf_is_reported(server):
    url = _serve(server, "/bad.pdf", b"%PDF-1.4\nthis is not a pdf body", "application/pdf")

    assert "This PDF could not be read" in get_web_content(url)


RSS = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel>
  <title>Harbour News</title><link>https://harbour.example/</link>
  <description>Daily notes from the harbour</description>
  <item><title>Ferry timetable changes</title><link>https://harbour.example/ferry</link>
    <pubDate>Tue, 07 May 2024 08:00:00 GMT</pubDate>
    <description>&lt;p&gt;Sailings move to &lt;b&gt;07:15&lt;/b&gt;.&lt;/p&gt;</description></item>
  <item><title>New pier opens</title><link>https://harbour.example/pier</link>
    <pubDate>Mon, 06 May 2024 12:00:00 GMT</pubDate>
    <content:encoded><![CDATA[<p>The pier is <em>open</em>.</p>]]></content:encoded></item>
</channel></rss>"""

ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Lab Notebook</title><subtitle>Results as they come</subtitle>
  <updated>2024-06-01T00:00:00Z</updated>
  <entry><title>Run 42 converged</title>
    <link rel="edit" href="https://lab.example/api/entries/42"/>
    <link rel="alternate" href="https://lab.example/run-42"/>
    <published>2024-05-30T17:00:00Z</published><updated>2024-05-31T09:00:00Z</updated>
    <summary type="html">&lt;p&gt;Loss fell to 0.01.&lt;/p&gt;</summary></entry>
</feed>"""


def test_rss_feed_lists_items_with_links_and_dates(server):
    url = _serve(server, "/rss", RSS, "application/rss+xml")

    text = get_web_content(url)

    assert text.startswith("# Harbour News\n\nDaily notes from the harbour")
    assert (
        "## Ferry timetable changes\n\nLink: https://harbour.example/ferry\n\n"
        "Published: Tue, 07 May 2024 08:00:00 GMT\n\nSailings move to **07:15**."
    ) in text
    assert "## New pier opens" in text and "The pier is *open*." in text


def test_atom_feed_lists_entries_with_links_and_dates(server):
    url = _serve(server, "/atom", ATOM, "application/atom+xml")

    text = get_web_content(url)

    assert text.startswith("# Lab Notebook\n\nResults as they come")
    assert (
        "## Run 42 converged\n\nLink: https://lab.example/run-42\n\n"
        "Published: 2024-05-30T17:00:00Z\n\nLoss fell to 0.01."
    ) in text


def test_xml_that_is_not_a_feed_comes_back_as_is(server):
    xml = '<?xml version="1.0"?><catalog><book id="b1">Dune</book></catalog>'
    url = _serve(server, "/c.xml", xml, "application/xml")

    assert get_web_content(url) == xml


def test_json_body_is_returned_pretty_printed(server):
    url = _serve(server, "/api", '{"city":"Zürich","temps":[3,5]}', "application/json")

    text = get_web_content(url)

    assert text == '```json\n{\n  "city": "Zürich",\n  "temps": [\n    3,\n    5\n  ]\n}\n```'


def test_plain_text_is_returned_unchanged(server):
    url = _serve(server, "/notes.txt", "line one\nline two\n", "text/plain")

    assert get_web_content(url) == "line one\nline two\n"


@pytest.mark.parametrize(
    "content_type, head",
    [
        ("text/html; charset=ISO-8859-1", ""),
        ("text/html", '<meta charset="iso-8859-1">'),
        ("text/html", '<meta http-equiv="Content-Type" content="text/html; charset=latin1">'),
    ],
    ids=["header", "meta-charset", "http-equiv"],
)
def test_latin1_page_is_decoded_by_its_declared_charset(server, content_type, head):
    page = f"<html><head>{head}</head><body><p>Café crème à Genève, naïve façade</p></body></html>"
    url = _serve(server, "/fr", page.encode("latin-1"), content_type)

    assert get_web_content(url) == "Café crème à Genève, naïve façade"


def test_latin1_label_decodes_windows_1252_quotes_as_browsers_do(server):
    page = "<p>“Quoted” – dash</p>".encode("cp1252")
    url = _serve(server, "/q", page, "text/html; charset=iso-8859-1")

    assert get_web_content(url) == "“Quoted” – dash"


@pytest.mark.parametrize("text", ["café crème brûlée", "naïve “quotes” – 5 €"])
def test_undeclared_text_that_is_not_utf8_is_read_as_windows_1252(server, text):
    url = _serve(server, "/menu.txt", text.encode("cp1252"), "text/plain")

    assert get_web_content(url) == text


def test_undeclared_utf8_stays_utf8(server):
    url = _serve(server, "/menu-utf8.txt", "café crème brûlée".encode(), "text/plain")

    assert get_web_content(url) == "café crème brûlée"


def test_a_byte_order_mark_decides_the_encoding(server):
    body = "\ufeffZürich".encode("utf-16-le")
    url = _serve(server, "/bom.txt", body, "text/plain")

    assert get_web_content(url) == "Zürich"


def test_long_undeclared_windows_1252_prose_is_read_whole(server):
    prose = (
        "Les élèves étudièrent la géographie française près du lac. Ils dînèrent à côté de "
        "l'église, où l'été précédent on avait célébré une fête très animée. "
    ) * 4
    url = _serve(server, "/guess", prose.encode("cp1252"), "text/plain")

    assert get_web_content(url) == prose


def test_image_body_is_refused_not_returned(server):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    url = _serve(server, "/logo.png", png, "image/png")

    text = get_web_content(url)

    assert text == (
        f"{url} is image/png (1,032 bytes), not text, so it was not returned. "
        "get_web_content reads HTML, PDF, plain text, JSON and XML."
    )


def test_body_without_content_type_is_refused(server):
    url = _serve(server, "/blob", b"PK\x03\x04" + bytes(200), None)

    assert "declared no Content-Type" in get_web_content(url)
    assert "declared no Content-Type" in get_webpage_html(url)


def test_body_over_the_size_cap_is_refused_when_declared(server):
    url = _serve(server, "/big", b"a" * (MAX_BODY_BYTES + 1), "text/plain")

    assert "larger than the 10 MB limit" in get_web_content(url)


def test_streamed_body_over_the_size_cap_is_refused(server):
    chunk = b"b" * (1024 * 1024)

    def handler(_request: Request) -> Response:
        chunks = (chunk for _ in range(MAX_BODY_BYTES // len(chunk) + 1))
        return Response(chunks, content_type="text/plain")

    server.expect_request("/stream").respond_with_handler(handler)

    assert "larger than the 10 MB limit" in get_web_content(server.url_for("/stream"))


def _strip_notice(window: str) -> str:
    return re.sub(r"\n\n\[(Truncated|Showing)[^\]]*\]\Z", "", window)


def test_paging_with_offsets_reassembles_the_document_exactly(server):
    paragraphs = [f"Paragraph {n}: the ß, é and 🌊 characters count once each." for n in range(900)]
    document = "\n\n".join(paragraphs)
    url = _serve(server, "/long.txt", document, "text/plain; charset=utf-8")

    pieces, offset = [], 1
    while True:
        window = get_web_content(url, max_chars=7000, offset=offset)
        pieces.append(_strip_notice(window))
        found = re.search(r"Call again with offset=(\d+)", window)
        if not found:
            assert window.endswith(f"of {len(document)}: the end of the document.]")
            break
        offset = int(found.group(1))

    assert "".join(pieces) == document
    assert len(pieces) == -(-len(document) // 7000)


def test_truncated_window_names_the_offset_to_continue(server):
    url = _serve(server, "/t.txt", "x" * 30, "text/plain")

    window = get_web_content(url, max_chars=10, offset=11)

    assert window == (
        "x" * 10 + "\n\n[Truncated: showing characters 11-20 of 30. "
        "Call again with offset=21 to continue.]"
    )


def test_offset_past_the_end_is_explained(server):
    url = _serve(server, "/t.txt", "short", "text/plain")

    assert get_web_content(url, offset=99) == (
        "offset=99 is past the end: the document has 5 characters. Use an offset from 1 to 5."
    )
    assert "counts from 1" in get_web_content(url, offset=0)


def test_raw_html_pages_in_fixed_windows_that_reassemble_exactly(server):
    rows = "".join(f"<tr><td>row {n}</td><td>é</td></tr>\n" for n in range(2000))
    page = f"<html><body><table>{rows}</table><form action='/go'></form></body></html>"
    url = _serve(server, "/table", page, "text/html; charset=utf-8")

    first = get_webpage_html(url)
    assert first.startswith("<html><body><table><tr>")
    assert "Call again with offset=20001 to continue." in first

    pieces, offset = [], 1
    while True:
        window = get_webpage_html(url, offset=offset)
        pieces.append(_strip_notice(window))
        found = re.search(r"Call again with offset=(\d+)", window)
        if not found:
            break
        offset = int(found.group(1))
    assert "".join(pieces) == page


def test_error_status_is_reported(server):
    server.expect_request("/gone").respond_with_data("nope", status=404)

    assert get_web_content(server.url_for("/gone")) == (
        f"The server answered 404 NOT FOUND for {server.url_for('/gone')}."
    )


def test_page_with_no_text_points_at_the_markup_tool(server):
    url = _serve(server, "/spa", '<html><body><div id="root"></div></body></html>', "text/html")

    assert "get_webpage_html" in get_web_content(url)


def test_pathologically_nested_page_is_reported_not_raised(server):
    page = "<div>" * 5000 + "deep" + "</div>" * 5000
    url = _serve(server, "/deep", page, "text/html")

    assert "nested too deeply" in get_web_content(url)


def test_connection_refused_is_a_short_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    text = get_web_content(f"http://127.0.0.1:{port}/")

    assert text.startswith(f"Connection refused by 127.0.0.1:{port}")


def test_dns_failure_is_a_short_error():
    text = get_webpage_html("http://no-such-host.invalid/page")

    assert text.startswith("Could not resolve the host name 'no-such-host.invalid'")


def test_tls_error_is_a_short_error(server):
    url = _serve(server, "/x", "plain http", "text/plain").replace("http://", "https://")

    text = get_web_content(url)

    assert text.startswith("TLS error talking to 127.0.0.1:")
    assert "http vs https" in text


def test_read_timeout_is_a_short_error(monkeypatch):
    release = threading.Event()

    def stall(_request: Request) -> Response:
        release.wait(10)
        return Response("late", content_type="text/plain")

    monkeypatch.setattr("aimu.tools.builtin._http.TIMEOUT_SECONDS", 0.3)
    with HTTPServer("127.0.0.1", 0, threaded=True) as slow:
        slow.expect_request("/slow").respond_with_handler(stall)
        try:
            text = get_web_content(slow.url_for("/slow"))
        finally:
            release.set()

    assert text.startswith("Timed out after 0.3 s waiting for 127.0.0.1:")


@pytest.mark.parametrize(
    "url",
    ["example.com/page", "ftp://example.com/file", "", "http://", "http://[::1", "http://h:99999/"],
)
def test_non_web_address_is_refused_before_any_request(url):
    assert get_web_content(url).startswith("Not a web address:")
