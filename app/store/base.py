"""The account store's interface: what a store connection does, whichever backend holds the data.

:class:`Store` is the one transaction interface; :class:`app.store.sqlite.SQLiteStore` (one file under the
instance folder) and :class:`app.store.postgres.PostgresStore` (several app hosts) implement it, and every
function of the store (:mod:`app.store.accounts`, :mod:`~app.store.usage`, :mod:`~app.store.saved_locations`,
:mod:`~app.store.tokens`) is written once against it:

- statements are written in SQLite's dialect (``?`` and ``:name`` parameters, ``IFNULL``, ``RETURNING``);
  a backend that speaks another dialect translates them;
- :meth:`Store.execute` returns a :class:`Cursor` whose rows answer ``row[0]`` and ``row["name"]``;
- :meth:`Store.transaction` takes the store's one write lock (``durable=True``: the commit survives a
  power cut); nested, it is a savepoint;
- a store that is locked past its timeout, unreachable, full or damaged raises :class:`StoreUnavailable`
  (503), a statement a constraint refuses raises :class:`StoreIntegrityError`; nothing else of a backend's
  own error classes reaches the callers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from importlib import resources
from typing import Any, Protocol


class StoreUnavailable(Exception):
    """The store is locked past its timeout, unreachable, full or damaged: the store, not the request."""


class StoreIntegrityError(Exception):
    """A constraint refused the statement; nothing of it was written."""


class Row(Protocol):
    """A result row: by position (``row[0]``) and by column name (``row["email"]``)."""

    def __getitem__(self, key: int | str) -> Any: ...

    def keys(self) -> list[str]: ...


class Cursor:
    """The result of :meth:`Store.execute`: its rows (``fetchone``, ``fetchall``, iteration) and
    ``rowcount``."""

    __slots__ = ("rowcount", "_rows", "_pos")

    def __init__(self, rows: Sequence[Any] | None, rowcount: int):
        self._rows = rows
        self._pos = 0
        self.rowcount = rowcount

    def fetchone(self) -> Row | None:
        rows = self._rows
        if not rows or self._pos >= len(rows):
            return None
        self._pos += 1
        return rows[self._pos - 1]

    def fetchall(self) -> list[Row]:
        rows = self._rows or []
        out, self._pos = list(rows[self._pos :]), len(rows)
        return out

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


class Store(Protocol):
    """One connection to the account store (see the module docstring)."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, params: Any = ()) -> Cursor:
        """Run one statement and return its rows."""
        ...

    def execute_write(self, sql: str, params: Any = ()) -> Row | None:
        """Run one autocommit write statement and return its first row (None: no row), waiting out a
        short lock; inside an open transaction a plain :meth:`execute`."""
        ...

    def transaction(self, *, durable: bool = False) -> AbstractContextManager[Store]:
        """The store's write lock from the first statement to ``COMMIT`` (rolled back on any exception);
        nested, a savepoint."""
        ...

    def schema_version(self) -> int:
        """Highest applied migration (0 for an empty store)."""
        ...

    def migrate(self, migrations: list[tuple[int, str, str]]) -> list[str]:
        """Apply the pending ``migrations`` in one transaction; returns the names applied."""
        ...

    def close(self) -> None: ...


@contextmanager
def savepoint(conn: Store) -> Iterator[None]:
    """A write nested in an open transaction, on either backend: ``SAVEPOINT`` … ``RELEASE``; an exception
    rolls back to the savepoint (when the transaction still stands) and propagates."""
    name = f"w{id(object()):x}"
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # a failure may already have ended the whole transaction (e.g. disk full)
            try:
                conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
                conn.execute(f"RELEASE SAVEPOINT {name}")
            except StoreUnavailable:
                pass  # the savepoint is gone with the transaction: report the original error
        raise
    conn.execute(f"RELEASE SAVEPOINT {name}")


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every ``app/store/migrations/NNN_name.sql``, in order."""
    out = []
    for entry in resources.files("app.store.migrations").iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:3].isdigit():
            out.append((int(name[:3]), name, entry.read_text(encoding="utf-8")))
    return sorted(out)


def statements(sql: str) -> Iterator[str]:
    """The statements of a migration, one by one (comments and blank lines between them dropped).

    Examples
    --------
    >>> list(statements("CREATE TABLE a (x);\\n-- note\\nCREATE TABLE b (y);\\n"))
    ['CREATE TABLE a (x);\\n', '-- note\\nCREATE TABLE b (y);\\n']
    """
    buf = ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                yield buf
            buf = ""
    if buf.strip() and not all(l.strip().startswith("--") or not l.strip() for l in buf.splitlines()):
        raise ValueError(f"incomplete SQL statement at the end of a migration: {buf[:80]!r}")
