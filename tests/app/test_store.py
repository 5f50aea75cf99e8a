"""The account store on both backends — a real SQLite file and a real PostgreSQL server: migrations, digests
only, atomic quota statement, revocation, constraints. SQLite-only mechanics (WAL, busy waits) at the end."""

import json
import sqlite3
import threading
import time

import pytest

from app.store import accounts, apikeys, postgres as db_postgres, usage
from app.store.sqlite import connect
from app.store import db
from app.store.db import migrate
from app.store.base import StoreIntegrityError, StoreUnavailable, migrations
from app.store.saved_locations import add_location, list_locations, remove_location
from app.store.accounts import StoreError


@pytest.fixture
def make_app(make_app, store_backend):
    """Every app of this module on each backend in turn (``store_backend``)."""
    return lambda **overrides: make_app(**{**store_backend, **overrides})


@pytest.fixture
def connector(app):
    """``connector(timeout=5.0)``: a new, unmigrated connection to the app's store (any backend)."""
    return lambda timeout=5.0: db.connect(app.config, timeout)


def _tables(conn) -> set[str]:
    if isinstance(conn, db_postgres.PostgresStore):
        sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
    return {r[0] for r in conn.execute(sql)}


def test_migrations_apply_once_and_record_versions(connector):
    conn = connector()
    assert conn.schema_version() == 0
    applied = migrate(conn)
    assert applied == [name for _v, name, _sql in migrations()]
    assert migrate(conn) == []
    assert conn.schema_version() == migrations()[-1][0]
    if not isinstance(conn, db_postgres.PostgresStore):
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"accounts", "api_keys", "locations", "usage", "email_tokens", "schema_version"} <= _tables(conn)


def _migrate_together(open_connection, n: int) -> tuple[list, list]:
    """``n`` connections open the same fresh store and migrate it at the same moment."""
    errors, results = [], []
    start = threading.Barrier(n)

    def run():
        try:
            start.wait()
            results.append(migrate(open_connection()))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors, results


def test_concurrent_migrations_from_many_connections(connector):
    errors, results = _migrate_together(lambda: connector(timeout=30), 6)
    assert errors == []
    assert sum(1 for r in results if r) == 1  # exactly one connection applied them


def test_concurrent_sqlite_start_many_times(tmp_path):
    for run in range(25):  # several workers starting together on a fresh file, many times over
        path = str(tmp_path / f"s{run}.sqlite")
        errors, results = _migrate_together(lambda path=path: connect(path), 6)
        assert errors == []
        assert sum(1 for r in results if r) == 1  # exactly one connection applied them


def test_switch_to_wal_waits_for_a_writer_on_the_fresh_file(tmp_path):
    """The interleaving behind "database is locked" at start-up: one connection writes the fresh file
    (still in rollback-journal mode) when another switches it to WAL. SQLite refuses that switch at once,
    without its busy handler; the migration must wait for the writer, not fail (it failed every time)."""
    path = str(tmp_path / "s.sqlite")
    first = connect(path)
    first.execute("BEGIN IMMEDIATE")
    first.execute("CREATE TABLE early (x)")
    outcome = []
    second = threading.Thread(target=lambda: outcome.append(_try_migrate(path)))
    second.start()
    second.join(0.3)
    assert second.is_alive() and outcome == []  # waiting, not failed
    first.execute("COMMIT")
    second.join(10)
    assert outcome == [[name for _v, name, _sql in migrations()]]
    assert connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _try_migrate(path):
    try:
        return migrate(connect(path))
    except StoreUnavailable as exc:
        return repr(exc)


def test_switch_to_wal_gives_up_after_the_busy_timeout(tmp_path):
    path = str(tmp_path / "s.sqlite")
    first = connect(path)
    first.execute("BEGIN IMMEDIATE")
    first.execute("CREATE TABLE early (x)")
    with pytest.raises(StoreUnavailable, match="locked"):
        migrate(connect(path, timeout=0.2))
    first.execute("ROLLBACK")


def test_plaintext_key_never_in_database_file(app, store, account):
    _row, key = account("developer")
    key_id, key2 = accounts.create_key(store, _row["id"])
    if isinstance(store, db_postgres.PostgresStore):  # no file to read: the dump of every column must do
        dump = repr([tuple(r) for t in ("accounts", "api_keys") for r in store.execute(f"SELECT * FROM {t}")])
        assert key not in dump and key2 not in dump and key[14:] not in dump
    else:
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for suffix in ("", "-wal", "-shm"):
        try:
            data = open(app.config["DATABASE"] + suffix, "rb").read()
        except FileNotFoundError:
            continue
        for k in (key, key2):
            assert k.encode() not in data
            assert k[14:].encode() not in data  # not even the secret part
    digests = [r[0] for r in store.execute("SELECT digest FROM api_keys")]
    assert len(digests) == 2 and all(len(d) == 64 for d in digests)


def test_authenticate_rejects_revoked_and_unknown(store, account):
    row, key = account("api")
    assert accounts.authenticate(store, key)["id"] == row["id"]
    kid = store.execute("SELECT id FROM api_keys WHERE account_id = ?", (row["id"],)).fetchone()[0]
    accounts.revoke_key(store, row["id"], kid)
    assert accounts.authenticate(store, key) is None
    from app.store.apikeys import new_key

    assert accounts.authenticate(store, new_key()) is None


def test_duplicate_email_case_insensitive_writes_nothing(store, account):
    account("developer", email="ops@gent.be")
    with pytest.raises(StoreError):
        accounts.create_account(store, "OPS@gent.be", "api")
    assert store.execute("SELECT COUNT(*) FROM accounts").fetchone()[0] == 1
    assert store.execute("SELECT COUNT(*) FROM api_keys").fetchone()[0] == 1


def test_admit_is_exact_under_threads(store, account, connector):
    row, key = account("developer")
    admitted = []
    lock = threading.Lock()

    def worker():
        conn = connector(timeout=30)
        for i in range(25):
            got = usage.admit(conn, row["id"], "2026-11-16", 100)
            with lock:
                admitted.append(got)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = sorted(c for c in admitted if c is not None)
    assert counts == list(range(1, 101))
    assert admitted.count(None) == 50
    assert usage.used(store, row["id"], "2026-11-16") == 100


def test_admit_key_is_exact_under_threads_and_refunds(store, account, connector):
    """The one-statement admission of key + quota: 6 threads × 25 calls on a 100-a-day key."""
    from app.store.apikeys import digest
    from app.store.plans import PLANS

    row, key = account("developer")
    results = []
    lock = threading.Lock()

    def worker():
        conn = connector(timeout=30)
        for _ in range(25):
            got = usage.admit_key(conn, digest(key), "2026-11-17")
            with lock:
                results.append(None if got is None else (got["id"], got["key_id"], got["count"]))

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [r for r in results if r is not None]
    assert sorted(c for _a, _k, c in ok) == list(range(1, 101)) and results.count(None) == 50
    assert {(a, k) for a, k, _c in ok} == {(row["id"], accounts.list_keys(store, row["id"])[0]["id"])}
    usage.refund(store, row["id"], "2026-11-17")
    assert usage.used(store, row["id"], "2026-11-17") == 99
    assert usage.admit_key(store, digest(key), "2026-11-17")["count"] == 100


def test_unlimited_plan_counts_without_limit(store, account):
    row, _ = account("enterprise")
    for expected in range(1, 4):
        assert usage.admit(store, row["id"], "2026-11-16", None) == expected


def test_zero_quota_admits_nothing_and_writes_nothing(store, account):
    row, _ = account("dashboard")
    assert usage.admit(store, row["id"], "2026-11-16", 0) is None
    assert usage.used(store, row["id"], "2026-11-16") == 0


def test_locations_primary_is_unique_and_validation_writes_nothing(store, account):
    row, _ = account("pro")
    a = add_location(store, row["id"], name="A", address="x", lat=51.2, lng=4.4, is_primary=True)
    b = add_location(store, row["id"], name="B", address="y", lat=51.0, lng=3.7, is_primary=True)
    listed = list_locations(store, row["id"])
    assert [r["id"] for r in listed] == [b["id"], a["id"]]
    assert [bool(r["is_primary"]) for r in listed] == [True, False]
    for bad in ({"lat": float("nan"), "lng": 4.4}, {"lat": 91, "lng": 4.4}, {"lat": 51, "lng": "x"}):
        with pytest.raises(StoreError):
            add_location(store, row["id"], name="C", address="", **bad)
    with pytest.raises(StoreError):
        add_location(store, row["id"], name="  ", address="", lat=51, lng=4)
    with pytest.raises(StoreError):
        add_location(store, row["id"], name="D", address="", lat=51, lng=4, location_id="bad id!")
    assert len(list_locations(store, row["id"])) == 2
    remove_location(store, row["id"], a["id"])
    with pytest.raises(StoreError):
        remove_location(store, row["id"], a["id"])


def test_max_locations(store, account):
    row, _ = account("api")
    for i in range(3):
        add_location(store, row["id"], name=f"L{i}", address="", lat=51, lng=4, max_locations=3)
    with pytest.raises(StoreError, match="maximum of 3"):
        add_location(store, row["id"], name="L3", address="", lat=51, lng=4, max_locations=3)


def test_foreign_keys_enforced_with_the_stores_own_error_on_both_backends(store):
    """A broken constraint is the store's StoreIntegrityError on SQLite and on PostgreSQL (psycopg's
    error chained), never a backend's class dressed as another's."""
    with pytest.raises(StoreIntegrityError) as refused:
        store.execute(
            "INSERT INTO api_keys (account_id, digest, prefix, created_at) VALUES (999, 'd', 'p', '')"
        )
    assert not isinstance(refused.value, sqlite3.Error)
    backend = type(refused.value.__cause__).__module__.split(".")[0]
    assert backend == ("psycopg" if isinstance(store, db_postgres.PostgresStore) else "sqlite3")


def test_revocation_is_seen_by_every_other_connection_at_once(store, account, connector):
    row, key = account("developer")
    others = [connector() for _ in range(3)]
    assert all(accounts.authenticate(c, key)["id"] == row["id"] for c in others)
    accounts.revoke_key(store, row["id"], accounts.list_keys(store, row["id"])[0]["id"])
    assert [accounts.authenticate(c, key) for c in others] == [None, None, None]
    again = accounts.revoke_key(store, row["id"], accounts.list_keys(store, row["id"])[0]["id"])  # idempotent
    assert again["revoked_at"] == accounts.list_keys(store, row["id"])[0]["revoked_at"]


def test_concurrent_sign_ups_for_one_address_create_one_account(store, connector):
    """Check-then-insert inside ``write``: SQLite's write lock / PostgreSQL's advisory lock serialise it, so
    every loser gets the StoreError, never an IntegrityError."""
    outcomes = []

    def sign_up(i):
        conn = connector(timeout=30)
        try:
            accounts.create_account(
                conn, ("RACE@gent.be", "race@gent.be", "Race@Gent.be")[i % 3], "developer"
            )
            outcomes.append("created")
        except StoreError:
            outcomes.append("exists")

    threads = [threading.Thread(target=sign_up, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["created"] + ["exists"] * 5
    assert store.execute("SELECT COUNT(*) FROM accounts").fetchone()[0] == 1


def test_store_that_cannot_be_reached_is_503_and_healthz_says_so(make_app, app):
    from bench.deploy import free_port
    from platform_helpers import assert_error

    if app.config.get("DATABASE_URL"):
        down = make_app(DATABASE_URL=f"postgresql://postgres@127.0.0.1:{free_port()}/urban", DB_TIMEOUT=1.0)
    else:
        down = make_app(DATABASE="/nonexistent-dir/urban.sqlite")
    client = down.test_client()
    from app.store.apikeys import new_key

    assert_error(
        client.get("/api/v1/locations", headers={"Authorization": f"Bearer {new_key()}"}),
        503,
        "service_unavailable",
    )
    assert_error(client.get("/healthz"), 503, "service_unavailable")


def test_postgres_dialect_refuses_sqlite_idioms_it_does_not_map():
    for sql in (
        "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT);",
        "PRAGMA foreign_keys = ON;",
        "CREATE TABLE t (x TEXT) STRICT;",
        "CREATE INDEX i ON t(strftime('%s', x));",
    ):
        with pytest.raises(ValueError, match="does not translate"):
            db_postgres.translate_ddl(sql)
    for _version, _name, sql in migrations():  # every shipped migration translates
        assert "NOCASE" not in db_postgres.translate_ddl(sql)


def test_sqlite_limits_storage_fixed_window(tmp_path, monkeypatch):
    from app.web import ratelimit_storage as limits_sqlite
    from limits.storage import storage_from_string

    storage = storage_from_string(f"urban-sqlite:///{tmp_path}/rl.sqlite")
    assert isinstance(storage, limits_sqlite.SQLiteStorage) and storage.check()
    now = [1000.0]
    monkeypatch.setattr(limits_sqlite.time, "time", lambda: now[0])
    assert [storage.incr("k", 60) for _ in range(3)] == [1, 2, 3]
    assert storage.get("k") == 3 and storage.get_expiry("k") == 1060.0
    now[0] = 1060.0  # window over: the counter starts again
    assert storage.get("k") == 0
    assert storage.incr("k", 60) == 1 and storage.get_expiry("k") == 1120.0
    other = storage_from_string(f"urban-sqlite:///{tmp_path}/rl.sqlite")  # another worker, same file
    assert other.incr("k", 60) == 2
    storage.clear("k")
    assert other.get("k") == 0


def _locked_for(path: str, seconds: float) -> threading.Timer:
    """Another connection takes the write lock of ``path`` now and releases it after ``seconds``."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(seconds, lambda: (holder.execute("COMMIT"), holder.close()))
    release.start()
    return release


@pytest.mark.parametrize(
    "write",
    [
        lambda conn: conn.execute_write("INSERT INTO t VALUES (7) RETURNING x")[0],
        lambda conn: conn.execute("INSERT INTO t VALUES (7) RETURNING x").fetchone()[0],
        lambda conn: _in_transaction(conn, "INSERT INTO t VALUES (7) RETURNING x"),
    ],
    ids=["execute_write", "execute", "transaction"],
)
def test_a_statement_waits_out_a_short_lock(tmp_path, write):
    """Every way of writing outside a transaction waits for another connection's write lock (the
    connection's own retries, SQLite's busy handler being off), within the connection's timeout."""
    path = str(tmp_path / "w.sqlite")
    setup = connect(path)
    setup.execute("PRAGMA journal_mode = WAL")
    setup.execute("CREATE TABLE t (x)")
    writer = connect(path, timeout=5)
    release = _locked_for(path, 0.05)
    try:
        assert write(writer) == 7
    finally:
        release.join()
    assert [r[0] for r in setup.execute("SELECT x FROM t")] == [7]


def _in_transaction(conn, sql: str):
    with conn.transaction():
        return conn.execute(sql).fetchone()[0]


@pytest.mark.parametrize(
    "write",
    [
        lambda conn: conn.execute_write("INSERT INTO t VALUES (1) RETURNING x"),
        lambda conn: conn.execute("INSERT INTO t VALUES (1)"),
        lambda conn: _in_transaction(conn, "INSERT INTO t VALUES (1) RETURNING x"),
    ],
    ids=["execute_write", "execute", "transaction"],
)
def test_a_statement_gives_up_after_the_busy_timeout_and_writes_nothing(tmp_path, write):
    path = str(tmp_path / "w.sqlite")
    holder = connect(path)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("CREATE TABLE t (x)")
    writer = connect(path, timeout=0.1)
    holder.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    try:
        with pytest.raises(StoreUnavailable, match="locked"):
            write(writer)
        assert time.monotonic() - started >= 0.1  # it waited its timeout first
    finally:
        holder.execute("COMMIT")
    assert holder.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
    assert not writer.in_transaction


def test_an_admission_is_one_statement(tmp_path):
    """Authentication and the quota's count are the one statement the store runs for an admitted call, by
    point and by saved location: no ``PRAGMA`` around it."""
    conn = connect(str(tmp_path / "a.sqlite"))
    migrate(conn)
    row, key = accounts.create_account(conn, "one@stad.gent.be", "developer")
    add_location(conn, row["id"], name="Werf", address="", lat=51.2194, lng=4.4025, location_id="loc_a")
    ran: list[str] = []
    conn.trace(ran.append)
    try:
        assert usage.admit_key(conn, apikeys.digest(key), "2026-11-28")["count"] == 1
        at = usage.admit_key(conn, apikeys.digest(key), "2026-11-28", "loc_a")
    finally:
        conn.trace(None)
    assert at["count"] == 2 and at["location_name"] == "Werf"
    assert len(ran) == 2 and all(sql.lstrip().startswith("INSERT INTO usage") for sql in ran), ran


def test_change_alerts_on_either_backend(store, account):
    """A change alert is one row per location, with an id the store made; saving again keeps the row; its
    unsubscribe token removes it (no webhook) (both backends)."""
    from app.dashboard import changealerts

    row, _ = account("pro")
    loc = add_location(store, row["id"], name="Centrum", address="", lat=51.2194, lng=4.4025)
    sub = changealerts.save(store, row["id"], loc, types=["work.started"], email=True, webhook_url="", head=7)
    again = changealerts.save(
        store, row["id"], loc, types=["no2.above_eu", "work.started"], email=True, webhook_url="", head=0
    )
    assert again["id"] == sub["id"] and again["after_pos"] == 7  # the feed position stays
    assert json.loads(again["types"]) == ["work.started", "no2.above_eu"]  # the feed's order
    assert changealerts.by_token(store, sub["unsubscribe_token"])["location_name"] == "Centrum"
    assert changealerts.unsubscribe(store, sub["unsubscribe_token"])
    assert changealerts.for_location(store, row["id"], loc["id"]) is None


def test_sqlite_limits_storage_window_stats_of_a_key_without_window_make_one_statement(tmp_path, monkeypatch):
    """A window's stats (``get`` then ``get_expiry``, as ``limits`` asks them) of a client with no window —
    every response reports the failed-authentication budget — read the counters once."""
    from app.web import ratelimit_storage as limits_sqlite
    from limits.storage import storage_from_string

    storage = storage_from_string(f"urban-sqlite:///{tmp_path}/rl.sqlite")
    now = [1000.0]
    monkeypatch.setattr(limits_sqlite.time, "time", lambda: now[0])
    statements = []
    storage._conn().set_trace_callback(statements.append)
    assert storage.get("absent") == 0
    now[0] = 1000.5
    assert storage.get_expiry("absent") == 1000.5  # "now", what the statement answers for no row
    assert len(statements) == 1
    assert storage.get_expiry("absent") == 1000.5  # a second ask without get() reads again
    assert len(statements) == 2
