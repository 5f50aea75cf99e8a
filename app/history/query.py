"""The history resources' queries: what the store knows about one point over a window of time.

Given a :class:`~app.history.store.HistoryStore`, a point and a window ``[start_ms, end_ms)`` (epoch ms,
half-open), these functions answer from the recorded row versions and the read indexes written with them;
distances, the nearest station and the detour matching are ``geo``'s own rules, applied to the versions
(never a second definition):

- :func:`no2_series`: one :class:`No2Value` per hour of the window: the measured value (None when unknown:
  never 0) of the NO2 station nearest to the point at that hour, as last recorded;
- :func:`works_near`: each work within ``radius_km`` of the point (``geo.Engine.works_near``: the distance to
  the work's extent) in some publish served during the window, with its first and last sighting and every
  recorded change of status, start, end and description (:class:`WorkHistory`);
- :func:`detours_hitting`: each detour the live answer listed at some instant of the window
  (:class:`DetourHit`).

A publish is *served during the window* when it was the one being served at some instant of it: the one
served at ``start_ms`` and every later one whose ``asOf`` is before ``end_ms``. ``upto`` (a publish ``seq``)
pins what is known: versions recorded after it are ignored and those it still carried count as current, so
the pages of one paged answer read the same history while new publishes are recorded. Results are plain
dataclasses (times in epoch ms); the API, the dossier and the change feed serialise them.

Examples
--------
>>> series = no2_series(store, 51.2194, 4.4025, start_ms, end_ms)        # doctest: +SKIP
>>> [w.id for w in works_near(store, 51.2194, 4.4025, start_ms, end_ms)]  # doctest: +SKIP
['1100028', ...]
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import repeat
from typing import NamedTuple

import numpy as np

from . import rows as rowcodec
from .store import OPEN, HistoryStore, _unpack

HOUR_MS = 3_600_000
_MAX_MS = 2**62  # after every instant
WORK_FIELDS = ("status", "start", "end", "description")  # the changes a work's log lists
_CHUNK = 500  # keys per IN (...) list


# --- results ---------------------------------------------------------------------------------------
class No2Value(NamedTuple):
    """One hour of the NO2 series: ``t`` the row's ``timestamp`` (the end of the measured hour, as IRCEL
    publishes it), ``value`` in µg/m³ (None: not measured or not recorded), the station nearest to the point
    at that hour (None: no NO2 station) and its distance. (A named tuple: a year is 8,760 of them.)"""

    t: int
    value: float | None
    station_id: str | None
    station_name: str | None
    station_km: float | None


@dataclass(frozen=True)
class Change:
    """One entry of a change log: at publish ``seq`` (recorded at ``recorded_ms``, its ``asOf``) the item
    ``appeared``, ``disappeared``, or ``changed`` ``field`` from ``before`` to ``after``."""

    recorded_ms: int
    seq: int
    kind: str  # "appeared" | "changed" | "disappeared"
    field: str | None = None
    before: object = None
    after: object = None


@dataclass
class Version:
    """One recorded version of a row: its values (column -> value, times in epoch ms, geometry as a Shapely
    geometry) and the publishes that carried it: ``rec_from`` to ``rec_to`` (exclusive; None: still
    current)."""

    key: str
    rec_from: int
    rec_to: int | None
    values: dict


@dataclass
class WorkHistory:
    """One work near the point: ``current`` the last version served during the window, ``distance_km`` the
    least distance of its versions served then, first and last sighting over the kept history (``listed``:
    the newest publish still carries it), every version, and the changes recorded during the window."""

    id: str
    distance_km: float
    current: Version
    first_seen_ms: int
    last_seen_ms: int
    listed: bool
    versions: list[Version]
    changes: list[Change] = field(default_factory=list)


@dataclass
class DetourHit:
    """One detour listed at the point during the window: the last version that hit, first and last sighting,
    and the first and last instant (``hit_from_ms``, ``hit_to_ms``) of the window at which it was listed."""

    id: str
    current: Version
    first_seen_ms: int
    last_seen_ms: int
    listed: bool
    hit_from_ms: int
    hit_to_ms: int


# --- publishes -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Served:
    """The publishes served during a window: ``first`` to ``last`` (seq, inclusive), ``as_of`` their asOf
    by seq (plus the next one's, which ends ``last``'s serving, when there is one), ``newest`` the newest
    publish known (``upto`` when given)."""

    first: int
    last: int
    newest: int
    as_of: dict[int, int]

    def seqs(self) -> range:
        return range(self.first, self.last + 1)

    def span(self, seq: int, start_ms: int, end_ms: int) -> tuple[int, int]:
        """The part of the window publish ``seq`` was served: ``[from, to)`` (empty when from >= to)."""
        begin = max(self.as_of[seq], start_ms)
        after = self.as_of.get(seq + 1) if seq < self.newest else None
        return begin, min(after, end_ms) if after is not None else end_ms


def newest_seq(store: HistoryStore) -> int:
    """The newest recorded publish (0 when none): what an ``upto`` pins."""
    row = store.execute("SELECT MAX(seq) FROM history_publish").fetchone()
    return int(row[0] or 0)


def served(store: HistoryStore, start_ms: int, end_ms: int, upto: int | None = None) -> Served | None:
    """The publishes served during ``[start_ms, end_ms)`` (None: none was), with ``upto`` the newest one
    considered."""
    limit = newest_seq(store) if upto is None else upto
    row = store.execute(
        "SELECT MAX(seq) FROM history_publish WHERE as_of_ms <= ? AND seq <= ?", (start_ms, limit)
    ).fetchone()
    first = row[0]
    if first is None:
        row = store.execute(
            "SELECT MIN(seq) FROM history_publish WHERE as_of_ms < ? AND seq <= ?", (end_ms, limit)
        ).fetchone()
        first = row[0]
        if first is None:
            return None
    rows = store.execute(
        "SELECT seq, as_of_ms FROM history_publish WHERE seq >= ? AND seq <= ? AND (seq = ? OR as_of_ms < ?) "
        "ORDER BY seq",
        (first, limit, first, end_ms),
    ).fetchall()
    as_of = {int(s): int(t) for s, t in rows}
    last = max(as_of)
    if last < limit:
        nxt = store.execute("SELECT as_of_ms FROM history_publish WHERE seq = ?", (last + 1,)).fetchone()
        if nxt is not None:
            as_of[last + 1] = int(nxt[0])
    return Served(int(first), last, limit, as_of)


def _as_of_of(store: HistoryStore, seqs) -> dict[int, int]:
    out: dict[int, int] = {}
    wanted = sorted(set(seqs))
    for i in range(0, len(wanted), _CHUNK):
        part = wanted[i : i + _CHUNK]
        marks = ",".join("?" * len(part))
        out.update(
            (int(s), int(t))
            for s, t in store.execute(
                f"SELECT seq, as_of_ms FROM history_publish WHERE seq IN ({marks})",  # noqa: S608
                part,
            )
        )
    return out


# --- decoding versions -----------------------------------------------------------------------------
_schemas: dict[str, tuple[list[str], dict[str, str]]] = {}
_schemas_lock = threading.Lock()


def _schema_of(store: HistoryStore, seqs, layer: str) -> dict[int, tuple[list[str], dict[str, str]]]:
    """Per publish: the column names of ``layer`` and the kind of its special columns (time unit, WKB)."""
    import pyarrow as pa

    out = {}
    wanted = sorted(set(seqs))
    for i in range(0, len(wanted), _CHUNK):
        part = wanted[i : i + _CHUNK]
        marks = ",".join("?" * len(part))
        for seq, data in store.execute(
            f"SELECT seq, manifest FROM history_publish WHERE seq IN ({marks})",  # noqa: S608
            part,
        ).fetchall():
            schema_hash = json.loads(store.manifest_json(data))["history"][layer]["schema"]
            with _schemas_lock:
                known = _schemas.get(schema_hash)
            if known is None:
                schema = pa.ipc.read_schema(pa.py_buffer(store._blob(schema_hash)))
                kinds = {}
                for f in schema:
                    if pa.types.is_timestamp(f.type):
                        kinds[f.name] = f.type.unit
                    elif pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type):
                        kinds[f.name] = "wkb"
                known = ([f.name for f in schema], kinds)
                with _schemas_lock:
                    _schemas[schema_hash] = known
            out[int(seq)] = known
    return out


_PER_MS = {"s": 1000, "ms": 1, "us": 1 / 1000, "ns": 1 / 1_000_000}


def _decode(schema: tuple[list[str], dict[str, str]], data: bytes, shapes: dict) -> dict:
    """A row's values by column; ``shapes`` (WKB hex -> geometry) makes versions with the same geometry
    share one object (measured once)."""
    import shapely

    names, kinds = schema
    values = dict(zip(names, json.loads(_unpack(data))))
    for name, kind in kinds.items():
        v = values.get(name)
        if v is None:
            continue
        if kind == "wkb":
            if v not in shapes:
                shapes[v] = shapely.from_wkb(bytes.fromhex(v))
            values[name] = shapes[v]
        else:
            values[name] = int(v * _PER_MS[kind])
    return values


def _versions(store: HistoryStore, layer: str, where: str, params, upto: int) -> list[Version]:
    """The versions of ``layer`` matching ``where`` (over ``history_row r``), recorded up to ``upto``,
    decoded under the schema of the publish that first carried each; ordered by (key, rec_from)."""
    found = store.execute(
        "SELECT r.key, r.rec_from, r.rec_to, b.data FROM history_row r JOIN history_blob b ON b.hash = r.hash "
        f"WHERE r.layer = ? AND r.rec_from <= ? AND ({where}) ORDER BY r.key, r.rec_from",  # noqa: S608
        (layer, upto, *params),
    ).fetchall()
    schemas = _schema_of(store, [int(r[1]) for r in found], layer)
    shapes: dict = {}
    out = []
    for key, rec_from, rec_to, data in found:
        rec_to = int(rec_to)
        out.append(
            Version(
                str(key),
                int(rec_from),
                None if rec_to == OPEN or rec_to > upto else rec_to,
                _decode(schemas[int(rec_from)], data, shapes),
            )
        )
    return out


def _versions_of_keys(store: HistoryStore, layer: str, keys, upto: int) -> list[Version]:
    out: list[Version] = []
    keys = sorted(set(keys))
    for i in range(0, len(keys), _CHUNK):
        part = keys[i : i + _CHUNK]
        out += _versions(store, layer, f"r.key IN ({','.join('?' * len(part))})", part, upto)
    out.sort(key=lambda v: (v.key, v.rec_from))
    return out


def _in_window(v: Version, span: Served) -> bool:
    return v.rec_from <= span.last and (v.rec_to is None or v.rec_to > span.first)


def _changes(versions: list[Version], as_of: dict, start_ms: int, end_ms: int, fields) -> list[Change]:
    """The changes of one item (its versions, oldest first) recorded during the window."""
    out = []
    previous = None
    for v in versions:
        at = as_of[v.rec_from]
        if start_ms <= at < end_ms:
            if previous is not None and previous.rec_to == v.rec_from:
                for name in fields:
                    before, after = previous.values.get(name), v.values.get(name)
                    if before != after:
                        out.append(Change(at, v.rec_from, "changed", name, before, after))
            else:
                out.append(Change(at, v.rec_from, "appeared"))
        if v.rec_to is not None:
            gone = as_of[v.rec_to]
            if start_ms <= gone < end_ms and not any(w.rec_from == v.rec_to for w in versions):
                out.append(Change(gone, v.rec_to, "disappeared"))
        previous = v
    return out


def _sightings(versions: list[Version], as_of: dict[int, int], newest_ms: int) -> tuple[int, int, bool]:
    """(first seen, last seen, still listed) of one item's versions: the asOf of the first publish that
    carried it and of the last one (``newest_ms``, the newest's, when it is still carried)."""
    first = as_of[versions[0].rec_from]
    ends = [v.rec_to for v in versions if v.rec_to is not None]
    if len(ends) < len(versions):
        return first, newest_ms, True
    return first, as_of[max(ends) - 1], False


# --- layers that change rarely (stations, stops, river) ---------------------------------------------
def _layer_changes(store: HistoryStore, span: Served, layers: tuple[str, ...]) -> list[int]:
    """The publishes among those served at which one of ``layers`` changed (the first one included)."""
    found = {span.first}
    for layer in layers:
        for a, b in store.execute(
            "SELECT DISTINCT rec_from, rec_to FROM history_row WHERE layer = ? AND rec_from <= ? AND rec_to > ?",
            (layer, span.last, span.first),
        ):
            found.update(s for s in (int(a), int(b)) if span.first < s <= span.last)
    return sorted(found)


def _layer_state(store: HistoryStore, layers: tuple[str, ...], seq: int) -> int:
    """The last publish up to ``seq`` at which one of ``layers`` changed: publishes with the same state
    carry the same rows of them (what the per-store caches key on)."""
    state = 0
    for layer in layers:
        opened, closed = store.execute(
            "SELECT (SELECT MAX(rec_from) FROM history_row WHERE layer = ? AND rec_from <= ? AND rec_to > ?), "
            "(SELECT MAX(rec_to) FROM history_row WHERE layer = ? AND rec_to <= ?)",
            (layer, seq, seq, layer, seq),
        ).fetchone()
        state = max(state, int(opened or 0), int(closed or 0))
    return state


# --- NO2 -------------------------------------------------------------------------------------------
_station_engines: OrderedDict = OrderedDict()
_station_lock = threading.Lock()


def _stations_engine(store: HistoryStore, seq: int):
    """The engine of publish ``seq``'s stations layer alone (kept per store and layer content)."""
    from geo.data.engine import Engine

    key = (store.identity, "stations", _layer_state(store, ("stations",), seq))
    with _station_lock:
        if key in _station_engines:
            _station_engines.move_to_end(key)
            return _station_engines[key]
    meta = store.manifest(seq)["history"].get("stations")
    layers = {}
    if meta is not None:
        found = store.layer_rows(seq, "stations")
        order = rowcodec.unpack_order(store._blob(meta["order"])) if meta["order"] else None
        ordered = [found[k] for k in rowcodec.order_keys(found, order)]
        layers["stations"] = rowcodec.decode_layer(store._blob(meta["schema"]), ordered)
    engine = Engine.from_layers(layers, {})
    with _station_lock:
        _station_engines[key] = engine
        while len(_station_engines) > 8:
            _station_engines.popitem(last=False)
    return engine


def _nearest_station(engine, lat: float, lng: float) -> tuple[str | None, str | None, float | None]:
    from geo.service.air import nearest_no2_station

    row, km = nearest_no2_station(engine, lat, lng)
    if row < 0:
        return None, None, None
    stations = engine.stations
    name = stations["name"].iat[row] if "name" in stations.columns else None
    return str(stations["id"].iat[row]), None if name is None else str(name), float(km)


def no2_series(
    store: HistoryStore, lat: float, lng: float, start_ms: int, end_ms: int, upto: int | None = None
) -> list[No2Value]:
    """The hourly NO2 series at a point: one :class:`No2Value` per whole hour ``t`` with
    ``start_ms <= t < end_ms``, oldest first.

    The station is the one nearest to the point (``geo``'s rule, :func:`geo.service.air.nearest_no2_station`)
    among the NO2 stations of the publish served at ``t`` (the first recorded publish for an hour before it); the value is that station's measured value for the hour in its latest recorded
    version (recorded up to ``upto``), None when the station did not measure it or it was never recorded: an
    unknown value is never 0 and never another station's.
    """
    first_hour = -(-start_ms // HOUR_MS) * HOUR_MS
    hours = range(first_hour, end_ms, HOUR_MS)
    # a window before the first publish: its values may still have been recorded by it (a publish carries
    # the last 48 hours), and its stations say which was nearest
    span = served(store, start_ms, end_ms, upto)
    if span is None:
        later = served(store, start_ms, _MAX_MS, upto)
        if later is not None:
            span = Served(later.first, later.first, later.newest, {later.first: later.as_of[later.first]})
    if span is None or not hours:
        return [No2Value(t, None, None, None, None) for t in hours]
    # segments of the window with one stations layer: [from_ms, to_ms) -> nearest station
    changes = _layer_changes(store, span, ("stations",))
    bounds = [span.as_of[s] for s in changes[1:]] + [end_ms]
    out: list[No2Value] = []
    begin = first_hour
    for seq, until in zip(changes, bounds):
        seg_hours = range(begin, min(end_ms, -(-until // HOUR_MS) * HOUR_MS), HOUR_MS)
        if not seg_hours:
            continue
        station, name, km = _nearest_station(_stations_engine(store, seq), lat, lng)
        values: dict[int, float | None] = {}
        if station is not None:
            # (t, value) pairs in (t, rec_from) order: in the dict the latest version of an hour wins
            values = dict(
                store.execute(
                    "SELECT t, value FROM history_series WHERE layer = 'no2' AND series = ? AND t >= ? "
                    "AND t < ? AND rec_from <= ? ORDER BY t, rec_from",
                    (station, seg_hours.start, seg_hours.stop, span.newest),
                ).fetchall()
            )
        out += map(
            No2Value._make,
            zip(seg_hours, map(values.get, seg_hours), repeat(station), repeat(name), repeat(km)),
        )
        begin = seg_hours.stop
    return out


# --- works -----------------------------------------------------------------------------------------
def _degrees(lat: float, km: float) -> tuple[float, float]:
    """A margin in degrees of latitude and longitude that covers ``km`` around ``lat`` (1 % slack)."""
    dlat = km / 111.19 * 1.01 + 1e-9
    cos = math.cos(math.radians(min(89.0, abs(lat) + dlat)))
    return dlat, km / (111.19 * cos) * 1.01 + 1e-9


def works_near(
    store: HistoryStore,
    lat: float,
    lng: float,
    start_ms: int,
    end_ms: int,
    radius_km: float = 2.0,
    upto: int | None = None,
) -> list[WorkHistory]:
    """Each work within ``radius_km`` of the point in some publish served during the window, by (distance,
    id); the distance is ``geo``'s (:meth:`geo.data.engine.Engine.works_near`'s index, :func:`geo.data.engine.extent_index`: to the work's extent), over
    the work's versions served then. Works are listed one by one (GIPOD ids), whatever their status, also
    on the far river bank (the live answer collapses and filters; a history keeps every record)."""
    from geo.data.engine import extent_index

    span = served(store, start_ms, end_ms, upto)
    if span is None:
        return []
    dlat, dlng = _degrees(lat, radius_km)
    near = [
        h
        for (h,) in store.execute(
            "SELECT hash FROM history_extent WHERE max_lat >= ? AND min_lat <= ? AND max_lng >= ? AND min_lng <= ?",
            (lat - dlat, lat + dlat, lng - dlng, lng + dlng),
        )
    ]
    # the contents near the point, then their versions by the partial hash index (SQLite, without
    # statistics, would rather scan every version of the layer: told which index to use)
    hint = "" if store.postgres else " INDEXED BY history_row_hash_works"
    candidates: set[str] = set()
    for i in range(0, len(near), _CHUNK):
        part = near[i : i + _CHUNK]
        candidates.update(
            str(k)
            for (k,) in store.execute(
                f"SELECT key FROM history_row{hint} WHERE layer = 'works' AND hash IN "  # noqa: S608
                f"({','.join('?' * len(part))}) AND rec_to > ? AND rec_from <= ?",
                (*part, span.first, span.last),
            )
        )
    if not candidates:
        return []
    versions = _versions_of_keys(store, "works", candidates, span.newest)
    in_window = [v for v in versions if _in_window(v, span)]
    # each distinct (key, geometry) measured once: a change of status or dates keeps the extent
    distinct: dict[tuple[str, int], object] = {}
    for v in in_window:
        distinct.setdefault((v.key, id(v.values.get("geometry"))), v.values.get("geometry"))
    keys = [k for k, _g in distinct]
    geoms = np.array(list(distinct.values()), dtype=object)
    idx, km = extent_index(geoms, np.array(keys, dtype=object)).within(lat, lng, radius_km)
    best: dict[str, float] = {}
    for i, k in zip(idx.tolist(), km.tolist()):
        best[keys[i]] = min(best.get(keys[i], math.inf), k)
    by_key: dict[str, list[Version]] = {}
    for v in versions:
        by_key.setdefault(v.key, []).append(v)
    seqs = {v.rec_from for v in versions} | {v.rec_to for v in versions if v.rec_to is not None}
    seqs |= {v.rec_to - 1 for v in versions if v.rec_to is not None}
    as_of: dict[int, int] = {**_as_of_of(store, seqs - span.as_of.keys()), **span.as_of}
    newest_ms = _as_of_of(store, [span.newest])[span.newest]
    out = []
    for key, km_ in best.items():
        log = by_key[key]
        current = [v for v in log if _in_window(v, span)][-1]
        first, last, listed = _sightings(log, as_of, newest_ms)
        out.append(
            WorkHistory(
                str(current.values.get("id", key)),
                km_,
                current,
                first,
                last,
                listed,
                log,
                _changes(log, as_of, start_ms, end_ms, WORK_FIELDS),
            )
        )
    out.sort(key=lambda w: (w.distance_km, w.id))
    return out


# --- detours ---------------------------------------------------------------------------------------
_contexts: OrderedDict = OrderedDict()


def _context_engine(store: HistoryStore, seq: int):
    """The engine of publish ``seq``'s stops and river layers alone (what matching a detour to a point
    reads), kept per store and content."""
    from geo.data.engine import Engine

    key = (store.identity, "stops+river", _layer_state(store, ("stops", "river"), seq))
    with _station_lock:
        if key in _contexts:
            _contexts.move_to_end(key)
            return _contexts[key]
    meta = store.manifest(seq)["history"]
    layers = {}
    for layer in ("stops", "river"):
        if layer not in meta:
            continue
        found = store.layer_rows(seq, layer)
        order = rowcodec.unpack_order(store._blob(meta[layer]["order"])) if meta[layer]["order"] else None
        ordered = [found[k] for k in rowcodec.order_keys(found, order)]
        layers[layer] = rowcodec.decode_layer(store._blob(meta[layer]["schema"]), ordered)
    engine = Engine.from_layers(layers, {})
    with _station_lock:
        _contexts[key] = engine
        while len(_contexts) > 4:
            _contexts.popitem(last=False)
    return engine


def _stop_keys_near(engine, lat: float, lng: float) -> tuple[bool, set]:
    """(a stop lies within the stop distance, the line keys serving those stops: ``geo.rules.transit``)."""
    from geo.rules import transit as tr

    stops, _km = engine.stops_near(lat, lng, tr.STOP_RADIUS_KM)
    frame = engine.stops
    keys: set = set()
    for i in stops.tolist():
        row = frame.iloc[i]
        keys.update(tr.stop_keys(row.get("line_ids", ""), row.get("lines", ""), row.get("entity", "")))
    return bool(stops.size), keys


def _listed_somewhen(start_ms: int, end_ms: int, days: int) -> int | None:
    """The first instant of ``[start_ms, end_ms)`` whose Europe/Brussels weekday is one of ``days`` (the
    detour rule :func:`geo.rules.transit.active_at`), None when there is none. A local day starts on a whole
    UTC hour, so the start and the whole hours after it are the candidates."""
    from geo.rules import transit as tr
    from geo.rules.calendar import local_hour_kind

    if start_ms >= end_ms:
        return None
    if days & tr.ALL_DAYS == tr.ALL_DAYS:  # every day: in force from the start
        return start_ms
    first_hour = -(-start_ms // HOUR_MS) * HOUR_MS
    stop = min(end_ms, first_hour + 8 * 24 * HOUR_MS)
    instants = np.array([start_ms, *range(first_hour, stop, HOUR_MS)], dtype=np.int64)
    instants = instants[instants < end_ms]
    weekday = local_hour_kind(instants)[2]
    ok = tr.active_at(np.int64(start_ms), np.int64(end_ms), np.int64(days), instants, weekday)
    hits = np.flatnonzero(ok)
    return int(instants[hits[0]]) if hits.size else None


def _listed_last(start_ms: int, end_ms: int, days: int) -> int:
    """The end of the last stretch of ``[start_ms, end_ms)`` on one of ``days`` (exclusive)."""
    from geo.rules import transit as tr
    from geo.rules.calendar import local_hour_kind

    if days & tr.ALL_DAYS == tr.ALL_DAYS:  # every day: in force to the end
        return end_ms
    last_hour = ((end_ms - 1) // HOUR_MS) * HOUR_MS
    begin = max(start_ms, last_hour - 8 * 24 * HOUR_MS)
    instants = np.array([*range(last_hour, begin - 1, -HOUR_MS)], dtype=np.int64)
    instants = instants[instants >= start_ms]
    weekday = local_hour_kind(instants)[2] if instants.size else np.zeros(0, np.int64)
    end = end_ms
    for t, w in zip(instants.tolist(), weekday.tolist()):  # walking back from the end
        if (days >> int(w)) & 1:
            return end
        end = t
    return end


def detours_hitting(
    store: HistoryStore, lat: float, lng: float, start_ms: int, end_ms: int, upto: int | None = None
) -> list[DetourHit]:
    """Each detour the live answer listed at the point at some instant of the window, by (first instant
    listed, id): in force then (start, end and days: :func:`geo.rules.transit.active_at`), in the Antwerp
    region, not on the far river bank, and sharing a line with a stop within 400 m of the point, or any when
    no stop lies that near (``geo``'s rules — :mod:`geo.rules.transit`, :mod:`geo.rules.selection`, read as
    :mod:`geo.rules.prepared` reads a detours layer — over the stops, river and detours of each publish served
    then)."""
    from geo.data.engine import RIVER_NONE, geometry_coords
    from geo.rules import transit as tr
    from geo.rules.selection import matched, near_side
    from geo.rules.timefmt import NO_END_MS

    span = served(store, start_ms, end_ms, upto)
    if span is None:
        return []
    versions = _versions(
        store, "detours", "r.rec_to > ? AND r.rec_from <= ?", (span.first, span.last), span.newest
    )
    if not versions:
        return []
    hits: dict[str, list] = {}
    changes = _layer_changes(store, span, ("stops", "river"))
    bounds = changes[1:] + [span.last + 1]
    # per version, the prepared detour fields (geo.rules.prepared's reading of a detours layer)
    region = tr.antwerp_region(
        [v.values.get("region") for v in versions], [v.values.get("entity") for v in versions]
    )
    keys = [
        set(tr.detour_keys(tr.line_details(v.values.get("line_details")), v.values.get("lines")))
        for v in versions
    ]
    begins = [v.values.get("start") for v in versions]
    starts = np.array([np.iinfo(np.int64).min if t is None else t for t in begins], dtype=np.int64)
    ends = np.array(
        [NO_END_MS if v.values.get("end") is None else v.values["end"] for v in versions], dtype=np.int64
    )
    days = np.array([tr.day_mask(v.values.get("days")) for v in versions], dtype=np.int64)
    d_lat, d_lng = geometry_coords(np.array([v.values.get("geometry") for v in versions], dtype=object))
    for seg_first, seg_next in zip(changes, bounds):
        seg = [
            i
            for i, v in enumerate(versions)
            if region[i] and v.rec_from < seg_next and (v.rec_to is None or v.rec_to > seg_first)
        ]
        if not seg:
            continue
        engine = _context_engine(store, seg_first)
        side = int(engine.river_side(lat, lng)[0])
        d_side = np.full(len(seg), RIVER_NONE, dtype=np.int8)
        ok = np.isfinite(d_lat[seg]) & np.isfinite(d_lng[seg])
        if ok.any():
            d_side[ok] = engine.river_side(d_lat[seg][ok], d_lng[seg][ok])
        stops_near, stop_keys = _stop_keys_near(engine, lat, lng)
        served_ = np.array([bool(keys[i] & stop_keys) for i in seg], dtype=bool)
        shown = matched(near_side(side, d_side), stops_near, served_)
        for j in np.flatnonzero(shown).tolist():
            i = seg[j]
            v = versions[i]
            a = max(v.rec_from, seg_first)
            b = min(v.rec_to if v.rec_to is not None else span.last + 1, seg_next)
            begin = max(span.as_of[a], start_ms, int(starts[i]))
            after = span.as_of.get(b) if b <= span.newest else None
            until = min(end_ms if after is None else min(after, end_ms), int(ends[i]))
            first = _listed_somewhen(begin, until, int(days[i]))
            if first is None:
                continue
            hits.setdefault(v.key, []).append((first, _listed_last(first, until, int(days[i])), v))
    if not hits:
        return []
    log = _versions_of_keys(store, "detours", hits, span.newest)
    seqs = {v.rec_from for v in log} | {v.rec_to - 1 for v in log if v.rec_to is not None}
    as_of: dict[int, int] = {**_as_of_of(store, seqs - span.as_of.keys()), **span.as_of}
    newest_ms = _as_of_of(store, [span.newest])[span.newest]
    out = []
    for key, found in hits.items():
        mine = [v for v in log if v.key == key]
        first, last, listed = _sightings(mine, as_of, newest_ms)
        found.sort(key=lambda h: (h[0], h[2].rec_from))
        current = max(found, key=lambda h: h[2].rec_from)[2]
        out.append(
            DetourHit(
                str(current.values.get("id", key)),
                current,
                first,
                last,
                listed,
                found[0][0],
                max(h[1] for h in found),
            )
        )
    out.sort(key=lambda h: (h.hit_from_ms, h.id))
    return out
