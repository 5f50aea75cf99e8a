"""``urban-score --as-of``: the engine of the snapshot served at an instant, rebuilt from the history store.

``geo`` reads no history store (it stays free of SQL): its batch command line takes this reader as a
callable (:func:`geo.batch.cli.command`), and the installed ``urban-score`` (``urban_score.py``) passes it.
"""

from __future__ import annotations

from datetime import datetime, timezone

from geo.batch.io import InputError
from geo.service.loaded import load

from .recorder import history_url
from .store import HistoryError, open_for_reading


def engine_at(as_of: datetime, history: str | None, data, wall: datetime | None = None):
    """The engine of the snapshot that was being served at ``as_of`` (aware datetime), rebuilt from the history
    store at URL ``history`` (default: that of the snapshot directory ``data``: ``$URBAN_HISTORY_URL``, else
    the SQLite file beside it) by ``geo.load(store, as_of=…)``, the notebooks' path. ``InputError`` when the
    store is missing, unreachable or empty, or the instant lies after ``wall`` (default: now) or before the
    first recorded publish.

    Examples
    --------
    >>> engine_at(datetime(2026, 11, 1, tzinfo=timezone.utc), None, "data/snapshot")  # doctest: +SKIP
    <geo.data.engine.Engine ...>
    """
    wall = wall or datetime.now(timezone.utc)
    when = as_of.isoformat().replace("+00:00", "Z")
    if as_of > wall:
        raise InputError(f"--as-of {when} lies after the current time: the history has no future")
    try:
        store = open_for_reading(history or history_url(data))
    except HistoryError as exc:
        raise InputError(f"--as-of needs the history store: {exc} (--history or URBAN_HISTORY_URL)") from None
    try:
        first, _last = store.first_last()
        if first is None:
            raise InputError(f"--as-of: nothing is recorded in the history store {store.label} yet")
        if as_of < first.as_of:
            raise InputError(
                f"--as-of {when} lies before the recorded history: {store.label} holds the snapshots "
                f"served from {first.as_of.isoformat().replace('+00:00', 'Z')} on"
            )
        return load(store, as_of=as_of)
    except HistoryError as exc:
        raise InputError(f"--as-of {when}: {exc}") from None
    finally:
        store.close()
