"""Issue 16 against the real deployment: ``gunicorn -c gunicorn.conf.py`` in production mode on 127.0.0.1.

A Hypothesis suite sends generated hostile methods, paths, query strings, headers and bodies — as raw bytes
on a socket, so nothing is normalised on the way — to every route, and every answer must be: no 5xx, no
framework HTML (JSON, or for the portal our own page), all three ``X-RateLimit-*`` headers (outside the
dashboard, whose answers carry them only where a limit governs), the one error shape, no key echoed. Then
the findings that only a real server shows: keys in every encoding kept out of gunicorn's error log
("Invalid request" lines) and the access log; a deeply nested body is one log line.
"""

from __future__ import annotations

import json
import re
import socket
import time
import uuid
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bench.deploy import Gunicorn, prepare

from .rawhttp import parse_response

from .test_findings import HOSTILE_BODIES, KEY, encodings
from .test_secret_urls import cases as secret_url_cases, leaked

pytestmark = pytest.mark.slow

ROUTES = [
    "/api/v1/locations",
    "/api/v1/disruptions",
    "/api/v1/air-quality",
    "/api/v1/briefing",
    "/api/v1/openapi.json",
    "/api/v1/signup",
    "/healthz",
    "/portal/",
    "/portal/signin",
    "/portal/sent",
    "/portal/link/" + "A" * 43,
    "/portal/link",
    "/portal/signout",
    "/portal/account",
    "/portal/keys",
    "/portal/keys/1/revoke",
    "/portal/static/portal.css",
    "/portal/static/nope.css",
    "/portal",
    "/",
    "/nope",
    "/api/v1/nope",
    "/portal/static/..%2f..%2fapp%2fconfig.py",
    "/api/v1/docs",
    "/api/v1/docs/ui/x",
    "/api/v1/docs/static/x",
    "/static/x",
    "/dashboard/",
    "/dashboard/map",
    "/dashboard/map.json",
    "/dashboard/basemap.json",
    "/dashboard/locations",
    "/dashboard/locations/x",
    "/dashboard/locations/x/alerts",
    "/dashboard/locations/x/delete",
    "/dashboard/locations/x/report.pdf",
    "/dashboard/locations/x/dossier",
    "/dashboard/locations/x/dossier.pdf",
    "/dashboard/locations/x/dossier.zip",
    "/dashboard/language/x",
    "/dashboard/alerts/1/delete",
    "/dashboard/alerts/1/secret",
    "/dashboard/unsubscribe/x",
    "/dashboard/static/x",
    "/dashboard/locations/x/change-alert",
    "/dashboard/change-alerts/1/delete",
    "/dashboard/change-alerts/1/secret",
    "/dashboard/locations/x/calendar",
    "/dashboard/locations/x/calendar/revoke",
    "/dashboard/deliveries",
    "/dashboard/deliveries/retry",
    "/dashboard/deliveries/dismiss",
    "/api/v1/changes",
    "/api/v1/locations/x/changes",
    "/api/v1/history/air-quality",
    "/api/v1/history/works",
    "/api/v1/history/detours",
    "/calendar/x.ics",
    "/calendar/cal_" + "A" * 32 + ".ics",
    "/schemas/change-webhook/v1.json",
    "/portal/link/x",
    "/portal/static/x",
]
#: paths with an empty segment (``%2F`` reaches the app decoded): each is 404 ``not_found`` in JSON, whatever
#: the method, never the page or redirect of the path with the slashes merged
EMPTY_SEGMENTS = [
    "//",
    "///",
    "//?x=1",
    "/%2F",
    "/%2f/",
    "//healthz",
    "//portal/",
    "//portal/keys",
    "//dashboard/",
    "//api/v1/locations",
    "//api/v1/openapi.json",
    "/api//v1/locations",
    "/api/v1//locations",
    "/api/v1/locations//",
    "/portal//",
    "/portal//signin",
    "/portal/static//portal.css",
    "/dashboard//map",
    "/healthz//",
    "/x//y",
]
#: the pages that answer HTML (every other path answers JSON, CSS, scripts, images or a PDF)
HTML_PAGES = ("/", "/api/v1/docs", "/portal/", "/dashboard/")
NON_JSON = (
    "application/json",
    "application/geo+json",
    "text/css",
    "text/javascript",
    "application/javascript",
    "application/pdf",
    "image/",
    "application/schema+json",
    "text/calendar",
)
RATE = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")


@pytest.fixture(scope="module")
def hostile(snapshot_dir, tmp_path_factory):
    fx = prepare(tmp_path_factory.mktemp("hostile") / "instance", snapshot_dir, accounts=2, points=5)
    server = Gunicorn(
        fx.instance,
        workers=2,
        data_dir=snapshot_dir,
        env={
            "URBAN_AUTH_FAILURE_LIMIT": "1000000 per minute",
            "URBAN_SIGNUP_LIMIT_PER_IP": "1000000 per hour",
        },
    )
    with server:
        deadline = (
            time.monotonic() + 30
        )  # every worker booted, so no start-up line lands in a test's log window
        while server.log_path.read_text(errors="replace").count("Booting worker") < 2:
            assert time.monotonic() < deadline, "gunicorn workers did not boot"
            time.sleep(0.05)
        while '"path":"/healthz"' not in server.log_path.read_text(errors="replace"):
            assert time.monotonic() < deadline, "no access-log line for the readiness probe"
            time.sleep(0.05)
        yield server, fx


def exchange(port: int, data: bytes) -> tuple[int, dict, bytes]:
    """Send ``data`` on a fresh connection; (status, headers with lower-case names, body) of the answer.
    It reads until the server closes the connection, which gunicorn does after writing the request's log
    lines: once it returns, the logs hold them."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        try:
            sock.sendall(data)
        except OSError:  # the server may answer and close before reading all of it
            pass
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return parse_response(b"".join(chunks))


def request_bytes(method: str, target: str, headers: list[tuple[str, str]], body: bytes | None) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


# -- strategies ------------------------------------------------------------------------------------------

URL_TEXT = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="#"), max_size=40
)
ANY_TEXT = st.text(max_size=60)
PATHS = (
    st.sampled_from(ROUTES)
    | st.builds(lambda r, s: r.rstrip("/") + "/" + s, st.sampled_from(ROUTES), URL_TEXT)
    | st.builds(lambda s: "/" + quote(s, safe="/%"), ANY_TEXT)
    | URL_TEXT.map(lambda s: "/" + s)
)
PARAM_NAMES = (
    st.sampled_from(["lat", "lng", "locationId", "key", "api_key", "token", "email", "x"]) | URL_TEXT
)
PARAM_VALUES = st.sampled_from(
    ["51.2194", "4.4025", "loc_0_0", "NaN", "-inf", "1e309", "9" * 500, "", "%", "%zz", "%00", "x" * 3000]
) | ANY_TEXT.map(lambda s: quote(s, safe=""))
QUERIES = (
    st.lists(st.tuples(PARAM_NAMES, PARAM_VALUES), max_size=5).map(
        lambda pairs: "&".join(f"{n}={v}" for n, v in pairs)
    )
    | URL_TEXT
)
HEADER_VALUE = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=200).map(
    str.strip
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
BODIES = (
    st.none()
    | st.binary(max_size=600)
    | st.sampled_from(sorted(HOSTILE_BODIES.values()))
    | JSON_VALUES.map(lambda v: json.dumps(v).encode())
    | st.builds(
        lambda e: json.dumps({"email": e}).encode(), st.sampled_from(["a@stad.be", "x", ""]) | ANY_TEXT
    )
    | st.builds(lambda n: b'{"email":' + b"[" * n + b"]" * n + b"}", st.integers(30, 3000))
    | st.builds(lambda e, c: f"email={e}&csrf_token={c}".encode(), ANY_TEXT, URL_TEXT)
)
METHODS = st.sampled_from(["GET", "POST", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"]) | st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=10
)
CONTENT_TYPES = (
    st.sampled_from(
        [
            "application/json",
            "application/json; charset=utf-16",
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/json; charset=latin-1",
        ]
    )
    | HEADER_VALUE
)


def header_sets(keys):
    auth = (
        st.sampled_from(
            [
                f"Bearer {keys[0]}",
                f"Bearer {keys[1]}",
                "Bearer uc_live_wrong",
                "Basic Zm9vOmJhcg==",
                "Bearer",
                "",
            ]
        )
        | HEADER_VALUE
    )
    optional = {
        "Authorization": auth,
        "Content-Type": CONTENT_TYPES,
        "X-Request-Id": HEADER_VALUE,
        "If-None-Match": st.sampled_from(["*", '"abc"', 'W/"x"']) | HEADER_VALUE,
        "X-Forwarded-For": HEADER_VALUE,
        "X-Forwarded-Host": HEADER_VALUE,
        "Origin": HEADER_VALUE,
        "Cookie": st.sampled_from(["session=x", "session=" + "a" * 3000]) | HEADER_VALUE,
        "Accept": st.sampled_from(["text/html", "*/*", "application/json"]) | HEADER_VALUE,
        "Accept-Encoding": HEADER_VALUE,
        "Range": HEADER_VALUE,
        "Expect": st.sampled_from(["100-continue", "x"]),
        "X-" + "A" * 20: HEADER_VALUE,
    }
    return st.fixed_dictionaries({}, optional=optional).map(lambda d: list(d.items()))


def test_the_routes_cover_every_rule_of_the_app(tmp_path):
    """A new route joins ``ROUTES`` (variables filled in: ``1`` for an integer, ``x`` otherwise)."""
    from app import create_app

    app = create_app(
        {"TESTING": True, "SECRET_KEY": "x" * 32, "INSTANCE_PATH": str(tmp_path), "ENGINE": None}
    )
    fill = lambda rule: re.sub(r"<[^>]*>", lambda m: "1" if m.group(0).startswith("<int") else "x", rule)
    assert {fill(rule.rule) for rule in app.url_map.iter_rules()} <= set(ROUTES)


def check(status: int, headers: dict, body: bytes, method: str, target: str, keys) -> None:
    assert status < 500, (status, body[:300])
    if not target.startswith("/dashboard/"):  # the dashboard's answers carry them only where a limit governs
        for name in RATE:  # (tests/dashboard/test_limits.py); signed out, none does
            assert name.lower() in headers, (name, status, target)
    ctype = headers.get("content-type", "")
    text = body.decode("utf-8", "replace")
    if (
        status >= 300
    ):  # a framework's own page or error text (our documents may name gunicorn: the OpenAPI 414)
        assert "Werkzeug" not in text and "gunicorn" not in text.lower() and "Redirecting" not in text
    if "html" in ctype:
        path = target.split("?", 1)[0]
        assert path in HTML_PAGES or path.startswith(HTML_PAGES[2:]), (method, status, target, body[:200])
        assert method == "HEAD" or "Urban Conditions" in text  # ... and only our own pages
    elif body and method != "HEAD":
        assert ctype.startswith(NON_JSON), (ctype, target)
        if status >= 400:
            doc = json.loads(body)
            assert set(doc) in ({"error", "message"}, {"error", "message", "requestId"}), doc
    for key in keys:
        assert key[8:] not in text


def _doubled_slashes(path: str) -> list[str]:
    """``path`` with each of its slashes doubled in turn."""
    return [path[:i] + "/" + path[i:] for i, char in enumerate(path) if char == "/"]


def test_paths_with_an_empty_segment_are_404_json(hostile):
    """``//`` anywhere in the path of every route: the one JSON 404, never the page or a redirect of the
    merged path."""
    server, fx = hostile
    generated = [
        (target, ("GET", "POST", "OPTIONS")) for route in ROUTES for target in _doubled_slashes(route)
    ]
    explicit = [(target, ("GET", "HEAD", "POST", "OPTIONS", "DELETE", "PUT")) for target in EMPTY_SEGMENTS]
    for target, methods in explicit + generated:
        for method in methods:
            headers = [("Authorization", f"Bearer {fx.keys[0]}")]
            status, got, answer = exchange(server.port, request_bytes(method, target, headers, b""))
            assert status == 404, (method, target, status, answer[:200])
            assert got["content-type"] == "application/json" and "location" not in got, (method, target)
            if method != "HEAD":
                doc = json.loads(answer)
                assert doc["error"] == "not_found" and "empty segment" in doc["message"], doc
            check(status, got, answer, method, target, fx.keys[:2])


def test_generated_hostile_requests_to_every_route(hostile):
    """Done-when of issue 16: no 5xx, no framework HTML, never a missing X-RateLimit-* header. The examples
    are derived from the test (the same every run), the empty-segment paths among them."""
    server, fx = hostile
    keys = fx.keys[:2]

    @given(method=METHODS, path=PATHS, query=st.none() | QUERIES, headers=header_sets(keys), body=BODIES)
    @example(method="GET", path="//", query=None, headers=[], body=None)
    @example(method="POST", path="//portal/signin", query=None, headers=[], body=b"email=a%40stad.be")
    @example(method="GET", path="/api/v1//locations", query="lat=51.2&lng=4.4", headers=[], body=None)
    @example(method="OPTIONS", path="/%2F", query=None, headers=[("Origin", "https://x")], body=None)
    @settings(
        max_examples=250,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def run(method, path, query, headers, body):
        target = path + ("?" + query if query is not None else "")
        status, got, answer = exchange(server.port, request_bytes(method, target, headers, body))
        check(status, got, answer, method, target, keys)

    for path in ROUTES:  # every route at least once, whatever Hypothesis samples
        for method in ("GET", "POST", "OPTIONS"):
            status, got, answer = exchange(server.port, request_bytes(method, path, [], b""))
            check(status, got, answer, method, path, keys)
    run()
    log = server.log_path.read_text(errors="replace")
    assert "Traceback" not in log and "Error handling request" not in log


# -- finding 8: keys in every encoding, in every log path of the real server ----------------------------------


def into_every_log_path(port: int, target: str) -> None:
    """Requests for ``target`` that reach the access log and each of gunicorn's "Invalid request" lines."""
    exchange(port, request_bytes("GET", target, [], None))  # access log
    exchange(port, f"GET {target} HTTP/9.9\r\nHost: x\r\n\r\n".encode())  # "Invalid request"
    exchange(port, f"GET {target}\r\nHost: x\r\n\r\n".encode())  # ... naming the line
    exchange(port, f"GET {target} HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n".encode())
    exchange(port, f"GET {target}{'x' * 5000} HTTP/1.1\r\nHost: x\r\n\r\n".encode())  # 414


def logged_since(server, offset: int) -> str:
    """The server's log from ``offset`` on, once the access line of a request sent after all others is in it."""
    marker = f"m={uuid.uuid4()}"  # dashed groups: not token-like, so the access log keeps it
    exchange(server.port, request_bytes("GET", f"/healthz?{marker}", [], None))
    deadline = time.monotonic() + 15
    while True:
        with open(server.log_path, "rb") as handle:
            handle.seek(offset)
            logged = handle.read().decode("latin-1")
        if marker in logged:
            return logged
        assert time.monotonic() < deadline, "the marker request never reached the log"
        time.sleep(0.05)


def test_keys_in_every_encoding_stay_out_of_every_log(hostile):
    server, _fx = hostile
    before = server.log_path.stat().st_size
    forms = encodings(KEY)
    for form in forms:
        for target in (
            f"/api/v1/locations?key={form}",
            f"/api/v1/{form}",
            f"/portal/link/{form}",
            f"/healthz?x=1&api_key={form}&y=2",
        ):
            into_every_log_path(server.port, target)
    logged = logged_since(server, before)
    assert "Invalid HTTP request line: '[redacted]" not in logged  # the line is kept, only the key goes
    assert "Invalid HTTP request line: 'GET /api/v1/locations?key=[redacted]" in logged  # error-log path hit
    body = KEY[8:30]
    for needle in (
        body,
        body.lower(),
        body.upper(),
        "".join(f"%{ord(c):02X}" for c in body[:10]),
        "".join(f"%{ord(c):02x}" for c in body[:10]),
    ):
        assert needle not in logged, needle


# -- issue 31, class 5: secret tokens in paths and queries, in every encoding, in every log path -----------------


def test_secret_tokens_in_every_encoding_stay_out_of_every_log(hostile):
    server, _fx = hostile
    before = server.log_path.stat().st_size
    one_click = b"List-Unsubscribe=One-Click"
    form = [("Content-Type", "application/x-www-form-urlencoded")]
    for target in secret_url_cases():
        into_every_log_path(server.port, target)
        exchange(server.port, request_bytes("POST", target, form, one_click))  # one-click, access log
    logged = logged_since(server, before)
    assert '"path":"/dashboard/unsubscribe/[redacted]"' in logged  # the access log saw the requests
    assert (
        "Invalid HTTP request line: 'GET /dashboard/unsubscribe/[redacted]" in logged
    )  # ... the error log too
    assert not leaked(logged), [line for line in logged.splitlines() if leaked(line)][:5]


# -- finding 1 on the real server: one access line, no traceback ------------------------------------------------


@pytest.mark.parametrize("name", ["deep", "deep-objects", "nan", "duplicate-keys", "latin-1", "huge-integer"])
def test_hostile_signup_body_is_400_and_one_log_line(hostile, name):
    server, _fx = hostile
    before = server.log_path.stat().st_size
    status, headers, body = exchange(
        server.port,
        request_bytes("POST", "/api/v1/signup", [("Content-Type", "application/json")], HOSTILE_BODIES[name]),
    )
    assert status == 400 and json.loads(body)["error"] == "invalid_request"
    assert all(h.lower() in headers for h in RATE)
    with open(server.log_path, "rb") as handle:
        handle.seek(before)
        new = handle.read().decode("utf-8", "replace").splitlines()
    assert len(new) == 1 and json.loads(new[0])["status"] == 400, new


# -- finding 2 on the real server: production without PUBLIC_URL does not start -----------------------------


def test_production_gunicorn_refuses_to_start_without_public_url(snapshot_dir, tmp_path):
    import os

    from bench.deploy import free_port, run_until_exit

    env = {k: v for k, v in os.environ.items() if k != "URBAN_PUBLIC_URL"}
    env.update(
        URBAN_ENV="production",
        URBAN_SECRET_KEY="x" * 32,
        URBAN_INSTANCE_PATH=str(tmp_path / "i"),
        URBAN_DATA_DIR=str(snapshot_dir),
        PORT=str(free_port()),
    )
    out = run_until_exit(env)
    assert out.returncode != 0
    assert "refuses to start" in out.stderr and "PUBLIC_URL" in out.stderr, out.stderr[-2000:]
