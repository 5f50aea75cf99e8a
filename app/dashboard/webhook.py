"""Outgoing webhook POSTs: only to public addresses, within one deadline, reading a few bytes of the answer.

- **Where**: the host is looked up once; every address it has must be globally routable
  (:func:`refusal`, our own table of the IANA special-purpose registries), and the connection goes to one
  of exactly those addresses, so a DNS answer that changes between the check and the connection (rebinding)
  cannot reach anything else. TLS still verifies the certificate against the host name, sent as SNI.
- **How long**: one wall-clock deadline covers the look-up, connect, TLS handshake, sending and reading;
  every socket operation gets the time left as its timeout, so a receiver answering a byte at a time is cut
  off at the deadline.
- **How much**: the status line decides (read within at most :data:`ANSWER_HEAD_LIMIT` bytes, 1xx interim
  answers included); nothing is decompressed (``Accept-Encoding: identity``). :func:`post` reads nothing
  more and closes. :class:`Connections` (a delivery round's) reads the rest of the answer only to keep its
  connection for the next POST: the head within :data:`ANSWER_HEAD_LIMIT` bytes, a ``Content-Length`` or
  chunked body within :data:`ANSWER_BODY_LIMIT` bytes, all within the same deadline; anything else (a longer,
  unframed or slower answer, ``Connection: close``, HTTP/1.0, bytes after the answer) drops the connection
  and leaves the status as it was read.
- **Connections kept** (:class:`Connections`, one per delivery round): a host is looked up once per round
  and every connection to it goes to those checked addresses; an idle connection is taken by one POST at a
  time (a sender never waits for another's), so a receiver sees one connection for events sent in turn and
  at most one per concurrent sender. A dropped connection is replaced by a fresh one to the same checked
  addresses, never by a new look-up. A kept connection the receiver closed before answering (nothing
  received) is retried once on a fresh connection within the same deadline, as a fresh connection would
  have been tried.

requests/urllib3 are not used here: urllib3 can connect to a checked address (``server_hostname``,
``assert_hostname``), but their timeouts bound each socket operation, not the call (requests/requests#4276),
so a receiver trickling bytes keeps them reading; a watchdog would need their private socket objects.
"""

from __future__ import annotations

import ipaddress
import math
import re
import select
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterable
from urllib.parse import quote, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Iterable[str]]

DEFAULT_TIMEOUT = 5.0  # ALERT_WEBHOOK_TIMEOUT's default (app/config.py)
#: bytes read of an answer at most (status lines and the headers of 1xx interim answers)
ANSWER_HEAD_LIMIT = 4096
#: bytes of an answer's body read at most to keep its connection (a longer body drops the connection)
ANSWER_BODY_LIMIT = 4096
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
_DIGITS = re.compile(r"[0-9]{1,9}")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,8}")


class WebhookError(OSError):
    """The POST got no answer (refused address, look-up, network, deadline, garbage): retry later."""


class Refused(WebhookError):
    """The URL or the addresses of its host are not allowed (a clear message for the subscriber)."""


class _Gone(WebhookError):
    """The receiver closed the connection before a byte of an answer."""


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

    @cached_property
    def key(self) -> tuple:
        """What its kept connections are filed under: (host, checked addresses, port, TLS), as text (cheap
        to hash on every POST, where address objects hash in Python)."""
        return (self.host, tuple(str(ip) for ip in self.addresses), self.port, self.tls)

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
    addresses = resolve(host, port, resolver, timeout)
    if not allow_private:
        for ip in addresses:
            why = refusal(ip)
            if why is not None:
                raise Refused(f"the webhook host {host} has the non-public address {ip}: {why}")
    return Destination(host, port, tls, _target(url), addresses)


def _target(url: str) -> str:
    parts = urlsplit(url)
    target = quote(parts.path or "/", safe="/%!$&'()*+,;=:@-._~")
    if parts.query:
        target += "?" + quote(parts.query, safe="/?%!$&'()*+,;=:@-._~")
    return target


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


class _Answer:
    """The bytes of one answer as they are read: at most ``limit`` in all, each read within the deadline."""

    def __init__(self, sock: socket.socket, deadline: _Deadline):
        self.sock, self.deadline = sock, deadline
        self.buf, self.total = b"", 0

    def fill(self, limit: int) -> None:
        if self.total >= limit:
            raise WebhookError(f"the webhook answer is longer than {limit} bytes")
        chunk = _recv(self.sock, limit - self.total, self.deadline)
        if not chunk:
            raise (_Gone if self.total == 0 else WebhookError)(
                "the webhook closed the connection before answering"
            )
        self.buf, self.total = self.buf + chunk, self.total + len(chunk)


def _final_status(answer: _Answer) -> int:
    """The status of the final answer, reading at most ``ANSWER_HEAD_LIMIT`` bytes in all; 1xx interim
    answers (status line and headers) are skipped. ``answer.buf`` is left at the final status line."""
    while True:
        match = _STATUS.match(answer.buf)
        if match:
            status = int(match.group(1))
            if not 100 <= status < 200:
                return status
            end = answer.buf.find(b"\r\n\r\n")
            if end >= 0:
                answer.buf = answer.buf[end + 4 :]
                continue
        elif len(answer.buf) >= len(b"HTTP/1.1 200 "):
            raise WebhookError("the webhook answer is not HTTP/1.x")
        if answer.total >= ANSWER_HEAD_LIMIT:
            raise WebhookError(f"the webhook answer's head is longer than {ANSWER_HEAD_LIMIT} bytes")
        answer.fill(ANSWER_HEAD_LIMIT)


def _read_status(sock: socket.socket, deadline: _Deadline) -> int:
    """The status of the final answer (:func:`_final_status`), reading nothing more."""
    return _final_status(_Answer(sock, deadline))


def _rest(answer: _Answer, status: int) -> bool:
    """Read the rest of the answer whose final status line starts ``answer.buf``; whether the connection can
    carry the next request (an HTTP/1.1 answer without ``Connection: close``, its head within
    ``ANSWER_HEAD_LIMIT`` bytes, its body framed by ``Content-Length`` or chunked within
    ``ANSWER_BODY_LIMIT`` bytes, and nothing after it). Raises ``OSError`` (the deadline, the cap, a close)."""
    while (end := answer.buf.find(b"\r\n\r\n")) < 0:
        answer.fill(ANSWER_HEAD_LIMIT)
    lines = answer.buf[:end].decode("latin-1").split("\r\n")
    answer.buf = answer.buf[end + 4 :]
    if not lines[0].startswith("HTTP/1.1 "):
        return False
    fields: dict[str, list[str]] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            return False
        fields.setdefault(name.lower(), []).append(value.strip())
    if "close" in {t.strip().lower() for v in fields.get("connection", ()) for t in v.split(",")}:
        return False
    limit = answer.total - len(answer.buf) + ANSWER_BODY_LIMIT  # bytes read in all, through the body's end
    if status in (204, 304):
        return not answer.buf
    if "transfer-encoding" in fields:
        if [v.lower() for v in fields["transfer-encoding"]] != ["chunked"] or "content-length" in fields:
            return False
        return _chunked(answer, limit)
    lengths = set(fields.get("content-length", ()))
    if len(lengths) != 1 or not _DIGITS.fullmatch(value := lengths.pop()) or int(value) > ANSWER_BODY_LIMIT:
        return False  # a body up to the close, conflicting lengths, or longer than read for a connection
    while len(answer.buf) < int(value):
        answer.fill(limit)
    return len(answer.buf) == int(value)


def _line(answer: _Answer, limit: int) -> bytes:
    while (eol := answer.buf.find(b"\r\n")) < 0:
        answer.fill(limit)
    line, answer.buf = answer.buf[:eol], answer.buf[eol + 2 :]
    return line


def _chunked(answer: _Answer, limit: int) -> bool:
    """Read a chunked body and its trailers within ``limit`` bytes read in all; whether it was well formed."""
    while True:
        size_text = _line(answer, limit).split(b";", 1)[0].strip()
        if not _CHUNK_SIZE.fullmatch(size_text) or int(size_text, 16) > ANSWER_BODY_LIMIT:
            return False
        size = int(size_text, 16)
        if size == 0:
            break
        while len(answer.buf) < size + 2:
            answer.fill(limit)
        if answer.buf[size : size + 2] != b"\r\n":
            return False
        answer.buf = answer.buf[size + 2 :]
    while _line(answer, limit):  # trailer fields, up to the empty line
        pass
    return not answer.buf


@contextmanager
def _as_webhook_error(deadline: _Deadline):
    """Everything a socket raises as a :class:`WebhookError` that says what failed."""
    try:
        yield
    except WebhookError:
        raise
    except socket.timeout:
        raise WebhookError(f"the webhook did not answer within {deadline.seconds:g} s") from None
    except ssl.SSLError as exc:
        raise WebhookError(f"TLS with the webhook failed: {exc.reason or type(exc).__name__}") from exc
    except OSError as exc:
        raise WebhookError(f"the webhook connection failed: {type(exc).__name__}") from exc


def _open(dest: Destination, deadline: _Deadline) -> socket.socket:
    """A connection to one of the checked addresses of ``dest``, TLS done (verified against the host name)."""
    sock = _connect(dest, deadline)
    try:
        with _as_webhook_error(deadline):
            if dest.tls:
                context = ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=dest.host, do_handshake_on_connect=False)
                deadline.arm(sock)
                sock.do_handshake()
        return sock
    except BaseException:
        sock.close()
        raise


def _request(dest: Destination, headers: dict[str, str], body: bytes, *, keep: bool) -> bytes:
    head = [f"POST {dest.target} HTTP/1.1", f"Host: {dest.host_header}"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    head += [f"Content-Length: {len(body)}", "Accept-Encoding: identity"]
    head += [] if keep else ["Connection: close"]
    return ("\r\n".join(head) + "\r\n\r\n").encode("ascii") + body


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
    """POST ``body`` to ``url`` within ``timeout`` seconds in all, on a connection of its own (closed after
    the status line); the answer's status code.

    Raises :class:`WebhookError` (an ``OSError``) for everything that is not an answer.
    """
    deadline = _Deadline(float(timeout), clock)
    dest = destination(url, allow_private=allow_private, resolver=resolver, timeout=deadline.left())
    request = _request(dest, headers, body, keep=False)
    sock = _open(dest, deadline)
    try:
        with _as_webhook_error(deadline):
            deadline.arm(sock).sendall(request)
            return _read_status(sock, deadline)
    finally:
        sock.close()


def _wait(sock: socket.socket, event: int, deadline: _Deadline) -> None:
    """Wait until ``sock`` is ready for ``event`` (``select.POLLIN``/``POLLOUT``), at most the time left."""
    poller = select.poll()
    poller.register(sock, event)
    if not poller.poll(math.ceil(deadline.left() * 1000)):
        raise WebhookError(f"the webhook did not answer within {deadline.seconds:g} s")


def _send(sock: socket.socket, request: bytes, deadline: _Deadline) -> None:
    """Send ``request`` within the deadline. A kept plain-TCP connection is made non-blocking once and waited
    on here, the time left as each wait's bound, as a socket timeout would: the request goes out in one
    ``send`` (an idle connection's buffer is empty) and an answer is one wait and one ``recv``, without a
    timeout switch (a system call) before every operation and a wait for writability first. TLS: the
    socket's own timeout, set to the time left before every operation."""
    if isinstance(sock, ssl.SSLSocket):
        deadline.arm(sock).sendall(request)
        return
    deadline.left()
    if sock.gettimeout() != 0.0:
        sock.setblocking(False)
    view, sent = memoryview(request), 0
    while sent < len(request):
        try:
            sent += sock.send(view[sent:])
        except BlockingIOError:
            _wait(sock, select.POLLOUT, deadline)


def _recv(sock: socket.socket, size: int, deadline: _Deadline) -> bytes:
    """At most ``size`` bytes within the time left (:func:`_send`: a non-blocking socket is waited on)."""
    if sock.gettimeout() != 0.0:
        return deadline.arm(sock).recv(size)
    while True:
        _wait(sock, select.POLLIN, deadline)
        try:
            return sock.recv(size)
        except BlockingIOError:  # ready, then not: wait again
            continue


def _idle(sock: socket.socket) -> bool:
    """Whether a kept connection is still open with nothing to read (a close or stray bytes end it)."""
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return not poller.poll(0) and not (isinstance(sock, ssl.SSLSocket) and sock.pending())
    except (OSError, ValueError):
        return False


class Connections:
    """The webhook connections of one delivery round (``with``: closed at its end); :meth:`post` as
    :func:`post` does, on a kept connection.

    A host is looked up once per round (checked as :func:`destination` does) and its connections go only to
    those addresses. Idle connections are kept per (host, checked addresses, port, TLS); a POST takes one
    (or opens one: it never waits for another POST) and gives it back when the whole answer was read within
    the caps and the deadline and the receiver keeps it open. ``opened`` counts the connections opened.
    """

    def __init__(
        self,
        *,
        timeout: float,
        allow_private: bool,
        resolver: Resolver | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.timeout, self.allow_private, self.resolver, self.clock = (
            float(timeout),
            allow_private,
            resolver,
            clock,
        )
        self.opened = 0
        self._lock = threading.Lock()
        self._where: dict[tuple[str, int, bool], tuple[IPAddress, ...]] = {}
        self._checked: dict[str, Destination] = {}  # each URL as checked the first time in this round
        self._idle: dict[tuple, list[socket.socket]] = {}
        self._closed = False

    def __enter__(self) -> Connections:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close every kept connection; later POSTs close theirs after the answer."""
        with self._lock:
            self._closed = True
            kept, self._idle = self._idle, {}
        for socks in kept.values():
            for sock in socks:
                sock.close()

    def destination(self, url: str, deadline: _Deadline) -> Destination:
        """``url`` checked, its host's addresses as looked up the first time in this round."""
        dest = self._checked.get(url)  # one dict read: atomic, only ever set once per URL (below)
        if dest is not None:
            return dest
        host, port, tls = ascii_host(url)
        with self._lock:
            addresses = self._where.get((host, port, tls))
        if addresses is None:
            dest = destination(
                url, allow_private=self.allow_private, resolver=self.resolver, timeout=deadline.left()
            )
            with self._lock:  # two first POSTs may both look up: each connects to what it checked
                addresses = self._where.setdefault((host, port, tls), dest.addresses)
        else:
            dest = Destination(host, port, tls, _target(url), addresses)
        with self._lock:
            self._checked.setdefault(url, Destination(host, port, tls, dest.target, addresses))
        return dest

    def _take(self, key: tuple) -> socket.socket | None:
        while True:
            with self._lock:
                idle = self._idle.get(key)
                sock = idle.pop() if idle else None
            if sock is None or _idle(sock):
                return sock
            sock.close()

    def _give(self, key: tuple, sock: socket.socket) -> None:
        with self._lock:
            if not self._closed:
                self._idle.setdefault(key, []).append(sock)
                return
        sock.close()

    def post(self, url: str, headers: dict[str, str], body: bytes) -> int:
        """POST ``body`` to ``url`` within the deadline; the answer's status code (:func:`post`)."""
        deadline = _Deadline(self.timeout, self.clock)
        dest = self.destination(url, deadline)
        request = _request(dest, headers, body, keep=True)
        key = dest.key
        sock = self._take(key)
        while True:
            kept = sock is not None
            if sock is None:
                sock = _open(dest, deadline)
                with self._lock:
                    self.opened += 1
            answer = _Answer(sock, deadline)
            try:
                with _as_webhook_error(deadline):
                    try:
                        _send(sock, request, deadline)
                        status = _final_status(answer)
                    except (ConnectionResetError, BrokenPipeError):
                        if answer.total:
                            raise
                        raise _Gone("the webhook closed the connection before answering") from None
            except _Gone:
                sock.close()
                if kept:  # closed while idle, before reading the request: once more on a fresh connection
                    sock = None
                    continue
                raise
            except BaseException:
                sock.close()
                raise
            try:
                keep = _rest(answer, status)
            except OSError:  # the status stands; what follows it only decides whether the connection stays
                keep = False
            if keep:
                self._give(key, sock)
            else:
                sock.close()
            return status
