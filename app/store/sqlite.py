"""The account store in one SQLite file under the instance folder: versioned migrations, WAL.

A connection (:class:`SQLiteStore`) runs in autocommit mode: writes take ``BEGIN IMMEDIATE`` through
:meth:`SQLiteStore.transaction`; account and key changes pass ``durable=True`` (``synchronous=FULL``), usage
counts rely on WAL with ``synchronous=NORMAL``, which loses nothing when a worker is killed. A single
statement that finds the store locked is retried in short pauses until the connection's timeout
(:func:`_retried`, SQLite's busy handler off); a transaction waits with SQLite's busy handler. SQLite's errors
leave it as the store's (:class:`app.store.base.StoreUnavailable`, :class:`~app.store.base.StoreIntegrityError`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .base import Cursor, StoreIntegrityError, StoreUnavailable, savepoint, statements


def _busy(exc: sqlite3.OperationalError) -> bool:
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY


def _store_error(exc: sqlite3.Error) -> Exception:
    """The store's error for a SQLite one: a constraint, or the store itself (locked past the busy timeout,
    disk full, I/O error, damaged file). A misuse of the interface stays SQLite's (a bug: 500)."""
    if isinstance(exc, sqlite3.IntegrityError):
        return StoreIntegrityError(str(exc))
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.ProgrammingError):
        return StoreUnavailable(str(exc))
    return exc


class SQLiteStore:
    """One SQLite connection with the store's interface (:class:`app.store.base.Store`).

    Examples
    --------
    >>> conn = connect(":memory:")
    >>> conn.execute("PRAGMA foreign_keys").fetchone()[0]
    1
    """

    def __init__(self, path: str, timeout: float = 5.0):
        try:
            raw = sqlite3.connect(path, timeout=timeout, isolation_level=None)
            raw.row_factory = sqlite3.Row
            self.busy_timeout_ms = int(timeout * 1000)
            self._handler_on = True  # SQLite's busy handler (see _handler)
            raw.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
            raw.execute("PRAGMA foreign_keys = ON")
            raw.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            raise _store_error(exc) from exc
        self._raw = raw

    @property
    def in_transaction(self) -> bool:
        return self._raw.in_transaction

    def _handler(self, on: bool) -> None:
        """SQLite's busy handler on (waiting up to the timeout: transactions) or off (single statements,
        :func:`_retried`); one ``PRAGMA`` when the state changes, none while it stays (the data calls)."""
        if self._handler_on != on:
            self._raw.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms if on else 0}")
            self._handler_on = on

    def execute(self, sql: str, params: Any = ()) -> Cursor:
        """Run one statement and return its rows; outside a transaction a locked store is waited out
        (:func:`_retried`)."""
        raw = self._raw
        try:
            if raw.in_transaction:
                cur = raw.execute(sql, params)
            else:
                self._handler(False)
                cur = _retried(raw.execute, sql, params, self.busy_timeout_ms)
            rows = cur.fetchall() if cur.description is not None else None
        except sqlite3.Error as exc:
            raise _store_error(exc) from exc
        return Cursor(rows, cur.rowcount)

    def execute_write(self, sql: str, params: Any = ()) -> Any:
        """Run one autocommit write statement and return its first row, waiting out a busy store
        (:func:`_retried`). Inside an open transaction it is a plain :meth:`execute`.

        Examples
        --------
        >>> conn = connect(":memory:")
        >>> _ = conn.execute("CREATE TABLE t (x)")
        >>> conn.execute_write("INSERT INTO t VALUES (1) RETURNING x")[0]
        1
        """
        raw = self._raw
        if raw.in_transaction:
            return self.execute(sql, params).fetchone()
        try:
            self._handler(False)
            return _retried(raw.execute, sql, params, self.busy_timeout_ms).fetchone()
        except sqlite3.Error as exc:
            raise _store_error(exc) from exc

    @contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[SQLiteStore]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on any exception); nestable.

        Inside an open transaction it becomes ``SAVEPOINT`` … ``RELEASE`` (an exception rolls back to the
        savepoint and propagates), so store functions that write can be composed into one transaction.
        ``durable=True`` commits with ``synchronous=FULL`` (accounts, keys, locations); on a nested write
        the outermost one decides.

        Examples
        --------
        >>> conn = connect(":memory:")
        >>> _ = conn.execute("CREATE TABLE t (x)")
        >>> with conn.transaction():
        ...     _ = conn.execute("INSERT INTO t VALUES (1)")
        ...     try:
        ...         with conn.transaction():
        ...             _ = conn.execute("INSERT INTO t VALUES (2)")
        ...             raise KeyError
        ...     except KeyError:
        ...         pass
        >>> [r[0] for r in conn.execute("SELECT x FROM t")]
        [1]
        """
        if self.in_transaction:
            with savepoint(self):
                yield self
            return
        if durable:
            self.execute("PRAGMA synchronous = FULL")
        try:
            try:
                self._handler(True)  # statements inside a transaction wait as SQLite does (e.g. a COMMIT)
                self._raw.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _store_error(exc) from exc
            try:
                yield self
            except BaseException:
                if self.in_transaction:
                    self.execute("ROLLBACK")
                raise
            try:
                self.execute("COMMIT")
            except BaseException:
                if self.in_transaction:  # e.g. disk full at commit: leave no open transaction behind
                    self.execute("ROLLBACK")
                raise
        finally:
            if durable:
                self.execute("PRAGMA synchronous = NORMAL")

    def schema_version(self) -> int:
        row = self.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        ).fetchone()
        if row is None:
            return 0
        latest = self.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
        return 0 if latest is None else int(latest[0])

    def enable_wal(self) -> None:
        """``PRAGMA journal_mode = WAL``, waiting out other connections that open the same fresh file.

        Switching a new file to WAL needs an exclusive lock, and SQLite answers ``SQLITE_BUSY`` at once
        (without its busy handler) when another connection holds a shared lock meanwhile: several workers
        starting together failed with "database is locked". Retried in short pauses for the connection's
        busy timeout; a file already in WAL needs no lock at all.
        """
        deadline, pause = time.monotonic() + self.busy_timeout_ms / 1000, 1e-3
        while True:
            try:
                self._raw.execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise _store_error(exc) from exc
                time.sleep(pause)
                pause = min(pause * 2, 50e-3)

    def migrate(self, migrations: list[tuple[int, str, str]]) -> list[str]:
        """Apply pending ``migrations`` in one ``BEGIN IMMEDIATE`` transaction (safe with many workers)."""
        self.enable_wal()
        applied = []
        with self.transaction(durable=True):
            self.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            current = self.schema_version()
            for version, name, sql in migrations:
                if version <= current:
                    continue
                for stmt in statements(sql):
                    self.execute(stmt)
                self.execute(
                    "INSERT INTO schema_version (version, name, applied_at) "
                    "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                    (version, name),
                )
                applied.append(name)
        return applied

    def trace(self, callback) -> None:
        """Call ``callback(sql)`` with every statement SQLite runs on this connection (None: stop)."""
        self._raw.set_trace_callback(callback)

    def close(self) -> None:
        self._raw.close()


def _retried(run, sql: str, params: Any, timeout_ms: int):
    """``run(sql, params)``, retried while SQLite answers "database is locked" (another connection holds
    the write lock), after 20 µs, doubling up to 1 ms, until ``timeout_ms`` have passed; then SQLite's
    error. A statement outside a transaction that finds the store busy has done nothing, so running it
    again is safe.

    SQLite's own busy handler sleeps at least 1 ms before its first retry, far longer than the write lock
    of one admission is held (docs/operations.md), so single statements run without it.
    """
    try:
        return run(sql, params)
    except sqlite3.OperationalError as exc:
        if not _busy(exc):
            raise
    deadline, pause = time.monotonic() + timeout_ms / 1000, 20e-6
    while True:
        now = time.monotonic()
        if now >= deadline:
            return run(sql, params)  # a last try: its error is the caller's
        time.sleep(min(pause, deadline - now))
        pause = min(pause * 2, 1e-3)
        try:
            return run(sql, params)
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise


def connect(path: str, timeout: float = 5.0) -> SQLiteStore:
    """Open the SQLite store at ``path`` with our pragmas (autocommit mode: transactions are explicit)."""
    return SQLiteStore(path, timeout)
