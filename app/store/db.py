"""Opening the account store: the SQLite file ``DATABASE`` or the PostgreSQL server ``DATABASE_URL``, migrated
once per process, and the store functions' transaction form.

A connection is opened lazily (so never at import and never in the gunicorn master); the request's own
connection, kept between requests of a worker, is :func:`app.web.db.get_db`.

Examples
--------
>>> from app.store.sqlite import connect
>>> conn = connect(":memory:"); _ = migrate(conn)
>>> with write(conn):
...     _ = conn.execute("INSERT INTO accounts (email, plan, created_at) VALUES ('a@b.be', 'api', '')")
>>> conn.execute("SELECT COUNT(*) FROM accounts").fetchone()[0]
1
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager

from . import postgres, sqlite
from .base import Store, migrations


def write(conn: Store, *, durable: bool = False) -> AbstractContextManager[Store]:
    """The store's write transaction (:meth:`app.store.base.Store.transaction`): ``with write(conn): …``."""
    return conn.transaction(durable=durable)


def migrate(conn: Store) -> list[str]:
    """Apply the pending migrations of ``app/store/migrations``; returns the names applied."""
    return conn.migrate(migrations())


#: the store backends a ``DATABASE_URL`` can name, by URL scheme (without one: the SQLite file ``DATABASE``)
BACKENDS: dict[str, Callable[[str, float], Store]] = {
    "postgresql": postgres.connect,
    "postgres": postgres.connect,
}


def supports(url: str) -> bool:
    """Whether ``url`` names a store backend.

    Examples
    --------
    >>> supports("postgresql://db/urban"), supports("mysql://db/urban")
    (True, False)
    """
    return url.split("://", 1)[0] in BACKENDS if "://" in url else False


def connect(config, timeout: float | None = None) -> Store:
    """A new, unmigrated connection to the store ``config`` names: the backend of ``DATABASE_URL``, else
    the SQLite file ``DATABASE``."""
    timeout = config["DB_TIMEOUT"] if timeout is None else timeout
    url = config.get("DATABASE_URL")
    if url:
        return BACKENDS[url.split("://", 1)[0]](url, timeout)
    return sqlite.connect(config["DATABASE"], timeout)


def open_store(app) -> Store:
    """A migrated connection for ``app`` (a Flask app: its ``config`` and ``extensions["urban"]``); the
    caller closes it. The migrations run once per process.
    """
    conn = connect(app.config)
    state = app.extensions["urban"]
    if state.migrated_pid != os.getpid():
        migrate(conn)
        state.migrated_pid = os.getpid()
    return conn
