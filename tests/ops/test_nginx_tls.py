"""deploy/nginx.conf's TLS, run by Debian's nginx with a self-signed certificate made here, in front of a
real gunicorn: HSTS on every answer over TLS and never over plain HTTP, plain HTTP redirected to the same
URL on https, the app's answers unchanged through TLS, TLS 1.2 and 1.3 only."""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.deploy import Gunicorn, get, prepare
from bench.services import NGINX_CONF, Nginx, self_signed_certificate

pytestmark = pytest.mark.slow

ONE_YEAR = 365 * 24 * 3600


@pytest.fixture(scope="module")
def tls_edge(snapshot_dir, tmp_path_factory):
    """One gunicorn (trusting one proxy) behind nginx with this module's own certificate."""
    tmp = tmp_path_factory.mktemp("nginx-tls")
    fx = prepare(tmp / "instance", snapshot_dir, accounts=1, locations_per_account=1, points=5)
    certificate, key = self_signed_certificate(tmp)
    env = {"URBAN_TRUSTED_PROXIES": "1"}
    with (
        Gunicorn(fx.instance, workers=2, data_dir=snapshot_dir, env=env, log=tmp / "gunicorn.log") as app,
        Nginx([app.port], certificate=certificate, key=key) as nginx,
    ):
        yield fx, app, nginx


def client_context(nginx, **versions) -> ssl.SSLContext:
    """A client trusting only the test's certificate (verification on), optionally with min/max versions."""
    context = ssl.create_default_context(cafile=str(nginx.certificate))
    for name, version in versions.items():
        setattr(context, name, version)
    return context


def https(nginx, method: str, target: str, headers=None, body: bytes | None = None, context=None):
    """One request over TLS: (status, header list, body, negotiated TLS version)."""
    conn = http.client.HTTPSConnection(
        "127.0.0.1", nginx.tls_port, timeout=15, context=context or client_context(nginx)
    )
    try:
        conn.connect()
        version = conn.sock.version()
        conn.request(method, target, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.getheaders(), resp.read(), version
    finally:
        conn.close()


def plain(port: int, method: str, target: str, headers=None, body: bytes | None = None):
    """One request over plain HTTP: (status, header list, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.request(method, target, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.getheaders(), resp.read()
    finally:
        conn.close()


def hsts_values(header_list) -> list[str]:
    return [value for name, value in header_list if name.lower() == "strict-transport-security"]


def header(header_list, wanted: str) -> str | None:
    return next((value for name, value in header_list if name.lower() == wanted.lower()), None)


def requests_of_every_kind(fx) -> list[tuple[str, str, dict, bytes | None, int]]:
    """(method, target, headers, body, expected status): the app's 200s (JSON, HTML), its errors, and
    answers nginx gives itself."""
    key = {"Authorization": f"Bearer {fx.keys[0]}"}
    lat, lng = fx.points[0]
    return [
        ("GET", "/api/v1/locations", key, None, 200),
        ("GET", f"/api/v1/air-quality?lat={lat}&lng={lng}", key, None, 200),
        ("GET", "/healthz", {}, None, 200),
        ("GET", "/", {}, None, 200),
        ("GET", "/api/v1/locations", {}, None, 401),
        ("GET", "//", {}, None, 404),
        ("POST", "/api/v1/signup", {"Content-Type": "application/json"}, b"{", 400),
        ("POST", "/api/v1/signup", {"Content-Type": "application/json"}, b"x" * 20000, 413),  # nginx's own
        ("GET", "/api/v1/" + "x" * 9000, {}, None, 414),  # nginx's own
    ]


def test_hsts_on_every_answer_over_tls_and_never_over_plain_http(tls_edge):
    fx, _app, nginx = tls_edge
    for method, target, headers, body, status in requests_of_every_kind(fx):
        got, header_list, _body, _version = https(nginx, method, target, headers, body)
        assert got == status, (target[:40], got)
        values = hsts_values(header_list)
        assert len(values) == 1, (target[:40], values)  # exactly one: nginx's
        max_age = re.fullmatch(r"max-age=(\d+)(; ?includeSubDomains)?", values[0])
        assert max_age and int(max_age.group(1)) >= ONE_YEAR, values
        # the same request over plain HTTP: the balancer-style listener proxies it, the port-80 one
        # redirects it; neither answer carries HSTS (RFC 6797 §7.2: never over plain HTTP)
        for port in (nginx.port, nginx.redirect_port):
            got, header_list, _body = plain(port, method, target, headers, body)
            assert hsts_values(header_list) == [], (port, target[:40], got)


def test_plain_http_is_redirected_to_the_same_url_on_https(tls_edge):
    fx, app, nginx = tls_edge
    served_before = len(app.log_lines())
    key = {"Authorization": f"Bearer {fx.keys[0]}"}
    targets = ["/", "/api/v1/locations", "/api/v1/briefing?lat=51.2&lng=4.4&x=%20a", "//", "/portal/x?y=1"]
    for target in targets:
        for method, body in (
            ("GET", None),
            ("HEAD", None),
            ("POST", b'{"email":"a@stad.be"}'),
            ("DELETE", None),
        ):
            status, header_list, answer = plain(nginx.redirect_port, method, target, key, body)
            assert status == 308, (method, target, status)  # 308: the method and body are kept
            assert header(header_list, "Location") == f"https://127.0.0.1:{nginx.tls_port}{target}"
            assert answer == b"" and header(header_list, "Content-Length") == "0"  # no HTML page
            assert header(header_list, "Content-Type") is None
            assert header(header_list, "X-Content-Type-Options") == "nosniff"
            assert all(header(header_list, name) for name in ("X-RateLimit-Limit", "X-Request-Id"))
    assert len(app.log_lines()) == served_before  # nothing reached the app over plain HTTP
    # following the redirect over TLS reaches the app with the same method
    status, _h, answer, _v = https(nginx, "GET", "/api/v1/locations", key)
    assert status == 200 and json.loads(answer)


def test_the_apps_answers_pass_through_tls_unchanged(tls_edge):
    fx, app, nginx = tls_edge
    for method, target, headers, body, status in requests_of_every_kind(fx):
        if status in (413, 414):
            continue  # nginx's own: the app never answers them
        direct = plain(app.port, method, target, headers, body)
        through = https(nginx, method, target, headers, body)
        assert through[0] == direct[0] == status, target
        assert through[2] == direct[2], target
        for name in ("Content-Type", "ETag", "Cache-Control", "Content-Language", "Vary"):
            assert header(through[1], name) == header(direct[1], name), (target, name)
    # the app knows it is behind TLS (X-Forwarded-Proto from nginx, trusted): its redirects say https
    status, header_list, _body, _version = https(nginx, "GET", "/portal")
    assert status == 308 and header(header_list, "Location").startswith("https://127.0.0.1")
    assert get(app.port, "/portal")[1]["Location"].startswith("http://")


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
def test_only_tls_1_2_and_1_3_are_offered(tls_edge):
    _fx, _app, nginx = tls_edge
    assert https(nginx, "GET", "/healthz")[3] == "TLSv1.3"
    at_most_12 = client_context(nginx, maximum_version=ssl.TLSVersion.TLSv1_2)
    assert https(nginx, "GET", "/healthz", context=at_most_12)[3] == "TLSv1.2"
    for old in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
        context = client_context(nginx, minimum_version=old, maximum_version=old)
        context.set_ciphers("ALL:@SECLEVEL=0")  # the client speaks it (a server allowing it answers)
        with pytest.raises(ssl.SSLError):
            https(nginx, "GET", "/healthz", context=context)


def test_the_certificate_paths_are_the_shipped_settings():
    conf = NGINX_CONF.read_text()
    assert re.findall(r"^\s*ssl_certificate(?:_key)? (\S+);", conf, re.M) == [
        "/etc/nginx/tls/fullchain.pem",
        "/etc/nginx/tls/privkey.pem",
    ]
    assert re.findall(r"^\s*ssl_protocols (.*);", conf, re.M) == ["TLSv1.2 TLSv1.3"]


class _HstsSettingUpstream(BaseHTTPRequestHandler):
    """An upstream that tries to switch HSTS off."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Strict-Transport-Security", "max-age=0")
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"{}\n")

    def log_message(self, *args):
        pass


def test_an_hsts_header_from_upstream_never_reaches_the_client(tmp_path):
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _HstsSettingUpstream)
    thread = threading.Thread(target=upstream.serve_forever, daemon=True)
    thread.start()
    try:
        certificate, key = self_signed_certificate(tmp_path)
        with Nginx([upstream.server_address[1]], certificate=certificate, key=key) as nginx:
            status, header_list, body, _version = https(nginx, "GET", "/anything")
            assert status == 200 and body == b"{}\n"
            assert hsts_values(header_list) == [f"max-age={ONE_YEAR}"]
            assert hsts_values(plain(nginx.port, "GET", "/anything")[1]) == []
    finally:
        upstream.shutdown()
        upstream.server_close()


def test_the_tls_port_speaks_only_tls(tls_edge):
    """Plain HTTP sent to the TLS port gets nginx's 400 (JSON), not a proxied answer."""
    _fx, _app, nginx = tls_edge
    with socket.create_connection(("127.0.0.1", nginx.tls_port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert json.loads(body)["error"] == "invalid_request"
