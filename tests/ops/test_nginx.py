"""deploy/nginx.conf run by Debian's real nginx in front of a real gunicorn (127.0.0.1, free ports, temp dirs):
slow clients never reach the sync workers, and every answer nginx gives itself has the API's JSON error shape
with the X-RateLimit-* headers."""

from __future__ import annotations

import json
import re
import socket
import threading
import time

import pytest

from bench.deploy import Gunicorn, free_port, get, prepare
from bench.services import NGINX_CONF, Nginx

from .rawhttp import parse_response

#: what nginx itself answers, per internal error location of deploy/nginx.conf: (status, error code)
REJECTIONS = {
    "payload_too_large": (413, "payload_too_large"),
    "uri_too_long": (414, "uri_too_long"),
    "headers_too_large": (431, "headers_too_large"),
    "invalid_request": (400, "invalid_request"),
    "service_unavailable": (503, "service_unavailable"),
}


@pytest.fixture(scope="module")
def edge(snapshot_dir, tmp_path_factory):
    """One gunicorn (2 sync workers, worker timeout 6 s so the slow-client attack would kill workers within
    the test) behind nginx."""
    tmp = tmp_path_factory.mktemp("nginx-edge")
    fx = prepare(tmp / "instance", snapshot_dir, accounts=2, locations_per_account=1, points=5)
    env = {"URBAN_TRUSTED_PROXIES": "1", "GUNICORN_TIMEOUT": "6"}
    with (
        Gunicorn(fx.instance, workers=2, data_dir=snapshot_dir, env=env, log=tmp / "gunicorn.log") as app,
        Nginx([app.port]) as nginx,
    ):
        yield fx, app, nginx


def _raw(port: int, data: bytes, timeout: float = 10.0) -> tuple[int, dict, bytes]:
    """Send ``data`` as is; parse the status, headers and body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        buf = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
            head, sep, body = buf.partition(b"\r\n\r\n")
            if sep:
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
                if length and len(body) >= int(length.group(1)):
                    break
    return parse_response(buf)


def assert_json_error(status_headers_body, status: int, code: str) -> dict:
    got, headers, body = status_headers_body
    headers = {k.lower(): v for k, v in headers.items()}
    assert got == status, (got, body[:200])
    assert headers["content-type"].startswith("application/json")
    doc = json.loads(body)
    assert doc["error"] == code and isinstance(doc["message"], str) and doc["message"]
    assert set(doc) == ({"error", "message", "requestId"} if status >= 500 else {"error", "message"})
    if status >= 500:
        assert doc["requestId"] == headers["x-request-id"] and len(doc["requestId"]) == 32
    assert headers["x-ratelimit-limit"] == "30" and headers["x-ratelimit-remaining"] == "30"
    assert abs(int(headers["x-ratelimit-reset"]) - time.time()) < 120
    assert headers["cache-control"] == "no-store" and headers["x-content-type-options"] == "nosniff"
    assert headers["access-control-allow-origin"] == "*"
    assert "x-ratelimit-remaining" in headers["access-control-expose-headers"].lower()
    return doc


def test_every_error_location_of_the_conf_is_one_we_test():
    conf = NGINX_CONF.read_text()
    targets = set(re.findall(r"error_page [0-9 ]+=\d+ /_nginx/(\w+);", conf))
    locations = set(re.findall(r"location = /_nginx/(\w+) \{\s*internal;", conf))
    assert targets == locations == {*REJECTIONS, "https_redirect"}  # the redirect: test_nginx_tls.py
    for name, (status, code) in REJECTIONS.items():
        block = conf.split(f"location = /_nginx/{name} {{", 1)[1].split("\n        }", 1)[0]
        assert f'return {status} \'{{"error":"{code}"' in block
        assert block.count("always;") >= 9  # every header on the error answer too
        assert "add_header Strict-Transport-Security $urban_hsts always;" in block  # over TLS only


def test_normal_requests_pass_with_the_client_address_forwarded(edge):
    fx, app, nginx = edge
    status, headers, body = get(nginx.port, "/api/v1/locations", {"Authorization": f"Bearer {fx.keys[0]}"})
    assert status == 200 and json.loads(body)
    assert headers["X-RateLimit-Limit"] == "unlimited"
    # a client-written X-Forwarded-For buys no fresh failed-auth budget: the app sees nginx's last hop
    first = get(nginx.port, "/api/v1/locations", {"X-Forwarded-For": "203.0.113.1"})
    second = get(nginx.port, "/api/v1/locations", {"X-Forwarded-For": "198.51.100.7"})
    assert first[0] == second[0] == 401
    assert int(second[1]["X-RateLimit-Remaining"]) == int(first[1]["X-RateLimit-Remaining"]) - 1


def test_body_over_the_limit_is_413_json(edge):
    _fx, _app, nginx = edge
    body = b'{"email": "' + b"a" * 20000 + b'"}'
    req = (
        b"POST /api/v1/signup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    assert_json_error(_raw(nginx.port, req), 413, "payload_too_large")


@pytest.mark.parametrize("length", [9000, 40000])
def test_request_line_over_the_limit_is_414_json(edge, length):
    _fx, _app, nginx = edge
    assert_json_error(
        _raw(nginx.port, b"GET /api/v1/" + b"x" * length + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
        414,
        "uri_too_long",
    )


def test_request_line_between_the_limits_gets_gunicorns_json_414(edge):
    """4 KiB..8 KiB: nginx passes it, gunicorn's own limit answers, in the same shape."""
    _fx, _app, nginx = edge
    status, headers, body = _raw(nginx.port, b"GET /api/v1/" + b"x" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 414 and json.loads(body)["error"] == "uri_too_long" and "x-ratelimit-limit" in headers


@pytest.mark.parametrize("header", [b"X-Big: " + b"a" * 9000, b"Cookie: " + b"c=" * 5000])
def test_header_field_over_the_limit_is_431_json(edge, header):
    _fx, _app, nginx = edge
    assert_json_error(
        _raw(nginx.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n"),
        431,
        "headers_too_large",
    )


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\n\r\n",
        b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        b"POST /api/v1/signup HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
    ],
)
def test_malformed_request_is_400_json(edge, request_bytes):
    _fx, _app, nginx = edge
    assert_json_error(_raw(nginx.port, request_bytes), 400, "invalid_request")


def test_no_app_host_answering_is_503_json():
    with Nginx([free_port()]) as nginx:  # nothing listens on the upstream port
        doc = assert_json_error(
            _raw(nginx.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 503, "service_unavailable"
        )
        assert "retry" in doc["message"]
        status, headers, _body = _raw(nginx.port, b"GET /api/v1/locations HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == 503 and headers["retry-after"] == "5"


def _slow_client(port: int, stop: threading.Event, opened: list, lock: threading.Lock) -> None:
    """The attack: a request head sent one header line every 4 s, never finished."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        with lock:
            opened.append(sock)
        while not stop.wait(4):
            sock.sendall(b"X-Slow: 1\r\n")
    except OSError:
        pass


def test_two_hundred_slow_clients_do_not_stop_normal_requests(edge):
    fx, app, nginx = edge
    workers_before = sorted(app.worker_pids())
    served_before = len(app.log_lines())
    stop, lock, opened = threading.Event(), threading.Lock(), []
    threads = [
        threading.Thread(target=_slow_client, args=(nginx.port, stop, opened, lock), daemon=True)
        for _ in range(200)
    ]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 10
        while len(opened) < 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(opened) == 200
        answers = []
        until = time.monotonic() + 8  # longer than the 6 s worker timeout the attack would trip
        while time.monotonic() < until:
            status, _h, _b = get(
                nginx.port, "/api/v1/locations", {"Authorization": f"Bearer {fx.keys[1]}"}, timeout=5
            )
            answers.append(status)
            time.sleep(0.1)
        assert answers and set(answers) == {200}
        still_open = sum(1 for s in opened if s.fileno() != -1)
        assert still_open == 200  # the attack was on the whole time
    finally:
        stop.set()
        for s in opened:
            s.close()
    assert sorted(app.worker_pids()) == workers_before  # no worker was killed by the timeout
    logged = app.log_lines()[served_before:]
    assert len(logged) == len(answers)  # the slow requests never reached gunicorn
    assert all(entry.get("status") in (200, "200") for entry in logged)
