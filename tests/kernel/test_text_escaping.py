"""What a model, a tool or a server wrote is escaped for the view it goes into.

The Markdown and plain-text views are what nbviewer, GitHub, VS Code and a JupyterLab
without the extension show: HTML written by a model or a server must read as text there, an
image's server-chosen MIME type must not break out of its data URL, and control characters
must be visible. The approval panel shows bidi controls rather than obeying them. The
structured record keeps every text as it was.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kernel_harness import Widgets

PAYLOAD = "<img src=x onerror=alert(1)>"
HOSTILE_MIME = "image/png;base64,AAAA) <img src=x onerror=alert(1)> ![x](data:image/png"


def outside_code(markdown: str) -> str:
    """The Markdown without its fenced blocks (where HTML is shown as code)."""
    return re.sub(r"^(`{3,}).*?^\1$", "", markdown, flags=re.DOTALL | re.MULTILINE)


def test_model_written_html_is_text_in_the_markdown_and_kept_in_the_record(kernel):
    answer = f"Done {PAYLOAD} and `<b>code</b>` \x1b[2J"
    kernel.ok(f"m = ScriptedClient([{answer!r}])")
    result = kernel.ok("%%agent --model m\nhi")
    markdown, plain = result.bundle["text/markdown"], result.bundle["text/plain"]
    assert "<img" not in markdown and "&lt;img src=x onerror=alert(1)>" in markdown
    assert "`<b>code</b>`" in markdown
    assert "\x1b" not in markdown + plain and "\\x1b[2J" in plain
    assert result.record["events"][0]["text"] == f"Done {PAYLOAD} and `<b>code</b>` \x1b[2J"


def test_an_mcp_images_mime_type_outside_the_known_list_gets_no_data_url(kernel):
    kernel.ok(
        "from fastmcp import FastMCP\nfrom mcp.types import ImageContent\n"
        "from aimu.aio import MCPClient\nsrv = FastMCP('pictures')\n"
        "@srv.tool\ndef pictures() -> list:\n"
        "    'Two pictures.'\n"
        f"    return [ImageContent(type='image', data='AAAA', mimeType={HOSTILE_MIME!r}),\n"
        "            ImageContent(type='image', data='iVBORw0KGgo=', mimeType='image/png')]\n"
        "pics = MCPClient(server=srv)\nawait pics.connect()\n"
        "m = ScriptedClient([call('pictures'), 'Two pictures.'])"
    )
    result = kernel.ok("%%agent --model m --tools pics --approve auto\nshow me")
    kernel.ok("await pics.close()")
    markdown = result.bundle["text/markdown"]
    mimes = [image["mime_type"] for image in result.record["events"][0]["images"]]
    assert mimes == [HOSTILE_MIME, "image/png"]
    assert "<img" not in outside_code(markdown)
    assert f"data:{HOSTILE_MIME}" not in markdown
    assert "](data:image/png;base64,iVBORw0KGgo=)" in markdown


class _ErrorBody(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.dumps({"error": {"message": f"bad request {PAYLOAD}"}}).encode()
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def error_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ErrorBody)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_model_servers_error_body_is_text_in_the_markdown(kernel, error_server):
    kernel.ok(f"m = aimu.client('openai:m@{error_server}', max_retries=0)")
    result = kernel.execute("%%agent --model m\nhi")
    assert result.status == "error"
    markdown = result.bundle["text/markdown"]
    assert "HTTP 400" in markdown and "&lt;img src=x onerror=alert(1)>" in markdown
    assert "<img" not in markdown
    assert PAYLOAD in result.record["error"]


def test_the_approval_panel_shows_bidi_controls_in_the_arguments_it_asks_about(kernel, tmp_path):
    kernel.ok(
        "m = ScriptedClient([call('write_file', path='report\u202etxt.exe', "
        "content='\u2066hidden\u2069'), 'Not written.'])"
    )
    widgets = Widgets()
    clicked = []

    def deny_once(msg):
        widgets.see(msg)
        deny = widgets.button("Deny")
        if deny is not None and not clicked:
            clicked.append(deny)
            kernel.click(deny)

    result = kernel.execute("%%agent --model m --tools fs\nwrite it", on_message=deny_once)
    assert result.status == "ok" and clicked
    html = [
        state["value"]
        for state in widgets.states.values()
        if state.get("_model_name") == "HTMLModel" and "<pre" in state.get("value", "")
    ]
    assert html and "report&lt;U+202E&gt;txt.exe" in html[0]
    assert "&lt;U+2066&gt;hidden&lt;U+2069&gt;" in html[0]
    assert not any(ch in html[0] for ch in "\u202e\u2066\u2069")
    assert result.record["events"][0]["status"] == "denied"
    assert not list(tmp_path.glob("report*"))
