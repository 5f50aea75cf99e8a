"""Webhook receivers on 127.0.0.1 for the delivery tests: a well-behaved one and every kind of hostile one
(slow, silent, endless, compressed bombs, garbage, closing mid-way), as raw sockets so each byte is ours."""

from __future__ import annotations

import gzip
import socket
import ssl
import threading
from typing import Callable

import brotli

#: how many bytes an endless answer sends at most (far more than loopback socket buffers hold), so a client
#: that reads whole answers gets a finite one instead of hanging the test
ENDLESS_LIMIT = 96 * 1024 * 1024
BOMB_SIZE = 64 * 1024 * 1024  # bytes a compressed bomb inflates to
PACE = 0.02  # seconds between the bytes of a trickling answer (never what a test outcome depends on)


class Receiver:
    """Accepts connections on 127.0.0.1 and runs ``answer(receiver, conn)`` for each request it reads whole.

    Records every request (head lines, body) in ``requests``; ``connections`` counts the accepted ones;
    ``hung_up`` is set when the client closed while the receiver was still sending; ``release`` (set by
    :meth:`close`) ends every answer that waits or trickles.
    """

    def __init__(
        self, answer: Callable[["Receiver", socket.socket], None], *, tls: ssl.SSLContext | None = None
    ):
        self.answer = answer
        self.tls = tls
        self.requests: list[tuple[list[str], bytes]] = []
        self.connections = 0
        self.sent = 0
        self.hung_up = threading.Event()
        self.release = threading.Event()
        self.arrived = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def url(self, host: str = "127.0.0.1", path: str = "/hook") -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{path}"

    def _accept(self):
        while True:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket):
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            head, body = read_request(conn)
            self.requests.append((head, body))
            self.arrived.set()
            self.answer(self, conn)
        except OSError:
            self.hung_up.set()
        finally:
            conn.close()

    def send(self, conn: socket.socket, data: bytes) -> bool:
        """Send ``data``; False (and ``hung_up`` set) when the client has gone."""
        try:
            conn.sendall(data)
        except OSError:
            self.hung_up.set()
            return False
        self.sent += len(data)
        return True

    def close(self):
        self.release.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept(); close() alone does not
        except OSError:
            pass
        self.sock.close()
        self._accepting.join(5)
        for thread in self._threads:
            thread.join(5)


def read_request(conn: socket.socket) -> tuple[list[str], bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("the client closed before sending a request")
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        (int(v) for k, _, v in (l.partition(":") for l in lines[1:]) if k.lower() == "content-length"), 0
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return lines, body


def header(head: list[str], name: str) -> str | None:
    for line in head[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name.lower():
            return value.strip()
    return None


# -- answers -----------------------------------------------------------------------------------------------


def ok(rcv: Receiver, conn):
    rcv.send(conn, b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")


def status(code: int):
    def answer(rcv: Receiver, conn):
        rcv.send(conn, f"HTTP/1.1 {code} Whatever\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())

    return answer


def silent(rcv: Receiver, conn):
    """Reads the request and never answers."""
    rcv.release.wait()


def stalls_in_status_line(rcv: Receiver, conn):
    rcv.send(conn, b"HTTP/1.1 2")
    rcv.release.wait()


def _trickle(rcv: Receiver, conn, prefix: bytes, unit: bytes):
    if not rcv.send(conn, prefix):
        return
    while not rcv.release.wait(PACE):
        if not rcv.send(conn, unit):
            return


def slow_interim(rcv: Receiver, conn):
    """A ``100 Continue`` whose headers never end, a byte at a time."""
    _trickle(rcv, conn, b"HTTP/1.1 100 Continue\r\nX-Slow: ", b"a")


def slow_headers(rcv: Receiver, conn):
    """``200`` at once, then headers that never end, a byte at a time."""
    _trickle(rcv, conn, b"HTTP/1.1 200 OK\r\nX-Slow: ", b"a")


def slow_body(rcv: Receiver, conn):
    """``200`` with a long body sent a byte at a time."""
    _trickle(rcv, conn, b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n", b"a")


def _flood(rcv: Receiver, conn, head: bytes, chunk: bytes):
    if not rcv.send(conn, head):
        return
    while rcv.sent < ENDLESS_LIMIT and not rcv.release.is_set():
        if not rcv.send(conn, chunk):
            return


def endless_body(rcv: Receiver, conn):
    """``200`` with a chunked body that never ends, as fast as the client takes it."""
    chunk = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"
    _flood(rcv, conn, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunk)


def endless_interim(rcv: Receiver, conn):
    """``100 Continue`` answers without end."""
    _flood(rcv, conn, b"", b"HTTP/1.1 100 Continue\r\n\r\n" * 1000)


def bomb(encoding: str):
    """``200`` whose body is small on the wire (64 KiB gzip, 100 bytes br) and inflates to ``BOMB_SIZE``."""
    payload = {"gzip": lambda b: gzip.compress(b, 9), "br": lambda b: brotli.compress(b, quality=5)}[
        encoding
    ](bytes(BOMB_SIZE))

    def answer(rcv: Receiver, conn):
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: {encoding}\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
        ).encode()
        rcv.send(conn, head + payload)

    return answer


def garbage(rcv: Receiver, conn):
    rcv.send(conn, b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(256)))


def closes_mid_way(rcv: Receiver, conn):
    rcv.send(conn, b"HTTP/1.1 2")


def closes_at_once(rcv: Receiver, conn):
    pass
