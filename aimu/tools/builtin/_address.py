"""Where the web tools may connect, decided on the address each connection is made to.

A model (or a page it reads) picks the URLs the web tools fetch, and the reading tools run
without asking, so a prompt-injected model could read a cloud metadata service
(``169.254.169.254``, which hands out credentials) or an intranet admin page and carry what it
read out in its next URL. So every connection, at every redirect hop, is checked here on
the address it is about to be made to: the host the HTTP client itself parsed is resolved
once, each address is checked, and the socket connects to an address that passed (the TLS
name and Host header stay the URL's). No second lookup happens in between, so a name that
resolves differently the second time (DNS rebinding) gains nothing, and every spelling of
an address (``2852039166``, ``[::ffff:169.254.169.254]``, a name pointing there) is judged
as the address it is.

Refused unless the user allows them: link-local addresses (``169.254.0.0/16`` and
``fe80::/10``, where cloud metadata services answer), private networks (``10/8``,
``172.16/12``, ``192.168/16``, ``fc00::/7``) and every other address that is not on the
public internet (shared ``100.64/10``, ``0.0.0.0``, multicast, reserved and documentation
ranges), also when written inside an IPv6 address (IPv4-mapped, IPv4-compatible, NAT64,
6to4). The user allows hosts, addresses or networks with ``allow_hosts``.

Loopback (``127.0.0.0/8``, ``::1``) is allowed: it is the machine the kernel already runs
on, where the user's own local services live (the course serves its website on
``127.0.0.1``; a local SearXNG is the default search service). It is not a place a remote
attacker's credentials or an intranet live. Through a proxy (``HTTP(S)_PROXY``) the proxy
connects, so the target is checked as this machine resolves it, and a proxy that resolves
names differently is trusted as the user configured it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.utils import select_proxy
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError
from urllib3.util.connection import allowed_gai_family

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOW_SETTING = "AIMU_WEB_ALLOW_HOSTS"

_LINK_LOCAL = tuple(map(ipaddress.ip_network, ("169.254.0.0/16", "fe80::/10")))
_PRIVATE = tuple(
    map(ipaddress.ip_network, ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7",
                               "fec0::/10"))
)  # fmt: skip
_NOT_PUBLIC = tuple(
    map(ipaddress.ip_network, (
        "0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24",
        "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
        "::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "ff00::/8",
    ))
)  # fmt: skip
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LOOPBACK = "loopback"


def kind_of(address: IPAddress) -> str | None:
    """What non-public kind of address ``address`` is, or ``None`` for a public one.

    An IPv4 address written inside an IPv6 one is judged as that IPv4 address (mapped) or
    together with it (NAT64, 6to4: refused when either is not public).
    """
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return kind_of(address.ipv4_mapped)
        inner = _embedded_ipv4(address)
        if inner is not None and (inside := kind_of(inner)) is not None:
            return f"{inside} written as IPv6"
    if address.is_loopback:
        return _LOOPBACK
    if any(address in network for network in _LINK_LOCAL):
        return "link-local address (where cloud metadata services such as 169.254.169.254 answer)"
    if any(address in network for network in _PRIVATE):
        return "private-network address"
    if (
        any(address in network for network in _NOT_PUBLIC)
        or address.is_multicast
        or address.is_unspecified
        or address.is_reserved
        or not address.is_global
    ):
        return "non-public address"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    return None


@dataclass(frozen=True)
class Reach:
    """Which non-public addresses the user allows: ``hosts`` by name (``*.corp.example``
    covers its subdomains) and ``networks`` by address (``10.0.0.5``, ``10.0.0.0/8``)."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def of(cls, entries: Iterable[str]) -> Reach:
        """A reach from ``allow_hosts`` entries; ``ValueError`` for one that is not a host
        name, an address or a network."""
        if isinstance(entries, str | bytes):
            raise TypeError(
                f"allow_hosts takes a collection of hosts, e.g. [{entries!r}], not a single string"
            )
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for entry in entries:
            if not isinstance(entry, str) or not entry.strip():
                raise ValueError(f"allow_hosts: {entry!r} is not a host name, address or network")
            text = entry.strip().strip("[]")
            try:
                networks.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                hosts.add(_host_key(text))
        return cls(frozenset(hosts), tuple(networks))

    def joined(self, other: Reach) -> Reach:
        """What this reach or ``other`` allows."""
        return Reach(self.hosts | other.hosts, self.networks + other.networks)

    def refusal(self, host: str, address: IPAddress) -> str | None:
        """Why ``host`` may not be reached at ``address``, or ``None`` when it may."""
        kind = kind_of(address)
        if kind in (None, _LOOPBACK) or self._allows(host, address):
            return None
        shown = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        shown = str(shown or address)
        where = host if _host_key(host) == shown else f"{host} ({shown})"
        return (
            f"Refused: {where} is a {kind}; the web tools do not reach such addresses unless "
            "the user allows them. If it is intended, ask the user to allow it: "
            f"make_web_tools(allow_hosts=[{_host_key(host)!r}]) for the form tools, or "
            f"{ALLOW_SETTING}={_host_key(host)} in the environment for every web tool."
        )

    def addresses(self, host: str, port: int) -> list[str]:
        """The addresses of ``host`` that may be connected to, resolved once; raises
        :class:`socket.gaierror` when it does not resolve and :class:`AddressRefused`
        when none of its addresses may be reached."""
        found: list[str] = []
        refusal = ""
        lookup = host.strip("[]")
        try:
            literal = ipaddress.ip_address(lookup.split("%", 1)[0])
        except ValueError:
            literal = None
        if literal is not None and (why := self.refusal(host, literal)) is not None:
            raise AddressRefused(why)  # judged as written, whatever this host can resolve
        family = allowed_gai_family()
        for *_, sockaddr in socket.getaddrinfo(lookup, port, family, socket.SOCK_STREAM):
            text = str(sockaddr[0])
            why = self.refusal(host, ipaddress.ip_address(text.split("%", 1)[0]))
            if why is None:
                if text not in found:
                    found.append(text)
            else:
                refusal = refusal or why
        if not found:
            raise AddressRefused(refusal)
        return found

    def _allows(self, host: str, address: IPAddress) -> bool:
        key = _host_key(host)
        if key in self.hosts or any(
            name.startswith("*.") and key.endswith(name[1:]) for name in self.hosts
        ):
            return True
        candidates = [address]
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            candidates.append(address.ipv4_mapped)
        return any(a in network for a in candidates for network in self.networks)


def _host_key(host: str) -> str:
    key = host.strip().strip("[]").rstrip(".").lower()
    if not key.isascii():
        with contextlib.suppress(UnicodeError):
            key = key.encode("idna").decode("ascii")
    return key


class AddressRefused(OSError):
    """A connection the web tools will not make; the message says why and how to allow it."""


class _Refused(NewConnectionError):
    """:class:`AddressRefused` as urllib3 reports a connection that could not be made."""

    def __init__(self, conn: Any, refused: AddressRefused):
        super().__init__(conn, str(refused))
        self.refused = refused


class _Vetted:
    """A urllib3 connection that connects only to an address its :class:`Reach` allows:
    resolved once here, then connected to by address (TLS and Host keep the URL's name)."""

    reach: Reach

    def _new_conn(self) -> socket.socket:
        host = self._dns_host  # type: ignore[attr-defined]
        try:
            addresses = self.reach.addresses(host, self.port)  # type: ignore[attr-defined]
        except AddressRefused as exc:
            raise _Refused(self, exc) from None
        except socket.gaierror as exc:
            raise NewConnectionError(self, f"Failed to resolve {host!r} ({exc})") from exc
        failure: Exception | None = None
        for address in addresses:
            self._dns_host = address
            try:
                return super()._new_conn()  # type: ignore[misc]
            except NewConnectionError as exc:
                failure = exc
            finally:
                self._dns_host = host
        assert failure is not None
        raise failure


class VettedAdapter(HTTPAdapter):
    """A requests adapter whose every connection, redirect hops included, is checked by
    ``reach``; a refusal is a ``requests.ConnectionError`` caused by
    :class:`AddressRefused`."""

    __attrs__: ClassVar[list[str]] = [*HTTPAdapter.__attrs__, "reach"]  # kept when pickled

    def __init__(self, reach: Reach, **kwargs: Any):
        self.reach = reach
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        attrs = {"reach": self.reach}
        plain = type("VettedHTTPConnection", (_Vetted, HTTPConnection), attrs)
        tls = type("VettedHTTPSConnection", (_Vetted, HTTPSConnection), attrs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": type("VettedHTTPPool", (HTTPConnectionPool,), {"ConnectionCls": plain}),
            "https": type("VettedHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": tls}),
        }

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: bool | str = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> requests.Response:
        if select_proxy(request.url, proxies or {}):
            self._check_through_proxy(request)
        return super().send(request, stream, timeout, verify, cert, proxies)

    def _check_through_proxy(self, request: requests.PreparedRequest) -> None:
        parts = urlsplit(str(request.url))
        host = parts.hostname or ""
        try:
            self.reach.addresses(host, parts.port or 443)
        except AddressRefused as exc:
            raise requests.ConnectionError(exc, request=request) from None
        except (socket.gaierror, UnicodeError):
            pass  # only the proxy can resolve it


def guard(session: requests.Session, reach: Reach) -> requests.Session:
    """``session`` with every http(s) connection checked by ``reach`` (a
    :class:`VettedAdapter` mounted for ``http://`` and ``https://``, once per reach)."""
    for prefix in ("http://", "https://"):
        current = session.adapters.get(prefix)
        if not (isinstance(current, VettedAdapter) and current.reach == reach):
            session.mount(prefix, VettedAdapter(reach))
    return session


def refusal_in(causes: Iterable[BaseException]) -> str | None:
    """The message of the :class:`AddressRefused` among ``causes``, if there is one."""
    for cause in causes:
        if isinstance(cause, AddressRefused):
            return str(cause)
        if isinstance(cause, _Refused):
            return str(cause.refused)
    return None
