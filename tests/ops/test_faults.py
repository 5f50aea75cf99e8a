"""Account store faults, in-process on a real SQLite file: a write lock held past ``busy_timeout`` and a
full disk give 503 ``service_unavailable`` in the one error shape, write nothing, and the next request
after the fault clears succeeds without a restart. A nested write rolls back as one unit."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

import pytest

from app.store.base import StoreIntegrityError, StoreUnavailable
from app.store import accounts, usage
from app.store.sqlite import connect
from app.web.db import get_db
from app.store.db import write

from .conftest import bearer

POINT = "lat=51.2194&lng=4.4025"


def today() -> str:
    return usage.day_of(datetime.now(UTC))


def assert_503(resp):
    assert resp.status_code == 503, resp.data
    body = json.loads(resp.data)
    assert set(body) == {"error", "message", "requestId"} and body["error"] == "service_unavailable"
    assert "X-RateLimit-Limit" in resp.headers and resp.headers["X-Content-Type-Options"] == "nosniff"
    return body


def test_locked_store_gives_503_then_recovers(make_app, tmp_path):
    app = make_app(DB_TIMEOUT=0.2)
    client = app.test_client()
    from app.store.db import open_store

    conn = open_store(app)
    row, key = accounts.create_account(conn, "lock@stad.gent.be", "developer")
    assert client.get(f"/api/v1/air-quality?{POINT}", headers=bearer(key)).status_code == 200
    holder = connect(app.config["DATABASE"])
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock past busy_timeout
    holder.execute("UPDATE accounts SET plan = plan")
    try:
        assert_503(client.get(f"/api/v1/air-quality?{POINT}", headers=bearer(key)))
        assert client.get("/healthz").status_code == 200
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert usage.used(conn, row["id"], today()) == 1  # the refused call wrote nothing
    resp = client.get(f"/api/v1/air-quality?{POINT}", headers=bearer(key))
    assert resp.status_code == 200 and resp.headers["X-RateLimit-Remaining"] == "98"
    assert usage.used(conn, row["id"], today()) == 2
    conn.close()


def test_full_disk_gives_503_nothing_half_written_then_recovers(make_app):
    """``PRAGMA max_page_count`` on the app's own connection makes its file unable to grow (SQLITE_FULL)."""
    app = make_app()
    client = app.test_client()
    from app.store.db import open_store

    conn = open_store(app)
    keys = [accounts.create_account(conn, f"full{i}@stad.gent.be", "api") for i in range(400)]
    with app.app_context():
        db = get_db()  # the process's persistent connection, used by the next requests
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")
    statuses = []
    for row, key in keys:  # each first call of the day inserts a usage row until no page is left
        resp = client.get("/api/v1/locations", headers=bearer(key))
        statuses.append(resp.status_code)
        if resp.status_code != 200:
            assert_503(resp)
            full_row, full_key = row, key
            break
    else:
        pytest.fail("the store never filled up")
    assert set(statuses[:-1]) == {200}
    day = today()
    assert usage.used(conn, full_row["id"], day) == 0  # nothing half-written
    assert sum(usage.used(conn, r["id"], day) for r, _k in keys) == len(statuses) - 1
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # space is freed: the failed connection was dropped, the next request opens a fresh one
    resp = client.get("/api/v1/locations", headers=bearer(full_key))
    assert resp.status_code == 200
    assert usage.used(conn, full_row["id"], day) == 1
    conn.close()


def test_nested_write_is_one_transaction(tmp_path):
    conn = connect(str(tmp_path / "n.sqlite"))
    conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    with pytest.raises(StoreIntegrityError):
        with write(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            with write(conn, durable=True):
                conn.execute("INSERT INTO t VALUES (2)")
            conn.execute("INSERT INTO t VALUES (1)")  # fails: the whole outer transaction rolls back
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
    with write(conn):
        with write(conn):
            conn.execute("INSERT INTO t VALUES (3)")
    assert not conn.in_transaction
    assert [r[0] for r in conn.execute("SELECT x FROM t")] == [3]


def test_link_confirmation_is_all_or_nothing(make_app):
    """A link whose account cannot be written stays usable (consume + create are one transaction)."""
    from app.store import tokens
    from app.portal import links
    from app.store.db import open_store

    app = make_app()
    conn = open_store(app)
    now = datetime(2026, 11, 16, 12, 0, tzinfo=UTC)
    token = tokens.issue(conn, "nieuw@stad.gent.be", int(now.timestamp()))
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # the file cannot grow any more
    with pytest.raises(StoreUnavailable, match="full"):
        for i in range(10_000):  # fill the account pages with addresses as long as the new one
            accounts.create_account(conn, f"f{i:04d}@stad.gent.be", "developer")
    assert not conn.in_transaction
    with app.test_request_context():
        with pytest.raises(StoreUnavailable, match="full"):
            links.confirm(conn, token, now=now)
    assert not conn.in_transaction
    assert accounts.find_account(conn, "nieuw@stad.gent.be") is None
    assert tokens.peek(conn, token, int(now.timestamp())) == "nieuw@stad.gent.be"  # still usable
    conn.execute("PRAGMA max_page_count = 1000000")
    with app.test_request_context():
        confirmation = links.confirm(conn, token, now=now)
    assert confirmation.created and confirmation.account["email"] == "nieuw@stad.gent.be"
    conn.close()
