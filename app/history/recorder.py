"""The publish hooks: every path that publishes a snapshot records it here.

The live refresher (:func:`app.sources.refresher.refresh`, after the pointer switch), ``replay`` of a
recording (:func:`app.sources.recording.replay`) and the demo (``python -m app.history demo``) call
:func:`record_published`. Recording comes after the publish, so a refresh that publishes nothing records
nothing; a recording that fails (store unreachable) is logged and caught up at the next refresh round,
which first records the snapshot still being served.
"""

from __future__ import annotations

import logging
import os

from .store import HistoryError, Recorded, default_url, open_store

log = logging.getLogger("app.history")


def history_url(data_dir, configured: str | None = None) -> str:
    """The store of ``data_dir``: ``configured`` (``HISTORY_URL``), else ``URBAN_HISTORY_URL`` in the
    environment, else the SQLite file beside the snapshot pointer."""
    return configured or os.environ.get("URBAN_HISTORY_URL") or default_url(data_dir)


def record_published(
    data_dir, url: str | None = None, *, live_only: bool = False, tables: dict | None = None
) -> Recorded | None:
    """Record the snapshot ``data_dir`` points at (idempotent); None when it could not be recorded (or,
    with ``live_only``, when no layer of it came from a live or recorded source). ``tables``: the Arrow
    tables this process parsed from layer files, by sha256 (``geo.data.snapshot.tables_read``), taken
    instead of parsing those files again."""
    if live_only and not _has_live_layer(data_dir):
        return None
    try:
        store = open_store(history_url(data_dir, url))
    except Exception as exc:  # sqlite3 / psycopg connection errors: never fail the publish itself
        log.error("history: cannot open the store for %s: %s", data_dir, exc)
        return None
    try:
        outcome = store.record_dir(data_dir, tables=tables)
    except (HistoryError, OSError, ValueError, KeyError) as exc:
        log.error("history: the snapshot at %s was not recorded: %s", data_dir, exc)
        return None
    except Exception as exc:  # a database error: logged, caught up at the next round
        log.error("history: recording %s failed: %s", data_dir, exc)
        return None
    finally:
        store.close()
    if outcome.seq is None:
        log.warning("history: %s not recorded: %s", data_dir, outcome.reason)
    return outcome


def _has_live_layer(data_dir) -> bool:
    from geo.data.snapshot import read_manifest
    from geo.errors import SnapshotError

    try:
        layers = read_manifest(data_dir)["layers"].values()
    except SnapshotError:
        return False
    return any(entry.get("kind") in ("live", "recorded") for entry in layers)
