"""Real gunicorn (4 workers) on 127.0.0.1: exact quotas under concurrency, revocation in every worker,
the per-IP limit across workers, and no plaintext key in the database files or the logs.

Requests come from distinct loopback source addresses (127.0.0.2, .3, …) so each phase has its own
per-IP budget.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.store import accounts, usage
from app.store.sqlite import connect
from app.store.db import migrate

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port, path, key=None, source="127.0.0.2"):
    """One GET over a fresh connection from ``source``: (status, headers, body dict)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {key}"} if key else {})
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, dict(resp.getheaders()), json.loads(body) if body else None
    finally:
        conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    instance = tmp_path_factory.mktemp("gunicorn-instance")
    db = connect(str(instance / "urban.sqlite"))
    migrate(db)
    log_path = instance / "server.log"
    port = free_port()
    env = dict(
        os.environ,
        URBAN_INSTANCE_PATH=str(instance),
        URBAN_ENV="development",
        URBAN_LOAD_ENGINE="0",
        URBAN_AUTH_FAILURE_LIMIT="50 per hour",
        GUNICORN_LOGLEVEL="debug",
    )
    env.pop("URBAN_SECRET_KEY", None)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.serve", "--port", str(port), "--workers", "4"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if call(port, "/api/v1/openapi.json", source="127.0.0.9")[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not start:\n" + log_path.read_text())
            time.sleep(0.1)
        yield {"port": port, "db": db, "instance": instance, "log": log_path, "proc": proc}
    finally:
        proc.send_signal(signal.SIGINT)  # quick shutdown
        proc.wait(timeout=30)
        db.close()


def test_150_concurrent_calls_on_a_100_per_day_key(server):
    row, key = accounts.create_account(server["db"], "quota@gent.be", "developer")
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: call(server["port"], "/api/v1/locations", key), range(150)))
    statuses = Counter(status for status, _h, _b in results)
    assert statuses == {200: 100, 429: 50}
    assert all(b["error"] == "quota_exceeded" for s, _h, b in results if s == 429)
    remaining = sorted(int(h["X-RateLimit-Remaining"]) for s, h, _b in results if s == 200)
    assert remaining == list(range(100))  # every admission saw a distinct count
    day = time.strftime("%Y-%m-%d", time.gmtime())
    assert usage.used(server["db"], row["id"], day) == 100
    served_by = _pids_for(server, 200)
    assert len(served_by) >= 2, "the calls were not spread over several workers"


def _wait_for_access_lines(server, status, count, since=0, timeout=30):
    """Wait until the log holds ``count`` whole access lines of ``status`` after line ``since`` (a worker
    writes its line after the response has gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        whole = server["log"].read_text().split("\n")[since:-1]  # the last piece may be half written
        if sum(line.startswith("{") and json.loads(line)["status"] == status for line in whole) >= count:
            return
        time.sleep(0.02)


def _pids_for(server, status, since=0):
    pids = set()
    for line in server["log"].read_text().splitlines()[since:]:
        if line.startswith("{"):
            entry = json.loads(line)
            if entry["status"] == status:
                pids.add(entry["pid"])
    return pids


def test_revoked_key_is_refused_by_every_worker(server):
    row, key = accounts.create_account(server["db"], "revoke@gent.be", "api")
    with ThreadPoolExecutor(max_workers=8) as pool:
        before = list(pool.map(lambda _: call(server["port"], "/api/v1/locations", key)[0], range(24)))
    assert set(before) == {200}
    accounts.revoke_key(server["db"], row["id"], accounts.list_keys(server["db"], row["id"])[0]["id"])
    mark = len(server["log"].read_text().splitlines())
    with ThreadPoolExecutor(max_workers=8) as pool:
        after = list(pool.map(lambda _: call(server["port"], "/api/v1/locations", key), range(40)))
    assert Counter(s for s, _h, _b in after) == {401: 40}
    assert {b["error"] for _s, _h, b in after} == {"invalid_key"}
    _wait_for_access_lines(server, 401, 40, since=mark)
    assert len(_pids_for(server, 401, since=mark)) >= 2


def test_per_ip_limit_holds_across_workers(server):
    source = "127.0.0.3"
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: call(server["port"], "/api/v1/locations", None, source), range(70)))
    codes = Counter(b["error"] for _s, _h, b in results)
    assert codes == {"missing_key": 50, "rate_limited": 20}
    assert all(h["X-RateLimit-Limit"] == "50" for _s, h, _b in results)
    assert all(int(h["Retry-After"]) > 0 for s, h, _b in results if s == 429)
    # another address has its own budget
    status, headers, body = call(server["port"], "/api/v1/locations", None, "127.0.0.4")
    assert (status, body["error"], headers["X-RateLimit-Remaining"]) == (401, "missing_key", "49")


def test_no_plaintext_key_in_database_files_or_logs(server):
    _row, key = accounts.create_account(server["db"], "secret@gent.be", "pro")
    mark = len(server["log"].read_text().splitlines())
    assert call(server["port"], "/api/v1/locations", key)[0] == 200
    assert call(server["port"], "/api/v1/locations", key + "x")[0] == 401
    _wait_for_access_lines(server, 200, 1, since=mark)  # both calls' lines are in the log to be searched
    _wait_for_access_lines(server, 401, 1, since=mark)
    server["db"].execute("PRAGMA wal_checkpoint(TRUNCATE)")
    files = [p for p in server["instance"].iterdir() if p.is_file()]
    assert any(p.name == "urban.sqlite" for p in files)
    secret = key[len("uc_live_") :].encode()
    for path in files:
        assert secret not in path.read_bytes(), path
    assert "/api/v1/locations" in server["log"].read_text()  # the log did capture the requests


def test_the_gunicorn_behaviour_the_server_header_relies_on():
    """``gunicorn.conf.py`` sets ``gunicorn.http.wsgi.SERVER`` (gunicorn has no setting for its ``Server``
    header, and the header it writes cannot be replaced by the app's): each response object takes its
    ``Server`` value from that module name when it is made. Pinned here without a server, so a gunicorn
    that stops reading it fails this test, not only the deployment tests' ``Server: urban``."""
    import runpy
    from types import SimpleNamespace

    import gunicorn.http.wsgi

    before = gunicorn.http.wsgi.SERVER
    try:
        runpy.run_path(str(ROOT / "gunicorn.conf.py"))
        assert gunicorn.http.wsgi.SERVER == "urban"
        req = SimpleNamespace(version=(1, 1), should_close=lambda: True)
        response = gunicorn.http.wsgi.Response(req, None, SimpleNamespace())
        response.status = "200 OK"
        assert "Server: urban\r\n" in response.default_headers()
    finally:
        gunicorn.http.wsgi.SERVER = before
