"""The change feed: one ordered, deterministic stream of change events per saved location (docs/changes.md).

Interface (stable; delivery, the calendar and the dashboard build on it):

- :class:`ChangeEvent`: one event; ``event.body`` is its JSON object, byte for byte what the API sends.
- :func:`derive(history, locations)`: derive the events of every recorded publish not yet derived, for the
  given saved locations (``(id, lat, lng)``), and store them; returns the new events in feed order. Call it
  after each recorded publish (idempotent, one transaction per publish; a second deriver waits on the lock
  and then finds nothing to do). A location first seen at publish *p* starts its stream after *p*.
- :func:`events_after(history, location_ids, after, limit)`: stored events of those locations after feed
  position ``after`` (0: from the oldest kept), in feed order, as ``(position, ChangeEvent)``.
- :func:`head(history)`: the newest feed position (0 when there is none).
- :func:`encode_cursor` / :func:`decode_cursor`: the opaque ``since`` cursor of the API.

The events of a publish are a pure function of the recorded history (the publish, the one before it, the
NO2 levels derived up to it) and the location's coordinates: deriving the same history again gives the same
events, ids and bytes. The rules are in :mod:`geo.rules.changes` and :mod:`geo.batch.changes`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from .store import HistoryStore, Publish

DDL = (
    "CREATE TABLE IF NOT EXISTS change_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS change_publish (
        seq BIGINT PRIMARY KEY,
        levels {blob} NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS change_location (
        location_id TEXT PRIMARY KEY,
        lat DOUBLE PRECISION NOT NULL,
        lng DOUBLE PRECISION NOT NULL,
        since_seq BIGINT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS change_event (
        feed_pos BIGINT PRIMARY KEY,
        location_id TEXT NOT NULL,
        event_id TEXT NOT NULL UNIQUE,
        publish_seq BIGINT NOT NULL,
        body TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS change_event_location ON change_event (location_id, feed_pos)",
)

#: the API answer an event's subject is about (its links)
ANSWER_OF = {"work": "disruptions", "detour": "disruptions", "station": "air-quality", "no2": "air-quality"}


@dataclass(frozen=True)
class Location:
    """A saved location as the feed needs it."""

    id: str
    lat: float
    lng: float


@dataclass(frozen=True)
class ChangeEvent:
    """One change event of one saved location.

    ``id``: stable (the same history gives the same id); ``type``: one of
    :data:`geo.rules.changes.EVENT_TYPES`; ``subject``: what changed (``work:<GIPOD id>``,
    ``detour:<id>``, ``station``, ``no2:eu``, ``no2:who``, ``source:<name>``); ``recorded_at``: the
    ``asOf`` of the publish that carried the change (RFC 3339, UTC); ``valid_at``: when the change holds in
    the world (a work's start or end, a detour's start or end, the NO2 hour that confirmed a crossing), or
    None; ``before``/``after``: the values (None: absent); ``publish``/``snapshot_id``: the publish.
    """

    id: str
    type: str
    location_id: str
    subject: str
    recorded_at: str
    valid_at: str | None
    snapshot_id: str
    publish: int
    before: dict | None
    after: dict | None

    @property
    def links(self) -> dict:
        """The API answers about the event: now, and as recorded (``asOf``, Enterprise)."""
        answer = ANSWER_OF.get(self.subject.split(":")[0], "briefing")
        now = f"/api/v1/{answer}?locationId={self.location_id}"
        return {"current": now, "asRecorded": f"{now}&asOf={self.recorded_at}"}

    @property
    def body(self) -> dict:
        """The event's JSON object (the API's ``ChangeEvent``)."""
        return {
            "id": self.id,
            "type": self.type,
            "locationId": self.location_id,
            "subject": self.subject,
            "recordedAt": self.recorded_at,
            "validAt": self.valid_at,
            "snapshotId": self.snapshot_id,
            "before": self.before,
            "after": self.after,
            "links": self.links,
        }

    def text(self) -> str:
        """The canonical JSON text (stored, sent, hashed)."""
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_text(cls, text: str, publish: int) -> ChangeEvent:
        b = json.loads(text)
        return cls(
            b["id"],
            b["type"],
            b["locationId"],
            b["subject"],
            b["recordedAt"],
            b["validAt"],
            b["snapshotId"],
            publish,
            b["before"],
            b["after"],
        )


def iso_ms(value_ms: int | None) -> str | None:
    """RFC 3339 UTC text of epoch ms (``2026-11-16T08:00:00Z``; milliseconds when not whole seconds)."""
    if value_ms is None:
        return None
    moment = datetime.fromtimestamp(value_ms / 1000, UTC)
    spec = "seconds" if value_ms % 1000 == 0 else "milliseconds"
    return moment.isoformat(timespec=spec).replace("+00:00", "Z")


def event_id(location_id: str, publish: Publish, kind: str, subject: str, valid_ms: int | None) -> str:
    """The stable id of an event: a hash of where, which publish, what and when (``ev_`` + 24 hex)."""
    key = f"{location_id}\x1f{publish.snapshot_id}\x1f{publish.as_of_ms}\x1f{kind}\x1f{subject}\x1f{valid_ms}"
    return "ev_" + hashlib.sha256(key.encode()).hexdigest()[:24]


# --- storage -------------------------------------------------------------------------------------------
def ensure_tables(history: HistoryStore, feed_id: str | None = None) -> None:
    """Create the feed's tables (idempotent) and its feed id (what makes a cursor of another store
    expired): random, unless ``feed_id`` pins it (the recorded documentation examples)."""
    blob = "BYTEA" if history.postgres else "BLOB"
    with history.transaction():
        for statement in DDL:
            history.execute(statement.format(blob=blob))
        history.execute(
            "INSERT INTO change_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
            ("feed", feed_id or secrets.token_hex(6)),
        )
        history.execute(
            "INSERT INTO change_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
            ("pruned_below", "0"),
        )


def meta(history: HistoryStore) -> dict[str, str]:
    """The feed's id (``feed``), the first position still kept (``pruned_below``) and the newest
    position (``head``, as text), in one read."""
    out = {
        n: v
        for n, v in history.execute(
            "SELECT name, value FROM change_meta UNION ALL "
            "SELECT 'head', CAST(COALESCE(MAX(feed_pos), 0) AS TEXT) FROM change_event"
        )
    }
    return out


def head(history: HistoryStore) -> int:
    """The newest feed position (0 when no event was ever stored)."""
    row = history.execute("SELECT MAX(feed_pos) FROM change_event").fetchone()
    return int(row[0] or 0)


def _levels_text(levels: dict) -> bytes:
    from geo.batch.changes import level_json

    data = [[sid, fig, level_json(lv)] for (sid, fig), lv in sorted(levels.items())]
    return zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 6)


def _levels_of(data) -> dict:
    from geo.batch.changes import level_from_json

    return {(sid, fig): level_from_json(lv) for sid, fig, lv in json.loads(zlib.decompress(bytes(data)))}


def last_derived(history: HistoryStore) -> int:
    """The last publish whose events are derived (0: none)."""
    row = history.execute("SELECT MAX(seq) FROM change_publish").fetchone()
    return int(row[0] or 0)


# --- derivation ----------------------------------------------------------------------------------------
_engines: OrderedDict = OrderedDict()  # (store, seq, snapshot) -> engine: the last two, for the next derive
_engines_lock = threading.Lock()


def _engine(history: HistoryStore, publish: Publish):
    """The engine of a recorded publish, rebuilt from the store (the last two kept: the next derivation
    starts from the engine this one ended with, and shares with it every layer whose file did not change)."""
    from geo.service.loaded import held_layers, rebuild

    key = (history.identity, publish.seq, publish.snapshot_id)
    with _engines_lock:
        if key in _engines:
            return _engines[key]
        donors = list(reversed(_engines.values()))
    layers, manifest = history.snapshot(publish.seq, held_layers(donors))
    engine = rebuild(layers, manifest, donors)
    with _engines_lock:
        _engines[key] = engine
        while len(_engines) > 2:
            _engines.popitem(last=False)
    return engine


def _side(engine, publish: Publish, levels: dict, limits: dict):
    from geo.batch.changes import Side
    from geo.rules.changes import stale_sources

    stale = stale_sources(getattr(engine, "manifest", None) or {}, publish.as_of, limits)
    return Side(engine, publish.as_of_ms, levels, stale)


def derive(
    history: HistoryStore,
    locations: Iterable,
    *,
    until: int | None = None,
    start: int | None = None,
    limits: dict | None = None,
) -> list[tuple[int, ChangeEvent]]:
    """Derive and store the events of every recorded publish after the last derived one (up to publish
    ``until``), for ``locations`` (:class:`Location` or ``(id, lat, lng)``); returns the new
    ``(position, event)`` in feed order.

    ``start``: where a store with nothing derived yet begins: None (default), at the newest recorded
    publish (the feed starts now, that publish is everyone's baseline); a publish number (1: replay the
    whole recorded history). ``limits``: freshness limits per layer in seconds (default
    :data:`geo.data.layers.FRESHNESS_S`). Each publish is one transaction; an interrupted run resumes at
    the next call.

    Examples
    --------
    >>> new = derive(open_store(url), [("loc_3fK9xQ2mPa7Z", 51.2194, 4.4025)])  # doctest: +SKIP
    """
    from geo.batch.changes import station_levels
    from geo.data.layers import FRESHNESS_S

    limits = dict(FRESHNESS_S if limits is None else limits)
    locs = sorted(
        (loc if isinstance(loc, Location) else Location(*loc) for loc in locations), key=lambda x: x.id
    )
    ensure_tables(history)
    done = last_derived(history)
    todo = [p for p in history.publishes(after=done) if until is None or p.seq <= until]
    if not done:
        todo = todo[-1:] if start is None else [p for p in todo if p.seq >= start]
    if not todo:
        return []
    previous = None
    if done:
        prev_publish = next((p for p in history.publishes(after=done - 1) if p.seq == done), None)
        row = history.execute("SELECT levels FROM change_publish WHERE seq = ?", (done,)).fetchone()
        if prev_publish is not None and row is not None:
            engine = _engine(history, prev_publish)
            previous = (prev_publish, _side(engine, prev_publish, _levels_of(row[0]), limits))
    out: list[tuple[int, ChangeEvent]] = []
    for publish in todo:
        engine = _engine(history, publish)
        levels, crossings = station_levels(engine, previous[1].levels if previous else {})
        side = _side(engine, publish, levels, limits)
        out.extend(_derive_one(history, publish, previous, side, crossings, locs))
        previous = (publish, side)
    return out


def _derive_one(history, publish: Publish, previous, side, crossings, locs) -> list:
    from geo.batch.changes import publish_changes

    with history.transaction():
        if history.execute("SELECT 1 FROM change_publish WHERE seq = ?", (publish.seq,)).fetchone():
            return []  # another deriver did it meanwhile
        known = {
            lid: int(since)
            for lid, since in history.execute("SELECT location_id, since_seq FROM change_location")
        }
        fresh = [loc for loc in locs if loc.id not in known]
        history._many(
            "INSERT INTO change_location (location_id, lat, lng, since_seq) VALUES (?, ?, ?, ?)",
            [(loc.id, loc.lat, loc.lng, publish.seq) for loc in fresh],
        )
        ready = [loc for loc in locs if loc.id in known and known[loc.id] < publish.seq]
        events: list[ChangeEvent] = []
        if previous is not None and ready:
            lat = np.array([loc.lat for loc in ready])
            lng = np.array([loc.lng for loc in ready])
            for c in publish_changes(previous[1], side, lat, lng, crossings):
                loc = ready[c.point]
                events.append(
                    ChangeEvent(
                        event_id(loc.id, publish, c.type, c.subject, c.valid_ms),
                        c.type,
                        loc.id,
                        c.subject,
                        iso_ms(publish.as_of_ms) or "",
                        iso_ms(c.valid_ms),
                        publish.snapshot_id,
                        publish.seq,
                        _times(c.before),
                        _times(c.after),
                    )
                )
        stored = append(history, events)
        history.execute(
            "INSERT INTO change_publish (seq, levels) VALUES (?, ?)", (publish.seq, _levels_text(side.levels))
        )
    return stored


def append(history: HistoryStore, events: Sequence[ChangeEvent]) -> list[tuple[int, ChangeEvent]]:
    """Store ``events`` at the next feed positions, in order (inside the caller's transaction); returns
    ``(position, event)``. Only the derivation writes events; tests use it to seed a feed."""
    start = head(history)
    rows = [(start + k + 1, e.location_id, e.id, e.publish, e.text()) for k, e in enumerate(events)]
    history._many(
        "INSERT INTO change_event (feed_pos, location_id, event_id, publish_seq, body) VALUES (?, ?, ?, ?, ?)",
        rows,
    )
    return [(start + k + 1, e) for k, e in enumerate(events)]


def _times(value: dict | None) -> dict | None:
    """Epoch-ms members of a value (``hour``, ``since``) as RFC 3339 texts."""
    if value is None:
        return None
    return {k: iso_ms(v) if k in ("hour", "since") and isinstance(v, int) else v for k, v in value.items()}


def derive_saved(history: HistoryStore, accounts_conn, **options) -> list[tuple[int, ChangeEvent]]:
    """:func:`derive` for every saved location of the account store ``accounts_conn`` (all plans: the
    dashboard lists the events too)."""
    rows = accounts_conn.execute("SELECT id, lat, lng FROM locations ORDER BY id").fetchall()
    return derive(history, [Location(str(r[0]), float(r[1]), float(r[2])) for r in rows], **options)


# --- reading -------------------------------------------------------------------------------------------
def events_after(
    history: HistoryStore, location_ids: Sequence[str], after: int, limit: int
) -> list[tuple[int, ChangeEvent]]:
    """Stored events of ``location_ids`` after feed position ``after``, oldest first, at most ``limit``."""
    if not location_ids:
        return []
    marks = ", ".join("?" * len(location_ids))
    rows = history.execute(
        f"SELECT feed_pos, publish_seq, body FROM change_event WHERE location_id IN ({marks}) "
        "AND feed_pos > ? ORDER BY feed_pos LIMIT ?",
        (*location_ids, after, limit),
    ).fetchall()
    return [(int(pos), ChangeEvent.from_text(body, int(seq))) for pos, seq, body in rows]


def prune(history: HistoryStore, before_seq: int) -> int:
    """Drop the events of publishes before ``before_seq`` (with the history they came from); cursors that
    pointed before them become expired. Returns how many were dropped."""
    ensure_tables(history)
    with history.transaction():
        row = history.execute(
            "SELECT MAX(feed_pos) FROM change_event WHERE publish_seq < ?", (before_seq,)
        ).fetchone()
        if row[0] is None:
            return 0
        dropped = history.execute("DELETE FROM change_event WHERE publish_seq < ?", (before_seq,)).rowcount
        history.execute("DELETE FROM change_publish WHERE seq < ?", (before_seq - 1,))
        history.execute(
            "UPDATE change_meta SET value = ? WHERE name = 'pruned_below'", (str(int(row[0]) + 1),)
        )
    return max(dropped, 0)


# --- cursors -------------------------------------------------------------------------------------------
class CursorError(ValueError):
    """A ``since`` cursor that cannot be used: ``reason`` is ``malformed``, ``foreign`` or ``expired``."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def encode_cursor(scope: str, position: int, feed: str) -> str:
    """The opaque cursor of feed position ``position`` for ``scope`` (a location id, or ``acct:<n>``).

    Examples
    --------
    >>> c = encode_cursor("loc_3fK9xQ2mPa7Z", 42, "a1b2c3d4e5f6")
    >>> decode_cursor(c, "loc_3fK9xQ2mPa7Z", "a1b2c3d4e5f6", pruned_below=0, newest=50)
    42
    """
    raw = f"1.{scope}.{position}.{feed}"
    text = f"{raw}.{_check(raw)}".encode()
    return "cur_" + base64.urlsafe_b64encode(text).decode().rstrip("=")


def _check(raw: str) -> str:
    """A check of a cursor's content: a truncated or edited cursor is malformed, not another one."""
    return hashlib.sha256(raw.encode()).hexdigest()[:8]


def decode_cursor(text: str, scope: str, feed: str, *, pruned_below: int, newest: int) -> int:
    """The feed position of cursor ``text`` for ``scope``; :class:`CursorError` when it is malformed (or
    beyond the newest position), made for another feed (``foreign``), or points to events no longer kept,
    or to another store (``expired``).

    Examples
    --------
    >>> c = encode_cursor("acct:7", 3, "f00d")
    >>> try:
    ...     decode_cursor(c, "loc_3fK9xQ2mPa7Z", "f00d", pruned_below=0, newest=5)
    ... except CursorError as exc:
    ...     print(exc.reason)
    foreign
    """
    parts = None
    if isinstance(text, str) and text.startswith("cur_") and 4 < len(text) <= 200:
        body = text[4:]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("ascii")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raw = ""
        if base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=") != body:
            raw = ""  # only the exact text encode_cursor made: an edited last character can decode alike
        parts = raw.split(".")
    if (
        not parts
        or len(parts) != 5
        or parts[0] != "1"
        or not parts[2].isdigit()
        or parts[4] != _check(".".join(parts[:4]))
    ):
        raise CursorError("malformed", "since must be a cursor returned by this feed (nextCursor)")
    _v, owner, position_text, made_by, _c = parts
    if owner != scope:
        raise CursorError(
            "foreign",
            "this cursor belongs to another change feed (another location or account); use the nextCursor "
            "of this feed, or omit since to start from the oldest kept event",
        )
    position = int(position_text)
    if made_by != feed or position + 1 < pruned_below:
        raise CursorError(
            "expired",
            "this cursor points to events that are no longer kept; omit since to start from the oldest kept "
            "event",
        )
    if position > newest:
        raise CursorError("malformed", "since must be a cursor returned by this feed (nextCursor)")
    return position
