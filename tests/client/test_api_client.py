"""The shared HTTP client and settings, against small HTTP servers on 127.0.0.1 speaking odd answers."""

from __future__ import annotations

import json
import os
import stat
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from urban_client.api import ApiClient, ApiError, NetworkError, target_params
from urban_client.cli import ExitCode, exit_code_for
from urban_client.config import ConfigError, config_path, resolve, write_file

from .conftest import SHUTDOWN_POLL, free_port


class Scripted(BaseHTTPRequestHandler):
    """Answers each path with the (status, headers, body) in ``routes``; records request headers."""

    routes: dict = {}
    seen: list = []

    def do_GET(self):  # noqa: N802
        path = self.path.split("?")[0]
        type(self).seen.append((self.path, dict(self.headers)))
        status, headers, body = type(self).routes[path]
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted():
    handler = type("Handler", (Scripted,), {"routes": {}, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True
    )
    thread.start()
    yield handler, f"http://127.0.0.1:{server.server_port}/api/v1"
    server.shutdown()
    server.server_close()


def test_success_returns_exact_bytes_parsed_json_and_rate_limit(scripted):
    handler, base = scripted
    body = b'{"locations":[],  "x": "\xc2\xb5g/m\xc2\xb3"}'
    handler.routes["/api/v1/locations"] = (
        200,
        {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "42", "X-RateLimit-Reset": "1763337600"},
        body,
    )
    response = ApiClient(base + "/", api_key="uk_abc").locations()
    assert response.body == body
    assert response.data == {"locations": [], "x": "µg/m³"}
    assert (response.rate_limit.limit, response.rate_limit.remaining, response.rate_limit.reset) == (
        100,
        42,
        1763337600,
    )
    path, headers = handler.seen[-1]
    assert path == "/api/v1/locations" and headers["Authorization"] == "Bearer uk_abc"


def test_no_key_sends_no_authorization_and_params_pass_unchanged(scripted):
    handler, base = scripted
    handler.routes["/api/v1/briefing"] = (200, {}, b"{}")
    ApiClient(base).briefing(lat="51.20", lng="4.40")
    path, headers = handler.seen[-1]
    assert "Authorization" not in headers
    assert path == "/api/v1/briefing?lat=51.20&lng=4.40"
    assert target_params(location_id="loc_1", lat=51.5) == {"locationId": "loc_1", "lat": "51.5"}


def test_json_error_maps_code_message_status_and_retry_after(scripted):
    handler, base = scripted
    body = json.dumps({"error": "quota_exceeded", "message": "Daily quota of 100 calls reached"}).encode()
    handler.routes["/api/v1/locations"] = (429, {"Retry-After": "3600", "X-RateLimit-Remaining": "0"}, body)
    with pytest.raises(ApiError) as info:
        ApiClient(base, "uk_k").locations()
    err = info.value
    assert (err.status, err.code, err.message, err.retry_after) == (
        429,
        "quota_exceeded",
        "Daily quota of 100 calls reached",
        3600,
    )
    assert err.body == body and err.rate_limit.remaining == 0
    assert exit_code_for(err) == ExitCode.QUOTA


def test_non_json_error_page_and_non_json_success(scripted):
    handler, base = scripted
    handler.routes["/api/v1/disruptions"] = (502, {"Content-Type": "text/html"}, b"<h1>Bad Gateway</h1>")
    handler.routes["/api/v1/locations"] = (200, {"Content-Type": "text/html"}, b"<html>portal</html>")
    with pytest.raises(ApiError) as info:
        ApiClient(base).disruptions(lat=1, lng=2)
    assert (info.value.status, info.value.code, info.value.from_api) == (502, "http_502", False)
    assert info.value.message.startswith(
        f"the server at {base} answered HTTP 502 Bad Gateway with an HTML page, not the API's JSON error"
    )
    assert exit_code_for(info.value) == ExitCode.UPSTREAM
    with pytest.raises(ApiError) as info:
        ApiClient(base).locations()
    assert info.value.code == "invalid_response" and exit_code_for(info.value) == ExitCode.ERROR
    assert not info.value.from_api


def test_redirects_are_not_followed(scripted):
    handler, base = scripted
    handler.routes["/api/v1/locations"] = (302, {"Location": "http://example.invalid/steal"}, b"")
    with pytest.raises(ApiError) as info:
        ApiClient(base, "uk_k").locations()
    assert info.value.status == 302


@pytest.mark.parametrize(
    "status, code",
    [
        (400, ExitCode.USAGE),
        (401, ExitCode.AUTH),
        (403, ExitCode.AUTH),
        (404, ExitCode.NOT_FOUND),
        (422, ExitCode.OUTSIDE_AREA),
        (429, ExitCode.QUOTA),
        (500, ExitCode.ERROR),
        (502, ExitCode.UPSTREAM),
        (503, ExitCode.UPSTREAM),
    ],
)
def test_exit_code_per_status(status, code):
    assert exit_code_for(ApiError(status, "x", "y")) == code


@pytest.mark.parametrize(
    "status, code",
    [
        (404, ExitCode.ERROR),
        (429, ExitCode.ERROR),
        (500, ExitCode.ERROR),
        (502, ExitCode.UPSTREAM),
        (503, ExitCode.UPSTREAM),
        (504, ExitCode.UPSTREAM),
    ],
)
def test_exit_code_of_an_answer_that_is_not_the_apis(status, code):
    """Another server's page never claims 'not found' or 'quota'; only a gateway failure means retry."""
    assert exit_code_for(ApiError(status, f"http_{status}", "y", from_api=False)) == code


def test_connection_refused_and_bad_url_are_network_errors(scripted):
    handler, _ = scripted
    with pytest.raises(NetworkError) as info:
        ApiClient(f"http://127.0.0.1:{free_port()}/api/v1", timeout=2).locations()
    assert info.value.kind == "refused" and "(connection refused by" in str(info.value)
    assert not info.value.is_timeout
    for url in ("not a url", "127.0.0.1:8000/api/v1", "file:///etc/passwd", "http://:80/api/v1"):
        with pytest.raises(NetworkError) as info:
            ApiClient(url).locations()
        assert info.value.kind == "invalid_url", url
    assert handler.seen == []


def test_timeouts_are_told_apart(silent_server, unreachable_port):
    with pytest.raises(NetworkError) as info:
        ApiClient(silent_server, timeout=0.3).locations()
    assert info.value.kind == "read_timeout" and info.value.is_timeout
    assert str(info.value).startswith(
        f"{silent_server} accepted the connection but sent no answer within 0.3 s"
    )
    with pytest.raises(NetworkError) as info:
        ApiClient(f"http://127.0.0.1:{unreachable_port}/api/v1", timeout=0.3).locations()
    assert info.value.kind == "connect_timeout" and info.value.is_timeout
    assert str(info.value).startswith(
        f"could not connect to http://127.0.0.1:{unreachable_port}/api/v1 within 0.3 s"
    )


def test_credentials_in_the_base_url_never_appear_in_messages():
    port = free_port()
    client = ApiClient(f"http://ops:s3cret@127.0.0.1:{port}/api/v1", timeout=2)
    with pytest.raises(NetworkError) as info:
        client.locations()
    assert "s3cret" not in str(info.value) and "s3cret" not in repr(client)
    assert f"http://127.0.0.1:{port}/api/v1" in str(info.value)


def test_repr_never_shows_the_key(tmp_path):
    assert "uk_secret" not in repr(ApiClient(api_key="uk_secret"))
    settings = resolve(environ={"URBAN_API_KEY": "uk_secret", "URBAN_CONFIG": str(tmp_path / "none.ini")})
    assert "uk_secret" not in repr(settings)


def test_settings_precedence_argument_env_file_default(tmp_path):
    path = tmp_path / "urban" / "config.ini"
    write_file(path, {"api_key": "uk_file", "base_url": "http://file/api/v1", "timeout": "3"})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    env = {"URBAN_CONFIG": str(path)}
    s = resolve(environ=env)
    assert (s.api_key, s.key_source, s.base_url, s.timeout) == ("uk_file", "file", "http://file/api/v1", 3.0)
    env.update(URBAN_API_KEY="uk_env", URBAN_BASE_URL="http://env/api/v1/", URBAN_TIMEOUT="4.5")
    s = resolve(environ=env)
    assert (s.api_key, s.key_source, s.base_url, s.timeout) == ("uk_env", "env", "http://env/api/v1", 4.5)
    s = resolve(base_url="http://arg/api/v1", timeout=1.5, environ=env)
    assert (s.base_url, s.timeout) == ("http://arg/api/v1", 1.5)
    s = resolve(environ={"URBAN_CONFIG": str(tmp_path / "missing.ini")})
    assert (s.api_key, s.key_source, s.timeout) == (None, None, 10.0)
    assert s.base_url == "http://127.0.0.1:8000/api/v1"
    with pytest.raises(ConfigError):
        resolve(environ={"URBAN_CONFIG": str(path), "URBAN_TIMEOUT": "soon"})


def test_config_path_follows_xdg():
    assert str(config_path({"HOME": "/home/ops"})) == "/home/ops/.config/urban/config.ini"
    assert str(config_path({"HOME": "/home/ops", "XDG_CONFIG_HOME": "/cfg"})) == "/cfg/urban/config.ini"
    assert str(config_path({"HOME": "/home/ops", "URBAN_CONFIG": "/etc/urban.ini"})) == "/etc/urban.ini"
