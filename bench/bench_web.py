"""Web benchmark: HTML-to-Markdown throughput of get_web_content on a ~2 MB page, vs aimu 0.38.

One realistic article page (inline scripts and styles, navigation, a long article with
headings, paragraphs, links, lists, tables and images, an aside and a footer) is served from
127.0.0.1 by this process. Each round runs both tools in fresh processes of their own, one
after the other, so that load from other processes falls on both alike; each process warms up
on a small page, then fetches and converts the big one once. The peer runs in its own
virtualenv (bench/.venvs/aimu038, created on first use under a lock).

    .venv/bin/python bench/bench_web.py [--runs 5] [--size-mb 2]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).parent
PEER = HERE / ".venvs" / "aimu038"
PEER_LOCK = HERE / ".venvs" / "aimu038.lock"

MEASURE_SCRIPT = textwrap.dedent("""
    import json, sys, time
    from aimu.tools.builtin import get_web_content
    url, warmup = sys.argv[1], sys.argv[2]
    get_web_content(warmup)
    wall, cpu = time.perf_counter(), time.process_time()
    out = get_web_content(url, max_chars=10**9)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    try:
        from aimu.tools.builtin._html import _PARSER as parser
    except ImportError:  # aimu 0.38 always parses with html.parser
        parser = "html.parser"
    print(json.dumps({"wall": wall, "cpu": cpu, "chars": len(out), "parser": parser}))
""")
SMALL_PAGE = (
    b"<html><body><main><h1>Warm-up</h1><p>Imports and first-call costs.</p></main></body></html>"
)


def ensure_peer() -> Path:
    """The peer's interpreter, creating its virtualenv once even if several benches race."""
    python = PEER / "bin" / "python"
    PEER_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with PEER_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(PEER)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", "aimu==0.38.0"], check=True)
    return python


def make_page(target_bytes: int) -> bytes:
    """A deterministic article page of about ``target_bytes``."""
    script = "var analytics = {" + ", ".join(f'"k{n}": {n}' for n in range(4000)) + "};"
    nav = "".join(f'<li><a href="/section/{n}">Section {n}</a></li>' for n in range(150))
    head = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<title>The long read | Example Times</title>"
        "<meta property='article:published_time' content='2024-05-01T09:30:00Z'>"
        f"<style>{'.c{margin:0;padding:0}' * 800}</style><script>{script}</script></head>"
        f"<body><header><nav><ul>{nav}</ul></nav></header><main><article>"
        "<h1>The long read</h1>"
    )
    tail = "</article></main><aside>Related</aside><footer>© Example Times</footer></body></html>"
    sections, size, n = [], len(head) + len(tail), 0
    while size < target_bytes:
        section = (
            f"<h2>Chapter {n}</h2>"
            f"<p>In chapter {n} the <a href='/people/{n}'>committee</a> met <em>again</em> to "
            "review the <strong>harbour accounts</strong>, which had grown by 12% since the "
            f"previous year. <a href='https://example.org/ref/{n}'>Source</a>.</p>"
            "<p>Members noted that ferry revenue, dock fees and storage all rose, while repairs "
            "to the north pier came in under budget. A full breakdown follows below.</p>"
            "<ul><li>Ferry revenue up 8%</li><li>Dock fees up 15%</li>"
            "<li>Storage up 4%</li></ul>"
            "<table><tr><th>Item</th><th>2023</th><th>2024</th></tr>"
            f"<tr><td>Ferries</td><td>{1000 + n}</td><td>{1080 + n}</td></tr>"
            f"<tr><td>Docks</td><td>{500 + n}</td><td>{575 + n}</td></tr></table>"
            f"<p><img src='/img/{n}.png' alt='Chart {n}'></p>"
            f"<div class='share'><button>Share</button><script>track({n})</script></div>"
        )
        sections.append(section)
        size += len(section)
        n += 1
    return (head + "".join(sections) + tail).encode()


def serve(page: bytes) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``page`` at ``/article`` and a small warm-up page at ``/warmup``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page if self.path == "/article" else SMALL_PAGE
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def measure(python: Path | str, base: str, cwd: Path | str, *, isolated: bool) -> dict:
    """One fresh process, one warm-up call, then one timed call on the big page.

    The peer runs isolated (``-I``) so nothing from this checkout or its environment leaks
    in; ours keeps the environment, so PYTHONPATH can try an optional parser.
    """
    flags = ["-I"] if isolated else []
    done = subprocess.run(
        [str(python), *flags, "-c", MEASURE_SCRIPT, f"{base}/article", f"{base}/warmup"],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size-mb", type=float, default=2.0)
    args = parser.parse_args()

    peer_python = ensure_peer()
    page = make_page(int(args.size_mb * 1024 * 1024))
    server, base = serve(page)
    ours, peer = [], []
    try:
        with tempfile.TemporaryDirectory() as elsewhere:  # keeps this checkout off the peer's path
            for _ in range(args.runs):
                ours.append(measure(sys.executable, base, HERE.parent, isolated=False))
                peer.append(measure(peer_python, base, elsewhere, isolated=True))
    finally:
        server.shutdown()

    megabytes = len(page) / (1024 * 1024)
    print(f"page: {megabytes:.2f} MB of HTML, {args.runs} alternating runs each, medians")
    print(f"HTML parser: ours {ours[0]['parser']}, aimu 0.38 {peer[0]['parser']}")
    print(f"{'':30}{'aimu-jupyter':>14}{'aimu 0.38':>12}{'ratio':>9}")
    for key, label in (("cpu", "CPU time"), ("wall", "wall time")):
        mine = statistics.median(run[key] for run in ours)
        theirs = statistics.median(run[key] for run in peer)
        print(f"{label + ' (s)':30}{mine:14.3f}{theirs:12.3f}{theirs / mine:8.2f}x")
        print(
            f"{label + ' throughput (MB/s)':30}{megabytes / mine:14.2f}{megabytes / theirs:12.2f}"
        )
    print(f"{'Markdown out (chars)':30}{ours[0]['chars']:14,}{peer[0]['chars']:12,}")
    print("ratio = aimu 0.38 time / ours; above 1 means we are faster. CPU time is the steadier")
    print("figure on a busy machine.")


if __name__ == "__main__":
    main()
