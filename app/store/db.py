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
from contextlib import AbstractContextManager

from . import postgres, sqlite
from .base import Store, migrations


def write(conn: Store, *, durable: bool = False) -> AbstractContextManager[Store]:
    """The store's write transaction (:meth:`app.store.base.Store.transaction`): ``with write(conn): …``."""
    return conn.transaction(durable=durable)


def migrate(conn: Store) -> list[str]:
    """Apply the pending migrations of ``app/store/migrations``; returns the names applied."""
    return conn.migrate(migrations())


def open_store(app) -> Store:
    """A migrated connection for ``app`` (a Flask app: its ``config`` and ``extensions["urban"]``); the
    caller closes it.

    ``DATABASE_URL`` (``postgresql://…``) selects the PostgreSQL store, else the SQLite file ``DATABASE``.
    The migrations run once per process.
    """
    config = app.config
    conn: Store
    if config.get("DATABASE_URL"):
        conn = postgres.connect(config["DATABASE_URL"], config["DB_TIMEOUT"])
    else:
        conn = sqlite.connect(config["DATABASE"], config["DB_TIMEOUT"])
    state = app.extensions["urban"]
    if state.migrated_pid != os.getpid():
        migrate(conn)
        state.migrated_pid = os.getpid()
    return conn
