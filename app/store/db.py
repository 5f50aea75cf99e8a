"""The account store: one SQLite file under the instance folder, versioned migrations, WAL.

A connection is opened lazily on first use in each process and thread (so never at import and never in the
gunicorn master), kept for the following requests, and closed after a store error. Writes use ``BEGIN IMMEDIATE`` through :func:`write`; account and key
changes pass ``durable=True`` (``synchronous=FULL``), usage counts rely on WAL with ``synchronous=NORMAL``,
which loses nothing when a worker is killed.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from typing import TypeAlias, cast

from flask import current_app, g

from . import postgres as db_postgres


#: a connection of either account store (the PostgreSQL one speaks the SQLite interface the store uses)
Store: TypeAlias = "sqlite3.Connection | db_postgres.PgConnection"


class StoreConnection(sqlite3.Connection):
    """A store connection that remembers its busy timeout (for :func:`execute_write`)."""

    busy_timeout_ms: int | None = None


def _busy(exc: sqlite3.OperationalError) -> bool:
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY


def execute_write(conn: sqlite3.Connection, sql: str, params=()):
    """Run one autocommit write statement and return its first row, waiting out a busy store in short
    pauses.

    SQLite's own busy handler sleeps at least 1 ms before its first retry. Admitting a call holds the
    write lock for ~40 µs, so two workers collide on a few percent of calls under load; here a busy
    statement is retried after 20 µs, doubling up to 1 ms, until the connection's busy timeout has
    passed, and then the "database is locked" error propagates (503). Inside an open transaction, or on
    a connection not made by :func:`connect`, it is a plain ``execute``.

    Examples
    --------
    >>> conn = connect(":memory:")
    >>> _ = conn.execute("CREATE TABLE t (x)")
    >>> execute_write(conn, "INSERT INTO t VALUES (1) RETURNING x")[0]
    1
    """
    limit = getattr(conn, "busy_timeout_ms", None)
    if not limit or conn.in_transaction:
        return conn.execute(sql, params).fetchone()
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        deadline, pause = None, 20e-6
        while True:
            try:
                return conn.execute(sql, params).fetchone()
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
                now = time.monotonic()
                deadline = now + limit / 1000 if deadline is None else deadline
                if now >= deadline:
                    raise
                time.sleep(min(pause, deadline - now))
                pause = min(pause * 2, 1e-3)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {limit}")


def connect(path: str, timeout: float = 5.0) -> sqlite3.Connection:
    """Open the store with our pragmas (autocommit mode: transactions are explicit).

    Examples
    --------
    >>> conn = connect(":memory:")
    >>> conn.execute("PRAGMA foreign_keys").fetchone()[0]
    1
    """
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, factory=StoreConnection)
    conn.row_factory = sqlite3.Row
    conn.busy_timeout_ms = int(timeout * 1000)
    conn.execute(f"PRAGMA busy_timeout = {conn.busy_timeout_ms}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


@contextmanager
def write(conn: Store, *, durable: bool = False) -> Iterator[Store]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on any exception); nestable.

    Inside an open transaction it becomes ``SAVEPOINT`` … ``RELEASE`` (an exception rolls back to the
    savepoint and propagates), so library functions that write can be composed into one transaction.
    ``durable=True`` commits with ``synchronous=FULL`` (accounts, keys, locations); on a nested write the
    outermost one decides.

    Examples
    --------
    >>> conn = connect(":memory:")
    >>> _ = conn.execute("CREATE TABLE t (x)")
    >>> with write(conn):
    ...     _ = conn.execute("INSERT INTO t VALUES (1)")
    ...     try:
    ...         with write(conn):
    ...             _ = conn.execute("INSERT INTO t VALUES (2)")
    ...             raise KeyError
    ...     except KeyError:
    ...         pass
    >>> [r[0] for r in conn.execute("SELECT x FROM t")]
    [1]
    """
    if isinstance(conn, db_postgres.PgConnection):  # the PostgreSQL store (app/store/postgres.py)
        with conn.transaction(durable=durable):
            yield conn
        return
    if conn.in_transaction:
        name = f"w{id(object()):x}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:  # SQLite may already have rolled back everything (e.g. disk full)
                try:
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                except sqlite3.OperationalError:
                    pass  # the savepoint is gone with the transaction: report the original error
            raise
        conn.execute(f"RELEASE {name}")
        return
    if durable:
        conn.execute("PRAGMA synchronous = FULL")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # e.g. disk full at commit: leave no open transaction behind
                conn.execute("ROLLBACK")
            raise
    finally:
        if durable:
            conn.execute("PRAGMA synchronous = NORMAL")


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every ``app/store/migrations/NNN_name.sql``, in order."""
    out = []
    for entry in resources.files("app.store.migrations").iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:3].isdigit():
            out.append((int(name[:3]), name, entry.read_text(encoding="utf-8")))
    return sorted(out)


def _statements(sql: str):
    buf = ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                yield buf
            buf = ""
    if buf.strip() and not all(l.strip().startswith("--") or not l.strip() for l in buf.splitlines()):
        raise ValueError(f"incomplete SQL statement at the end of a migration: {buf[:80]!r}")


def schema_version(conn: Store) -> int:
    """Highest applied migration (0 for an empty database)."""
    if isinstance(conn, db_postgres.PgConnection):
        return conn.schema_version()
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if row is None:
        return 0
    return conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]


def enable_wal(conn: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode = WAL``, waiting out other connections that open the same fresh file.

    Switching a new file to WAL needs an exclusive lock, and SQLite answers ``SQLITE_BUSY`` at once
    (without its busy handler) when another connection holds a shared lock meanwhile: several workers
    starting together failed with "database is locked". Retried in short pauses for the connection's busy
    timeout; a file already in WAL needs no lock at all.
    """
    limit = (getattr(conn, "busy_timeout_ms", None) or 5000) / 1000
    deadline, pause = time.monotonic() + limit, 1e-3
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 50e-3)


def migrate(conn: Store) -> list[str]:
    """Apply pending migrations in one ``BEGIN IMMEDIATE`` transaction (safe with many workers).

    Returns the names applied.
    """
    if isinstance(conn, db_postgres.PgConnection):
        return conn.migrate(migrations())
    enable_wal(conn)
    applied = []
    with write(conn, durable=True):
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        current = schema_version(conn)
        for version, name, sql in migrations():
            if version <= current:
                continue
            for stmt in _statements(sql):
                conn.execute(stmt)
            conn.execute(
                "INSERT INTO schema_version (version, name, applied_at) "
                "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                (version, name),
            )
            applied.append(name)
    return applied


def open_store(app) -> sqlite3.Connection:
    """A migrated connection for ``app`` outside a request (CLI, portal jobs); caller closes it.

    ``DATABASE_URL`` (``postgresql://…``) selects the PostgreSQL store, else the SQLite file ``DATABASE``.
    Typed as the SQLite connection whose interface :class:`app.store.postgres.PgConnection` speaks, so the
    store functions keep one signature for both backends."""
    url = app.config.get("DATABASE_URL")
    conn: Store
    if url:
        conn = db_postgres.connect(url, app.config["DB_TIMEOUT"])
    else:
        conn = connect(app.config["DATABASE"], app.config["DB_TIMEOUT"])
    state = app.extensions["urban"]
    if state.migrated_pid != os.getpid():
        migrate(conn)
        state.migrated_pid = os.getpid()
    return cast(sqlite3.Connection, conn)


def _slot(app) -> threading.local:
    slot = app.extensions.get("urban_db")
    if slot is None:
        slot = app.extensions.setdefault("urban_db", threading.local())
    return slot


def get_db() -> sqlite3.Connection:
    """This request's connection: one per process and thread, opened on first use (so after fork, never in
    the gunicorn master), migrated once per process and kept between requests.

    Keeping it open matters: closing the last connection of a WAL database checkpoints and deletes the WAL
    file, which made every request pay for a checkpoint and a new WAL file (milliseconds).
    """
    if "db" not in g:
        slot = _slot(current_app)
        conn = getattr(slot, "conn", None)
        if conn is None or slot.pid != os.getpid():
            conn = open_store(current_app)
            slot.conn, slot.pid = conn, os.getpid()
        g.db = conn
    return g.db


def discard_db() -> None:
    """Mark this request's connection as suspect (a store error): it is closed at teardown and the next
    request opens a fresh one, so a store that recovers is used again without a restart."""
    g.db_failed = True


def close_db(_exc=None) -> None:
    """Teardown: leave no transaction open; close the connection only after a store error."""
    conn = g.pop("db", None)
    if conn is None:
        return
    failed = g.pop("db_failed", False) or _exc is not None
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        failed = True
    if failed:
        slot = _slot(current_app)
        if getattr(slot, "conn", None) is conn:
            slot.conn = None
        conn.close()


def init_app(app) -> None:
    app.teardown_appcontext(close_db)
