"""The web tools reach public addresses and loopback, and nothing else unless the user allows
it, judged on the resolved address at every hop.

A loopback server stands in for every site. Sockets are intercepted for the whole module:
a connection to anything but loopback is recorded and refused before a packet leaves, or,
for the one "intranet" address a test allows, carried to the loopback server instead; names
resolve through a table here. Nothing is ever sent to 10.x, 192.168.x or 169.254.x.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from aimu.tools.builtin import get_web_content, make_web_tools, web_search

METADATA = "169.254.169.254"
INTRANET = "10.0.0.1"
NAMES = {"metadata.test": METADATA, "intranet.test": INTRANET, "router.test": "192.168.1.1"}
PAGE = "<html><body><h1>Opening hours</h1><p>Open 9 to 5.</p></body></html>"


class Network:
    """What this module's sockets did: the non-loopback addresses something tried to reach,
    and the lookups of each name. ``stand_ins`` maps an address to the loopback server
    that answers for it."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self.lookups: dict[str, int] = {}
        self.stand_ins: dict[str, tuple[str, int]] = {}
        self.rebinding: list[str] = []


@pytest.fixture
def network(monkeypatch) -> Iterator[Network]:
    net = Network()
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(sock: socket.socket, address) -> None:
        host = address[0] if isinstance(address, tuple) else address
        try:
            ip = ipaddress.ip_address(str(host).split("%", 1)[0])
        except ValueError:
            return real_connect(sock, address)  # a Unix socket
        mapped = getattr(ip, "ipv4_mapped", None)
        if ip.is_loopback or (mapped is not None and mapped.is_loopback):
            return real_connect(sock, address)
        net.attempts.append(str(ip))
        stand_in = net.stand_ins.get(str(ip))
        if stand_in is None:
            raise ConnectionRefusedError(f"test network: {ip} is not reachable")
        return real_connect(sock, stand_in)

    def getaddrinfo(host, port, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        net.lookups[name] = net.lookups.get(name, 0) + 1
        if name in net.rebinding:  # first answer loopback, then the metadata address
            name = "127.0.0.1" if net.lookups[name] == 1 else METADATA
        return real_getaddrinfo(NAMES.get(name, name), port, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.delenv("AIMU_WEB_ALLOW_HOSTS", raising=False)
    monkeypatch.chdir("/")  # no .env from the working tree
    yield net


@pytest.fixture
def site() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    server.expect_request("/page").respond_with_data(PAGE, content_type="text/html")
    for path, target in {
        "/to-metadata": f"http://{METADATA}/latest/meta-data/iam/",
        "/to-decimal": "http://2852039166/latest/meta-data/",
        "/to-intranet-name": "http://intranet.test/admin",
    }.items():
        server.expect_request(path).respond_with_response(
            Response(status=302, headers={"Location": target})
        )
    yield server
    server.clear()
    server.stop()


@pytest.mark.parametrize(
    "url",
    [
        f"http://{METADATA}/latest/meta-data/",
        "http://2852039166/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "http://metadata.test/latest/meta-data/",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://router.test/",
        "http://100.64.0.1/",
        "http://0.0.0.0:8080/",
        "http://224.0.0.1/",
        "http://[fd00::1]/",
        "http://[fe80::1]/",
        "http://[::169.254.169.254]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[2002:a9fe:a9fe::1]/",
    ],
)
def test_a_non_public_address_is_refused_before_anything_is_sent(network, url):
    result = get_web_content(url)
    assert result.startswith("Refused:"), result
    assert "allow_hosts=" in result and "AIMU_WEB_ALLOW_HOSTS" in result
    assert network.attempts == []


def test_a_redirect_from_a_loopback_site_to_the_metadata_address_is_refused(network, site):
    for path in ("/to-metadata", "/to-decimal", "/to-intranet-name"):
        result = get_web_content(site.url_for(path))
        assert result.startswith("Refused:"), result
    assert network.attempts == []


def test_loopback_is_read_as_the_course_site_needs(network, site):
    assert "Open 9 to 5." in get_web_content(site.url_for("/page"))
    assert network.attempts == []


def test_the_address_checked_is_the_one_connected_to_with_no_second_lookup(network, site):
    network.rebinding.append("rebind.test")
    port = site.port
    assert "Open 9 to 5." in get_web_content(f"http://rebind.test:{port}/page")
    assert network.lookups["rebind.test"] == 1
    assert network.attempts == []


def test_a_host_the_user_allows_is_reached_through_the_form_tools(network, site):
    network.stand_ins[INTRANET] = ("127.0.0.1", site.port)
    site.expect_request("/admin").respond_with_data(
        "<html><body><form action='/save'><input name='x'></form></body></html>",
        content_type="text/html",
    )
    find_forms, _, _ = make_web_tools(allow_hosts=["10.0.0.0/8"])
    listed = find_forms(f"http://{INTRANET}:{site.port}/admin")
    assert "/save" in listed, listed
    assert network.attempts == [INTRANET]
    assert site.log[-1][0].headers["Host"] == f"{INTRANET}:{site.port}"
    refused, _, _ = make_web_tools()
    assert refused(f"http://{INTRANET}:{site.port}/admin").startswith("Refused:")
    assert network.attempts == [INTRANET]


def test_the_environment_allows_a_host_for_every_web_tool(network, site, monkeypatch):
    network.stand_ins[INTRANET] = ("127.0.0.1", site.port)
    monkeypatch.setenv("AIMU_WEB_ALLOW_HOSTS", "intranet.test")
    assert "Open 9 to 5." in get_web_content(f"http://intranet.test:{site.port}/page")
    assert get_web_content(f"http://{METADATA}/").startswith("Refused:")
    assert network.attempts == [INTRANET]


def test_a_configured_search_service_is_reached_wherever_it_is(network, site, monkeypatch):
    network.stand_ins[INTRANET] = ("127.0.0.1", site.port)
    site.expect_request("/search").respond_with_json({"results": []})
    monkeypatch.setenv("SEARXNG_BASE_URL", f"http://{INTRANET}:{site.port}")
    result = web_search("opening hours")
    assert not result.startswith("Refused"), result
    assert network.attempts == [INTRANET]


def test_a_bad_allow_hosts_entry_is_refused_when_the_tools_are_made():
    with pytest.raises(TypeError, match="collection of hosts"):
        make_web_tools(allow_hosts="10.0.0.1")
    with pytest.raises(ValueError, match="allow_hosts"):
        make_web_tools(allow_hosts=[""])


def test_through_a_proxy_the_target_is_still_checked_and_the_proxy_is_sent_nothing(
    network, site, monkeypatch
):
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{site.port}")
    monkeypatch.setenv("NO_PROXY", "")
    result = get_web_content("http://metadata.test/latest/meta-data/")
    assert result.startswith("Refused:"), result
    assert site.log == [] and network.attempts == []
