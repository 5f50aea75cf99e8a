"""``app.server.worker.CoalescingResponse``: the same bytes as gunicorn's own response writer, in one
``sendall`` (status line and headers together with the body), for GET, HEAD and a bodiless response.

Requests are parsed by gunicorn's real parser from a socket pair; the writer's socket records each
``sendall``.
"""

from __future__ import annotations

import socket

import pytest
from gunicorn import http as gunicorn_http
from gunicorn.config import Config
from gunicorn.http.wsgi import Response

from app.server.worker import CoalescingResponse


class Recorder:
    def __init__(self):
        self.calls = []

    def sendall(self, data):
        self.calls.append(bytes(data))


def _request(method: str):
    a, b = socket.socketpair()
    a.sendall(f"{method} /api/v1/x HTTP/1.1\r\nHost: h\r\n\r\n".encode())
    req = next(gunicorn_http.get_parser(Config(), b, ("127.0.0.1", 1)))
    a.close()
    b.close()
    return req


def _answer(cls, method: str, status: str, body: bytes):
    sock = Recorder()
    resp = cls(_request(method), sock, Config())
    resp.start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    if body or method == "HEAD":
        resp.write(body)
    resp.close()
    return sock.calls


def _without_date(data: bytes) -> bytes:
    return b"\r\n".join(line for line in data.split(b"\r\n") if not line.startswith(b"Date: "))


@pytest.mark.parametrize(
    "method,status,body",
    [
        ("GET", "200 OK", b'{"status":"ok"}\n'),
        ("HEAD", "200 OK", b'{"status":"ok"}\n'),
        ("GET", "304 Not Modified", b""),
    ],
)
def test_one_sendall_with_the_bytes_gunicorn_would_send(method, status, body):
    ours = _answer(CoalescingResponse, method, status, body)
    theirs = _answer(Response, method, status, body)
    assert len(ours) == 1
    assert _without_date(ours[0]) == _without_date(b"".join(theirs))
    assert ours[0].endswith(b"\r\n\r\n" + (body if method == "GET" else b""))
