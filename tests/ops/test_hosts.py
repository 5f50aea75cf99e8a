"""Two app hosts behind one nginx, sharing a real PostgreSQL account store and a real Redis: two gunicorns
(separate ports and instance folders, one data directory), Debian's nginx running deploy/nginx.conf."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import psycopg
import pytest

from app.store import accounts
from app.store.postgres import connect as pg_connect
from app.sources import store as snapshots
from bench.deploy import Gunicorn, get, prepare
from bench.services import Nginx


@pytest.fixture(scope="module")
def hosts(snapshot_dir, postgres_server, redis_server, tmp_path_factory):
    """(fixture data, [host1, host2], nginx, database URL, data dir)."""
    tmp = tmp_path_factory.mktemp("two-hosts")
    data_dir = tmp / "snapshot"
    shutil.copytree(snapshot_dir, data_dir)
    url = postgres_server.create_database("hosts_" + uuid.uuid4().hex[:8])
    fx = prepare(tmp / "seed", data_dir, accounts=2, locations_per_account=1, points=5, database_url=url)
    env = {
        "URBAN_DATABASE_URL": url,
        "URBAN_REDIS_URL": redis_server.url,
        "URBAN_TRUSTED_PROXIES": "1",
        "URBAN_AUTH_FAILURE_LIMIT": "6 per hour",
        "URBAN_RELOAD_INTERVAL": "0.2",
    }
    apps = [
        Gunicorn(tmp / f"host{i}", workers=2, data_dir=data_dir, env=env, log=tmp / f"host{i}.log")
        for i in (1, 2)
    ]
    for app in apps:
        app.instance.mkdir()
    try:
        for app in apps:
            app.start()
        with Nginx([a.port for a in apps]) as nginx:
            yield fx, apps, nginx, url, data_dir
    finally:
        for app in apps:
            app.stop()


def _bearer(key):
    return {"Authorization": f"Bearer {key}"}


def _new_key(url, plan="developer"):
    conn = pg_connect(url)
    try:
        return accounts.create_account(conn, f"h{uuid.uuid4().hex[:10]}@gent.be", plan)
    finally:
        conn.close()


def _served_by(app, since: int) -> int:
    return sum(1 for e in app.log_lines()[since:] if str(e.get("path", "")).startswith("/api/v1/"))


def test_150_concurrent_calls_on_a_100_a_day_key_admit_exactly_100(hosts):
    _fx, apps, nginx, url, _data = hosts
    row, key = _new_key(url)
    marks = [len(a.log_lines()) for a in apps]
    with ThreadPoolExecutor(max_workers=30) as pool:
        statuses = list(
            pool.map(lambda _i: get(nginx.port, "/api/v1/locations", _bearer(key), timeout=30)[0], range(150))
        )
    assert sorted(statuses) == [200] * 100 + [429] * 50
    assert all(_served_by(a, m) > 0 for a, m in zip(apps, marks))  # both hosts took calls
    with psycopg.connect(url) as conn:
        day = datetime.now(UTC).strftime("%Y-%m-%d")
        assert (
            conn.execute(
                "SELECT count FROM usage WHERE account_id = %s AND day = %s", (row["id"], day)
            ).fetchone()[0]
            == 100
        )


def test_a_key_revoked_through_one_host_is_refused_by_the_other_on_the_next_request(hosts):
    _fx, (host1, host2), _nginx, url, _data = hosts
    row, key = _new_key(url, "api")
    assert get(host1.port, "/api/v1/locations", _bearer(key))[0] == 200
    assert get(host2.port, "/api/v1/locations", _bearer(key))[0] == 200
    conn = pg_connect(url)
    key_id = accounts.list_keys(conn, row["id"])[0]["id"]
    conn.close()
    # the admin command (`flask --app wsgi keys revoke`'s group) with host 1's settings, in this process
    from click.testing import CliRunner
    from flask.cli import ScriptInfo

    from app.admin import admin, commands_app

    revoked = CliRunner().invoke(
        admin,
        ["keys", "revoke", "--email", row["email"], "--id", str(key_id)],
        env={**host1.env, "URBAN_LOAD_ENGINE": "0"},
        obj=ScriptInfo(create_app=commands_app),
    )
    assert revoked.exit_code == 0, revoked.output
    status, _h, body = get(host2.port, "/api/v1/locations", _bearer(key))
    assert status == 401 and json.loads(body)["error"] == "invalid_key"


def test_the_failed_authentication_budget_per_ip_is_shared(hosts):
    _fx, (host1, host2), _nginx, _url, _data = hosts
    client = {"X-Forwarded-For": "203.0.113.77"}  # as nginx sends it: the app trusts one hop
    seen = []
    for host in (host1, host2, host1, host2, host1, host2):
        status, headers, _b = get(host.port, "/api/v1/locations", client)
        seen.append((status, headers["X-RateLimit-Remaining"]))
    assert seen == [(401, str(n)) for n in (5, 4, 3, 2, 1, 0)]
    for host in (host1, host2):
        status, headers, body = get(host.port, "/api/v1/locations", client)
        assert (
            status == 429 and json.loads(body)["error"] == "rate_limited" and int(headers["Retry-After"]) > 0
        )
    assert (
        get(host2.port, "/api/v1/locations", {"X-Forwarded-For": "198.51.100.8"})[0] == 401
    )  # others unaffected


def test_a_snapshot_swap_reaches_both_hosts(hosts):
    _fx, apps, _nginx, _url, data_dir = hosts
    before = {json.loads(get(a.port, "/healthz")[2])["snapshot"]["asOf"] for a in apps}
    assert len(before) == 1
    version = snapshots.versions_dir(data_dir) / "swapped"
    shutil.copytree(data_dir.resolve(), version)
    manifest = json.loads((version / "manifest.json").read_text())
    manifest["asOf"] = "2026-11-16T09:30:00.000Z"
    (version / "manifest.json").write_text(json.dumps(manifest))
    snapshots.switch(data_dir, version)
    import time

    deadline = time.monotonic() + 30
    seen = set()
    while time.monotonic() < deadline:
        seen = {json.loads(get(a.port, "/healthz")[2])["snapshot"]["asOf"] for a in apps for _ in range(4)}
        if seen == {"2026-11-16T09:30:00Z"}:
            break
        time.sleep(0.2)
    assert seen == {"2026-11-16T09:30:00Z"}, seen
