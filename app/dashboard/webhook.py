"""Outgoing webhook POSTs: only to public addresses, within one deadline, reading a few bytes of the answer.

- **Where**: the host is looked up once; every address it has must be globally routable
  (:func:`refusal`, our own table of the IANA special-purpose registries), and the connection goes to one
  of exactly those addresses, so a DNS answer that changes between the check and the connection (rebinding)
  cannot reach anything else. TLS still verifies the certificate against the host name, sent as SNI.
- **How long**: one wall-clock deadline covers the look-up, connect, TLS handshake, sending and reading;
  every socket operation gets the time left as its timeout, so a receiver answering a byte at a time is cut
  off at the deadline.
- **How much**: only the status line is read (at most :data:`ANSWER_HEAD_LIMIT` bytes, 1xx interim answers
  included); the body is never read and nothing is decompressed (``Accept-Encoding: identity``).

requests/urllib3 are not used here: urllib3 can connect to a checked address (``server_hostname``,
``assert_hostname``), but their timeouts bound each socket operation, not the call (requests/requests#4276),
so a receiver trickling bytes keeps them reading; a watchdog would need their private socket objects.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Callable, Iterable
from urllib.parse import quote, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Iterable[str]]

DEFAULT_TIMEOUT = 5.0  # ALERT_WEBHOOK_TIMEOUT's default (app/config.py)
#: bytes read of an answer at most (status lines and the headers of 1xx interim answers)
ANSWER_HEAD_LIMIT = 4096
#: concurrent host look-ups; a look-up past its deadline is abandoned to this pool, never waited for
RESOLVER_THREADS = 4

_N = ipaddress.ip_network
#: IANA IPv4 special-purpose registry (RFC 6890 and updates), plus multicast and the reserved 240/4.
#: Blocks the registry marks globally reachable (anycast services: AS112, AMT, PCP/TURN) are refused too:
#: no webhook receiver lives there.
SPECIAL_V4 = (
    (_N("0.0.0.0/8"), "'this network' (0.0.0.0/8)"),
    (_N("10.0.0.0/8"), "private (10.0.0.0/8)"),
    (_N("100.64.0.0/10"), "shared address space (100.64.0.0/10, carrier-grade NAT and cloud metadata)"),
    (_N("127.0.0.0/8"), "loopback (127.0.0.0/8)"),
    (_N("169.254.0.0/16"), "link-local (169.254.0.0/16, cloud metadata)"),
    (_N("172.16.0.0/12"), "private (172.16.0.0/12)"),
    (_N("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"),
    (_N("192.0.2.0/24"), "documentation (192.0.2.0/24)"),
    (_N("192.31.196.0/24"), "AS112 (192.31.196.0/24)"),
    (_N("192.52.193.0/24"), "AMT (192.52.193.0/24)"),
    (_N("192.88.99.0/24"), "6to4 relay anycast (192.88.99.0/24)"),
    (_N("192.168.0.0/16"), "private (192.168.0.0/16)"),
    (_N("192.175.48.0/24"), "AS112 direct delegation (192.175.48.0/24)"),
    (_N("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"),
    (_N("198.51.100.0/24"), "documentation (198.51.100.0/24)"),
    (_N("203.0.113.0/24"), "documentation (203.0.113.0/24)"),
    (_N("224.0.0.0/4"), "multicast (224.0.0.0/4)"),
    (_N("240.0.0.0/4"), "reserved or broadcast (240.0.0.0/4)"),
)
#: IANA IPv6 special-purpose registry, most specific first; everything outside 2000::/3 is refused as well.
SPECIAL_V6 = (
    (_N("::1/128"), "loopback (::1)"),
    (_N("::/128"), "unspecified (::)"),
    (_N("::/96"), "IPv4-compatible (::/96, deprecated)"),
    (_N("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"),
    (_N("100::/64"), "discard-only (100::/64)"),
    (_N("2001::/32"), "Teredo (2001::/32)"),
    (_N("2001::/23"), "IETF protocol assignments (2001::/23)"),
    (_N("2001:db8::/32"), "documentation (2001:db8::/32)"),
    (_N("2002::/16"), "6to4 (2002::/16)"),
    (_N("2620:4f:8000::/48"), "AS112 direct delegation (2620:4f:8000::/48)"),
    (_N("3fff::/20"), "documentation (3fff::/20)"),
    (_N("5f00::/16"), "SRv6 SIDs (5f00::/16)"),
    (_N("fc00::/7"), "unique local (fc00::/7)"),
    (_N("fe80::/10"), "link-local (fe80::/10)"),
    (_N("fec0::/10"), "site-local (fec0::/10, deprecated)"),
    (_N("ff00::/8"), "multicast (ff00::/8)"),
)
GLOBAL_UNICAST_V6 = _N("2000::/3")
#: the well-known NAT64 prefix: judged by the IPv4 address it embeds (what the NAT64 gateway connects to)
NAT64 = _N("64:ff9b::/96")

_HOST = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?")
_STATUS = re.compile(rb"HTTP/1\.[01] ([0-9]{3})[ \r\n]")


class WebhookError(OSError):
    """The POST got no answer (refused address, look-up, network, deadline, garbage): retry later."""


class Refused(WebhookError):
    """The URL or the addresses of its host are not allowed (a clear message for the subscriber)."""


def options(config) -> dict:
    """The keyword arguments of :func:`post` and :func:`destination` from the app's settings
    (``ALERT_WEBHOOK_TIMEOUT``, ``ALERT_WEBHOOK_ALLOW_PRIVATE``; tests inject ``WEBHOOK_RESOLVER``)."""
    return {
        "timeout": float(config.get("ALERT_WEBHOOK_TIMEOUT", DEFAULT_TIMEOUT)),
        "allow_private": bool(config.get("ALERT_WEBHOOK_ALLOW_PRIVATE")),
        "resolver": config.get("WEBHOOK_RESOLVER"),
    }


def refusal(ip: IPAddress) -> str | None:
    """Why ``ip`` is no public destination, or None when it is globally routable.

    Examples
    --------
    >>> refusal(ipaddress.ip_address("100.100.100.200"))
    'shared address space (100.64.0.0/10, carrier-grade NAT and cloud metadata)'
    >>> refusal(ipaddress.ip_address("64:ff9b::808:808")) is None
    True
    """
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return refusal(ip.ipv4_mapped)
        if ip in NAT64:
            inner = refusal(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
            return None if inner is None else f"NAT64 of {inner}"
        for net, name in SPECIAL_V6:
            if ip in net:
                return name
        return None if ip in GLOBAL_UNICAST_V6 else "not global unicast (outside 2000::/3)"
    for net, name in SPECIAL_V4:
        if ip in net:
            return name
    return None


@dataclass(frozen=True)
class Destination:
    """A checked webhook URL: the ASCII host, port, TLS or not, the request target and where to connect."""

    host: str
    port: int
    tls: bool
    target: str
    addresses: tuple[IPAddress, ...]

    @property
    def host_header(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == (443 if self.tls else 80) else f"{name}:{self.port}"


def ascii_host(url: str) -> tuple[str, int, bool]:
    """(host in ASCII, port, TLS?) of an http(s) URL; :class:`Refused` saying why not."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused("the webhook URL must be an absolute http:// or https:// URL")
    try:
        port = parts.port
    except ValueError:
        raise Refused("the webhook URL has an invalid port") from None
    port = (443 if parts.scheme == "https" else 80) if port is None else port
    if not 0 < port < 65536:
        raise Refused("the webhook URL has an invalid port")
    host = parts.hostname
    try:
        return str(ipaddress.ip_address(host)), port, parts.scheme == "https"
    except ValueError:
        pass
    try:
        name = host.encode("idna").decode("ascii")
    except UnicodeError:
        name = ""
    if not _HOST.fullmatch(name) or len(name) > 253:
        raise Refused("the webhook host is not a valid host name")
    return name.lower(), port, parts.scheme == "https"


def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver (``getaddrinfo``)."""
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _lookup_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(RESOLVER_THREADS, thread_name_prefix="webhook-dns")
        return _pool


def resolve(host: str, port: int, resolver: Resolver | None, timeout: float) -> tuple[IPAddress, ...]:
    """The addresses of ``host`` within ``timeout`` seconds (an IP literal is its own address)."""
    try:
        return (ipaddress.ip_address(host),)
    except ValueError:
        pass
    future = _lookup_pool().submit(lambda: list((resolver or system_resolver)(host, port)))
    try:
        found = future.result(timeout=max(timeout, 0.0))
    except FutureTimeout:
        raise WebhookError(f"the webhook host did not resolve within {timeout:g} s") from None
    except (OSError, UnicodeError) as exc:
        raise Refused("the webhook host name does not resolve") from exc
    out = []
    for text in found:
        try:
            out.append(ipaddress.ip_address(str(text).split("%", 1)[0]))
        except ValueError:
            raise Refused("the webhook host resolves to something that is not an address") from None
    if not out:
        raise Refused("the webhook host name does not resolve")
    return tuple(dict.fromkeys(out))


def destination(
    url: str, *, allow_private: bool, resolver: Resolver | None = None, timeout: float = 5.0
) -> Destination:
    """Check ``url`` and look its host up once; :class:`Refused` (saying why) or :class:`WebhookError`."""
    host, port, tls = ascii_host(url)
    parts = urlsplit(url)
    target = quote(parts.path or "/", safe="/%!$&'()*+,;=:@-._~")
    if parts.query:
        target += "?" + quote(parts.query, safe="/?%!$&'()*+,;=:@-._~")
    addresses = resolve(host, port, resolver, timeout)
    if not allow_private:
        for ip in addresses:
            why = refusal(ip)
            if why is not None:
                raise Refused(f"the webhook host {host} has the non-public address {ip}: {why}")
    return Destination(host, port, tls, target, addresses)


class _Deadline:
    def __init__(self, seconds: float, clock: Callable[[], float]):
        self.seconds, self.clock, self.at = seconds, clock, clock() + seconds

    def left(self) -> float:
        left = self.at - self.clock()
        if left <= 0:
            raise WebhookError(f"the webhook did not answer within {self.seconds:g} s")
        return left

    def arm(self, sock: socket.socket) -> socket.socket:
        sock.settimeout(self.left())
        return sock


def _connect(dest: Destination, deadline: _Deadline) -> socket.socket:
    last: OSError | None = None
    for ip in dest.addresses:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        sock = socket.socket(socket.AF_INET6 if ip.version == 6 else socket.AF_INET, socket.SOCK_STREAM)
        try:
            deadline.arm(sock).connect((str(ip), dest.port))
            return sock
        except WebhookError:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            last = exc
    raise WebhookError(f"the webhook host is not reachable: {type(last).__name__}") from last


def _read_status(sock: socket.socket, deadline: _Deadline) -> int:
    """The status of the final answer, reading at most ``ANSWER_HEAD_LIMIT`` bytes in all; 1xx interim
    answers (status line and headers) are skipped."""
    buf, total = b"", 0
    while True:
        match = _STATUS.match(buf)
        if match:
            status = int(match.group(1))
            if not 100 <= status < 200:
                return status
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                buf = buf[end + 4 :]
                continue
        elif len(buf) >= len(b"HTTP/1.1 200 "):
            raise WebhookError("the webhook answer is not HTTP/1.x")
        if total >= ANSWER_HEAD_LIMIT:
            raise WebhookError(f"the webhook answer's head is longer than {ANSWER_HEAD_LIMIT} bytes")
        chunk = deadline.arm(sock).recv(ANSWER_HEAD_LIMIT - total)
        if not chunk:
            raise WebhookError("the webhook closed the connection before answering")
        buf, total = buf + chunk, total + len(chunk)


def post(
    url: str,
    headers: dict[str, str],
    body: bytes,
    *,
    timeout: float,
    allow_private: bool,
    resolver: Resolver | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """POST ``body`` to ``url`` within ``timeout`` seconds in all; the answer's status code.

    Raises :class:`WebhookError` (an ``OSError``) for everything that is not an answer.
    """
    deadline = _Deadline(float(timeout), clock)
    dest = destination(url, allow_private=allow_private, resolver=resolver, timeout=deadline.left())
    head = [f"POST {dest.target} HTTP/1.1", f"Host: {dest.host_header}"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    head += [f"Content-Length: {len(body)}", "Accept-Encoding: identity", "Connection: close"]
    request = ("\r\n".join(head) + "\r\n\r\n").encode("ascii") + body
    sock = _connect(dest, deadline)
    try:
        if dest.tls:
            context = ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=dest.host, do_handshake_on_connect=False)
            deadline.arm(sock)
            sock.do_handshake()
        deadline.arm(sock).sendall(request)
        return _read_status(sock, deadline)
    except WebhookError:
        raise
    except socket.timeout:
        raise WebhookError(f"the webhook did not answer within {deadline.seconds:g} s") from None
    except ssl.SSLError as exc:
        raise WebhookError(f"TLS with the webhook failed: {exc.reason or type(exc).__name__}") from exc
    except OSError as exc:
        raise WebhookError(f"the webhook connection failed: {type(exc).__name__}") from exc
    finally:
        sock.close()
