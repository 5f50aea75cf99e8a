"""docs/operations.md's backup and restore of the PostgreSQL store, run as written against a real server:
``pg_dump --format=custom`` of a live store, ``pg_restore`` into a new database, and the app on the restored
database: keys authenticate, usage counts and revocations survive, no migration runs again."""

from __future__ import annotations

import subprocess
import uuid

from app.store import accounts, usage
from app.store.apikeys import digest
from app.store.db import migrate
from app.store.base import migrations
from app.store.postgres import connect
from app.store.plans import PLANS
from bench.services import postgres_bin


def test_pg_dump_and_pg_restore_round_trip(postgres_server, tmp_path):
    url = postgres_server.create_database("live_" + uuid.uuid4().hex[:8])
    conn = connect(url)
    migrate(conn)
    live, live_key = accounts.create_account(conn, "live@gent.be", "developer")
    gone, gone_key = accounts.create_account(conn, "gone@gent.be", "api")
    accounts.revoke_key(conn, gone["id"], accounts.list_keys(conn, gone["id"])[0]["id"])
    for _ in range(7):
        usage.admit_key(conn, digest(live_key), "2026-11-16")
    dump = tmp_path / "urban.dump"
    done = subprocess.run(
        [postgres_bin("pg_dump"), "--format=custom", "--no-owner", f"--file={dump}", url],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    listed = subprocess.run([postgres_bin("pg_restore"), "--list", str(dump)], capture_output=True, text=True)
    assert "TABLE DATA public accounts" in listed.stdout and "COLLATION public nocase" in listed.stdout
    conn.execute("UPDATE usage SET count = 0")  # the live store moves on (or is lost)
    conn.close()

    restored = postgres_server.create_database("restored_" + uuid.uuid4().hex[:8])
    done = subprocess.run(
        [postgres_bin("pg_restore"), "--no-owner", f"--dbname={restored}", str(dump)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    back = connect(restored)
    assert back.schema_version() == migrations()[-1][0] and migrate(back) == []
    assert accounts.authenticate(back, live_key)["email"] == "live@gent.be"
    assert accounts.authenticate(back, gone_key) is None
    assert usage.used(back, live["id"], "2026-11-16") == 7
    assert usage.admit_key(back, digest(live_key), "2026-11-16")["count"] == 8
    new, _key = accounts.create_account(back, "NEW@gent.be", "developer")  # identity sequences restored
    assert new["id"] > max(live["id"], gone["id"])
    assert accounts.find_account(back, "new@GENT.be")["id"] == new["id"]  # the nocase collation came along
    back.close()
