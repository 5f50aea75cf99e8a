"""Every data command × both output modes × every error case, with `urban` run as a subprocess against the
real app on 127.0.0.1 (docs/cli.md, "Errors and exit codes").

Cases: no key, bad key, quota exhausted, outside the service area (not for `locations`, which takes no
point), upstream failure (a real 502 from the app's freshness check on a snapshot whose live layers are
stale; not for `locations`, which reads no layer) and server down. Each run must give the documented exit
code; on stderr the API's code and message and a hint, never a traceback or the key; on stdout nothing in
summary mode and, with --json, the API's error body byte-for-byte (nothing for a network failure).
"""

from __future__ import annotations

import json
import re
import shutil
from types import SimpleNamespace

import pytest

from .conftest import free_port, serve_app

pytestmark = pytest.mark.slow  # 44 short subprocesses

COMMANDS = ("locations", "disruptions", "air-quality", "briefing")
ANTWERP = {"lat": "51.2194", "lng": "4.4025"}  # Meir: inside the service area
PARIS = {"lat": "48.8566", "lng": "2.3522"}  # outside it
BAD_KEY = "uk_not_a_key_of_this_service_0000000000000"
STALE = "2020-01-01T00:00:00.000Z"  # far older than any freshness limit

# case -> (exit code, error code, HTTP status, a phrase of the hint line)
CASES = {
    "no_key": (3, "missing_key", 401, "URBAN_API_KEY"),
    "bad_key": (3, "invalid_key", 401, "unknown or revoked"),
    "quota_exhausted": (4, "quota_exceeded", 429, "(00:00 UTC, in "),
    "outside_service_area": (6, "outside_service_area", 422, "Flanders and Brussels"),
    "upstream_stale": (7, "upstream_error", 502, "retry shortly"),
    "server_down": (8, None, None, "The base URL comes from the environment variable URBAN_BASE_URL."),
}
NEEDS_A_POINT = ("outside_service_area", "upstream_stale")
MATRIX = [
    (case, command, mode)
    for case in CASES
    for command in COMMANDS
    for mode in ("summary", "json")
    if not (command == "locations" and case in NEEDS_A_POINT)
]


@pytest.fixture(scope="module")
def stale_server(snapshot_dir, tmp_path_factory):
    """The real app on a copy of the demo snapshot whose dynamic layers are marked ``live`` and were last
    retrieved in 2020: the freshness check answers every data endpoint with 502 upstream_error."""
    root = tmp_path_factory.mktemp("stale")
    data_dir = root / "snapshot"
    shutil.copytree(snapshot_dir, data_dir)
    manifest_path = data_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for layer in ("works", "detours", "no2"):  # one stale layer for each data endpoint at least
        manifest["layers"][layer].update(kind="live", retrievedAt=STALE)
    manifest_path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    with serve_app(data_dir, root / "instance") as server:
        yield server


@pytest.fixture(scope="module")
def world(api_server, stale_server):
    """Base URL, key and point of each case; accounts are made once per module."""
    good = api_server.create_account("api")
    exhausted = api_server.create_account("developer")
    api_server.exhaust_quota(exhausted)
    assert api_server.get("locations", exhausted.key).status_code == 429
    stale = stale_server.create_account("api")
    return {
        "no_key": SimpleNamespace(server=api_server, key=None, point=ANTWERP),
        "bad_key": SimpleNamespace(server=api_server, key=BAD_KEY, point=ANTWERP),
        "quota_exhausted": SimpleNamespace(server=api_server, key=exhausted.key, point=ANTWERP),
        "outside_service_area": SimpleNamespace(server=api_server, key=good.key, point=PARIS),
        "upstream_stale": SimpleNamespace(server=stale_server, key=stale.key, point=ANTWERP),
        "server_down": SimpleNamespace(
            server=None, key=good.key, point=ANTWERP, base_url=f"http://127.0.0.1:{free_port()}/api/v1"
        ),
    }


def without_request_id(body: bytes) -> bytes:
    """5xx bodies carry a per-request ``requestId``; everything else must match byte-for-byte."""
    return re.sub(rb'"requestId":\s*"[^"]*"', b'"requestId":"*"', body)


def without_numbers(text: str) -> str:
    """The stale message states the data's age, which grows between two calls."""
    return re.sub(r"\d+(\.\d+)?", "N", text)


@pytest.mark.parametrize("case, command, mode", MATRIX)
def test_error_case(world, run_urban, case, command, mode):
    exit_code, code, status, hint = CASES[case]
    setup = world[case]
    base = setup.base_url if setup.server is None else setup.server.base_url
    params = {} if command == "locations" else setup.point
    args = [command] + [f"--{name}={value}" for name, value in params.items()]
    env = {"URBAN_BASE_URL": base, "URBAN_API_KEY": setup.key}
    proc = run_urban(*args, *(["--json"] if mode == "json" else []), env=env)
    err = proc.stderr.decode()

    assert proc.returncode == exit_code, err
    assert "Traceback" not in err and b"Traceback" not in proc.stdout
    for key in filter(None, (setup.key, BAD_KEY)):
        assert key.encode() not in proc.stdout + proc.stderr
    lines = err.splitlines()
    assert len(lines) == 2 and hint in lines[1], err

    if case == "server_down":
        port = base.split(":")[2].split("/")[0]
        assert lines[0] == (
            f"Error: network: nothing is listening on 127.0.0.1:{port} (connection refused "
            f"by {base}): check that the API server is running and the host and port of "
            "the base URL."
        )
        assert proc.stdout == b""
        return

    rest = setup.server.get(command, setup.key, **params)  # the same call made directly
    assert rest.status_code == status
    message = rest.json()["message"]
    expected = f"Error: {code}: {message} (HTTP {status})"
    if case == "upstream_stale":
        assert "data too old to serve" in message
        assert without_numbers(lines[0]) == without_numbers(expected)
    else:
        assert lines[0] == expected
    if mode == "summary":
        assert proc.stdout == b""
    else:
        assert without_request_id(proc.stdout) == without_request_id(rest.content)
        body = json.loads(proc.stdout)
        assert lines[0] == f"Error: {body['error']}: {body['message']} (HTTP {status})"
        if status >= 500:
            assert body["requestId"]
