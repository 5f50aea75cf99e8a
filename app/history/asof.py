"""``asOf=<RFC 3339 instant>`` on the data endpoints: the answer the service gave, or would have given, then.

The snapshot is the recorded publish that was being served at the instant (the latest whose ``asOf`` is not
after it), rebuilt from the history store into an engine (a few kept per process); the clock is the data clock
the service had at that instant: the instant itself (``CLOCK=system``), or that snapshot's ``asOf``
(``CLOCK=snapshot``). The answer's body is byte for byte the live one; headers say which snapshot and
instant were used, and it is cacheable for ever. Enterprise only.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from flask import current_app, g, request

from app.web.clock import wall_now
from geo.data.rows import no_collection
from app.web.errors import ApiError, InvalidRequest, PlanRequired
from app.web.redact import echo
from .errors import AsOfInFuture, AsOfOutOfWindow, HistoryUnavailable, InvalidAsOf
from .recorder import history_url
from .store import HistoryError, HistoryStore, Publish, ms, open_store

PLANS = ("enterprise",)
RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})")
IMMUTABLE = "private, max-age=31536000, immutable"
ENGINES_KEPT = 4
#: engines built from the rows near one point (:func:`engine_at`) kept per process
NEAR_KEPT = 16
#: points at which one publish is answered from the rows near them before its whole engine is built
NEAR_POINTS = 4

_engines: OrderedDict = OrderedDict()
_engines_lock = threading.Lock()
_near: OrderedDict = OrderedDict()
_near_points: dict = {}
#: engines built by :func:`engine_at` in this process: from the rows near a point, or not (not provably local)
built = {"near": 0, "not_local": 0}
_stores = threading.local()


def iso(moment: datetime) -> str:
    """UTC ISO 8601 with ``Z`` (microseconds kept when present).

    Examples
    --------
    >>> iso(datetime(2026, 11, 16, 7, 0, tzinfo=UTC))
    '2026-11-16T07:00:00.000Z'
    """
    moment = moment.astimezone(UTC)
    frac = (
        f"{moment.microsecond // 1000:03d}" if moment.microsecond % 1000 == 0 else f"{moment.microsecond:06d}"
    )
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + frac + "Z"


def parse_instant(raw: str) -> datetime:
    """An RFC 3339 date-time with an offset (``Z`` or ``±hh:mm``) as an aware UTC datetime, else
    ``InvalidAsOf`` saying what is wrong. Fractions beyond microseconds are cut; leap seconds refused.

    Examples
    --------
    >>> parse_instant("2026-11-16T08:30:00+01:00")
    datetime.datetime(2026, 11, 16, 7, 30, tzinfo=datetime.timezone.utc)
    """
    text = raw.strip()
    match = RFC3339.fullmatch(text)
    if match is None:
        hint = ""
        if re.fullmatch(r".*\d \d{2}:\d{2}", text):
            hint = " (a '+' in a query string means a space: write the offset as %2B01:00, or use Z)"
        raise InvalidAsOf(
            f"asOf={echo(raw)} is not an RFC 3339 instant like 2026-11-16T07:00:00Z or "
            f"2026-11-16T08:00:00+01:00 (date, time and offset are all required){hint}"
        )
    year, month, day, hour, minute, second, frac, offset = match.groups()
    frac = (frac or "")[:6].ljust(6, "0")
    offset = "+00:00" if offset in ("Z", "z") else offset
    try:
        moment = datetime.fromisoformat(f"{year}-{month}-{day}T{hour}:{minute}:{second}.{frac}{offset}")
        return moment.astimezone(UTC)
    except ValueError as exc:
        raise InvalidAsOf(f"asOf={echo(raw)} is not a valid RFC 3339 instant ({exc})") from None
    except OverflowError:  # e.g. 0001-01-01T03:00:00+04:00: before year 1 in UTC
        raise InvalidAsOf(
            f"asOf={echo(raw)} is an RFC 3339 instant outside the years 0001-9999 in UTC"
        ) from None


@dataclass(frozen=True)
class AsOf:
    """What an ``asOf`` request answers from: the engine of the publish served at ``instant``, and the
    data clock ``now`` the service had then."""

    instant: datetime
    publish: Publish
    engine: object
    now: datetime
    #: the point the engine was built for from the rows near it (None: the whole publish's engine)
    near: tuple[float, float] | None = None

    def whole(self) -> AsOf:
        """This ``asOf`` with the whole publish's engine (a request whose point is not :attr:`near`)."""
        if self.near is None:
            return self
        live = getattr(current_app.extensions.get("urban"), "engine", None)
        try:
            engine = engine_of(store(), self.publish, live)
        except Exception as exc:  # as in pin: the store or the rebuild failed
            _discard_store()
            current_app.logger.exception("asOf %s: history store error: %s", iso(self.instant), exc)
            raise HistoryUnavailable() from None
        g.urban_engine = engine
        g.as_of = found = AsOf(self.instant, self.publish, engine, self.now)
        return found

    def stamp(self, response):
        """Headers of an ``asOf`` answer: which instant and snapshot, cacheable for ever."""
        response.headers["Cache-Control"] = IMMUTABLE
        response.headers["As-Of-Instant"] = iso(self.instant)
        response.headers["As-Of-Snapshot"] = self.publish.snapshot_id
        response.headers["As-Of-Snapshot-Time"] = iso(self.publish.as_of)
        return response


def store() -> HistoryStore:
    """This thread's connection to the app's history store."""
    url = history_url(
        current_app.config.get("DATA_DIR", "data/snapshot"), current_app.config.get("HISTORY_URL")
    )
    found = getattr(_stores, "by_url", None)
    if found is None:
        found = _stores.by_url = {}
    if url not in found:
        found[url] = open_store(url)
    return found[url]


def _discard_store() -> None:
    for held in (getattr(_stores, "by_url", None) or {}).values():
        try:
            held.close()
        except Exception:  # noqa: S110 - a broken connection is being thrown away
            pass
    _stores.by_url = {}


@contextmanager
def reading(what: str) -> Iterator[HistoryStore]:
    """This thread's history store for one read (the history resources); an error of the store becomes
    503 ``history_unavailable`` (logged, the connection dropped), never a 500."""
    try:
        yield store()
    except ApiError:
        raise
    except Exception as exc:
        _discard_store()
        current_app.logger.error("%s: history store error: %s", what, exc)
        raise HistoryUnavailable() from None


class PublishIndex:
    """The recorded publishes of one store, kept in memory: recorded time only grows, so an instant before
    the newest known publish is answered by a bisection; a later one first reads the publishes added since."""

    def __init__(self):
        self.as_of: list[int] = []
        self.publishes: list[Publish] = []
        self.lock = threading.Lock()

    def at(self, history: HistoryStore, instant_ms: int) -> Publish | None:
        with self.lock:
            if not self.as_of or instant_ms >= self.as_of[-1]:
                last = self.publishes[-1].seq if self.publishes else 0
                for publish in history.publishes(after=last):
                    self.as_of.append(publish.as_of_ms)
                    self.publishes.append(publish)
            i = bisect.bisect_right(self.as_of, instant_ms) - 1
            return self.publishes[i] if i >= 0 else None

    def until(self, publish: Publish) -> int | None:
        """The ``asOf`` (ms) of the publish after ``publish`` (None: none known)."""
        with self.lock:
            i = bisect.bisect_right(self.as_of, publish.as_of_ms)
            return self.as_of[i] if i < len(self.as_of) else None

    def forget(self) -> None:
        """Drop what is known (after a prune removed publishes this index still listed)."""
        with self.lock:
            self.as_of, self.publishes = [], []


_indexes: dict[str, PublishIndex] = {}


def publish_index(history: HistoryStore) -> PublishIndex:
    with _engines_lock:
        return _indexes.setdefault(history.identity, PublishIndex())


def engine_of(history: HistoryStore, publish: Publish, live=None, *, in_memory: bool = True):
    """The engine of a recorded publish (rebuilt once, then kept among the last few used).

    A rebuild shares every layer whose file is unchanged with an engine in memory (``live``, the engine
    being served, or one kept here), with its indexes and prepared data: only the other layers are read
    from the store and built (docs/history.md → Costs), as masks over the versions held in memory
    (``in_memory``, :mod:`app.history.versions`) or, without, by reading the publish's rows.
    """
    key = (history.identity, publish.seq, publish.snapshot_id)
    with _engines_lock:
        if key in _engines:
            _engines.move_to_end(key)
            return _engines[key]
        from geo.service.loaded import held_layers, rebuild

        donors = [e for e in (live, *reversed(_engines.values())) if e is not None]
        sources: dict = {}
        # the decoded rows are many small acyclic objects (docs/history.md)
        with no_collection(collect_young=True):
            layers, manifest = history.snapshot(
                publish.seq,
                held_layers(donors),
                in_memory=in_memory,
                sources=sources,
                deferred=True,
                donors=donors,
            )
            engine = rebuild(layers, manifest, donors, sources)
        _engines[key] = engine
        while len(_engines) > ENGINES_KEPT:
            _engines.popitem(last=False)
        return engine


def engine_at(history: HistoryStore, publish: Publish, live=None, near=None, until_ms: int | None = None):
    """The engine to answer at the point ``near`` (``(lat, lng)``; None: anywhere) from ``publish``: the
    whole publish's when it is kept, else one built from the rows near the point
    (:func:`app.history.local.engine_near`, the last :data:`NEAR_KEPT` kept), else, when the answer there is
    not provably local or the publish was asked at :data:`NEAR_POINTS` points already, the whole publish's
    (:func:`engine_of`). ``until_ms``: the next publish's ``asOf`` (the instants the engine may answer)."""
    if near is None:
        return engine_of(history, publish, live)
    from .local import NotLocal, engine_near

    key = (history.identity, publish.seq, publish.snapshot_id)
    asked = (*key, float(near[0]), float(near[1]))
    with _engines_lock:
        if key in _engines:
            _engines.move_to_end(key)
            return _engines[key]
        if asked in _near:
            _near.move_to_end(asked)
            return _near[asked]
        if _near_points.get(key, 0) < NEAR_POINTS:
            donors = [e for e in (live, *reversed(_engines.values())) if e is not None]
            try:
                with no_collection(collect_young=True):
                    engine = engine_near(history, publish, donors, asked[3], asked[4], until_ms)
            except NotLocal:
                engine = None
                built["not_local"] += 1
            if engine is not None:
                built["near"] += 1
                if len(_near_points) >= 4096:
                    _near_points.clear()
                _near_points[key] = _near_points.get(key, 0) + 1
                _near[asked] = engine
                while len(_near) > NEAR_KEPT:
                    _near.popitem(last=False)
                return engine
    return engine_of(history, publish, live)


#: the query parameter naming the past instant
PARAMETER = "asOf"


def requested() -> str | None:
    """The raw ``asOf`` parameter (None when absent; 400 when repeated)."""
    values = request.args.getlist(PARAMETER)
    if len(values) > 1:
        raise InvalidRequest(f"asOf is given {len(values)} times; give it once")
    return values[0] if values and values[0] != "" else None


def history_clock(instant: datetime, engine) -> datetime:
    """The data clock at ``instant`` (:func:`app.web.clock.data_now` with the instant as the time)."""
    if current_app.config.get("CLOCK") == "snapshot" and not current_app.config.get("DATA_CLOCK"):
        as_of = getattr(engine, "as_of", None)
        if as_of is not None:
            return as_of
    return instant


def resolve(near=None) -> AsOf | None:
    """The ``asOf`` of this request (None without one); pins its engine for the request: with ``near``
    (the ``(lat, lng)`` the request names), an engine built for that point may answer (:func:`engine_at`;
    a caller whose point turns out another takes :meth:`AsOf.whole`).

    Checks in order: 403 ``plan_required`` (not Enterprise), 400 ``invalid_as_of``, 422 ``as_of_in_future``,
    422 ``as_of_out_of_window`` (before the retention window or before the first recorded publish),
    503 ``history_unavailable``.
    """
    raw = requested()
    if raw is None:
        return None
    return pin(raw, g.account["plan"], near)


def pin(raw: str, plan: str, near=None) -> AsOf:
    """The :class:`AsOf` of the instant ``raw`` for an account of ``plan``, its engine pinned for the request:
    the API's ``asOf`` and the dashboard's "as of" control, with the errors of :func:`resolve`."""
    if plan not in PLANS:
        raise PlanRequired(
            "asOf (the answer at a past instant) is part of the Enterprise plan's 365-day history"
        )
    instant = parse_instant(raw)
    wall = wall_now()
    if instant > wall:
        raise AsOfInFuture(f"asOf={iso(instant)} lies after the current time {iso(wall)}")
    days = int(current_app.config.get("HISTORY_DAYS", 365))
    if instant < wall - timedelta(days=days):
        raise AsOfOutOfWindow(f"asOf={iso(instant)} lies more than {days} days back (the history kept)")
    try:
        history = store()
        index = publish_index(history)
        publish = index.at(history, ms(instant))
        if publish is None:
            first, _last = history.first_last()
            since = f"it starts at {iso(first.as_of)}" if first else "nothing is recorded yet"
            raise AsOfOutOfWindow(f"no snapshot was being served at asOf={iso(instant)}: {since}")
        live = getattr(current_app.extensions.get("urban"), "engine", None)
        try:
            engine = engine_at(history, publish, live, near, index.until(publish))
        except HistoryError:  # pruned since this process listed it: list the publishes again
            index.forget()
            publish = index.at(history, ms(instant))
            if publish is None:
                raise AsOfOutOfWindow(f"asOf={iso(instant)} lies before the kept history") from None
            engine = engine_at(history, publish, live, near, index.until(publish))
    except AsOfOutOfWindow:
        raise
    except Exception as exc:  # the store or a rebuild failed: this instant's answer cannot be given now
        _discard_store()
        current_app.logger.exception("asOf %s: history store error: %s", iso(instant), exc)
        raise HistoryUnavailable() from None
    g.urban_engine = engine
    with _engines_lock:
        local = near is not None and any(e is engine for e in _near.values())
    made_near = (float(near[0]), float(near[1])) if local else None
    g.as_of = found = AsOf(instant, publish, engine, history_clock(instant, engine), made_near)
    return found
