"""The account store connection of a request: one per process and thread, opened on first use (so after
fork, never in the gunicorn master), migrated once per process and kept between requests.

Keeping it open matters: closing the last connection of a SQLite WAL database checkpoints and deletes the
WAL file, so every request would pay for a checkpoint and a new WAL file. After a store error the
connection is closed at teardown and the next request opens a fresh one, so a store that recovers is used
again without a restart.
"""

from __future__ import annotations

import os
import threading

from flask import current_app, g

from app.store.base import Store, StoreIntegrityError, StoreUnavailable
from app.store.db import open_store


def _slot(app) -> threading.local:
    slot = app.extensions.get("urban_db")
    if slot is None:
        slot = app.extensions.setdefault("urban_db", threading.local())
    return slot


def get_db() -> Store:
    """This request's connection."""
    if "db" not in g:
        slot = _slot(current_app)
        conn = getattr(slot, "conn", None)
        if conn is None or slot.pid != os.getpid():
            conn = open_store(current_app)
            slot.conn, slot.pid = conn, os.getpid()
        g.db = conn
    return g.db


def discard_db() -> None:
    """Mark this request's connection as suspect (a store error): it is closed at teardown."""
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
    except (StoreUnavailable, StoreIntegrityError):
        failed = True
    if failed:
        slot = _slot(current_app)
        if getattr(slot, "conn", None) is conn:
            slot.conn = None
        conn.close()


def init_app(app) -> None:
    app.teardown_appcontext(close_db)
