"""Per-snapshot precomputation for the data-endpoint rules: :func:`build`, called once per loaded snapshot
by :class:`geo.service.loaded.LoadedSnapshot` (``geo.service.loaded.prepare(engine)`` returns its copy).

Everything that does not depend on the query point or the clock is computed here from the engine's layers:
status classes and collapsed works clusters with their river side, Antwerp-region detours with their line
keys (identities, docs/rules.md → Transit "Matching"), severity, delay and river side, a stop x line bit matrix,
and per-station measured NO2 series.
Requests then only index these arrays.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import shapely

from . import transit as tr
from . import works as wk
from ..data.engine import RIVER_NONE, _read_only_points, point_coords
from ..index.extents import Extents
from .timefmt import NO_END_MS, column_ms, day_strings, iso_utc_ms, local_day_numbers, to_ms


def _col(frame, name, default=None):
    if name in frame.columns:
        return frame[name].to_numpy(dtype=object)
    return np.full(len(frame), default, dtype=object)


def _times(frame, name):
    """A time column as it is (converted at once by ``column_ms``), else all missing."""
    return frame[name].reset_index(drop=True) if name in frame.columns else _col(frame, name)


def _coords(frame):
    """(lat, lng) of a point layer; NaN for missing or empty geometries."""
    if len(frame) == 0:
        return np.zeros(0), np.zeros(0)
    geom = np.asarray(frame.geometry.values, dtype=object)
    bad = shapely.is_missing(geom) | shapely.is_empty(geom)
    lat, lng = np.full(geom.size, np.nan), np.full(geom.size, np.nan)
    pts = shapely.point_on_surface(geom[~bad])
    lng[~bad], lat[~bad] = shapely.get_x(pts), shapely.get_y(pts)
    return lat, lng


def _sides(engine, lat, lng):
    side = np.full(lat.size, RIVER_NONE, dtype=np.int8)
    ok = np.isfinite(lat) & np.isfinite(lng)
    if ok.any():
        side[ok] = engine.river_side(lat[ok], lng[ok])
    return side


@dataclass(frozen=True)
class Works:
    """Collapsed works clusters (index = cluster) and the row -> cluster map."""

    row_cluster: np.ndarray  # over engine.works rows: cluster of a representative row, else -1
    ids: np.ndarray
    description: np.ndarray
    status: np.ndarray  # Dutch status string of the representative
    status_class: np.ndarray  # wk.RUNNING / wk.PLANNED
    lat: np.ndarray
    lng: np.ndarray
    start_date: np.ndarray  # 'YYYY-MM-DD' (earliest member start, Brussels date)
    end_date: np.ndarray  # 'YYYY-MM-DD' or None (latest member end; None if any is open-ended)
    occurrences: np.ndarray  # members per cluster
    side: np.ndarray  # river side of the representative point
    member_cluster: np.ndarray  # planned members of planned clusters: their cluster ...
    member_start_day: np.ndarray  # ... and local start date (days since epoch)
    extents: Extents  # per cluster: the representative's point and extent (what distances measure)
    items: list  # per cluster: JSON-ready (id, description, status, lat, lng, start, end, n, hindrance)
    templates: list  # per cluster: its /disruptions item (work_template; copy before use)


@dataclass(frozen=True)
class Detours:
    """Antwerp-region detours (index = detour) and the stop x line bit matrix."""

    ids: np.ndarray
    id_rank: np.ndarray  # rank of the id in string order (tie-break of the distance sort)
    titles: np.ndarray
    lines: list  # tuples of normalised public line numbers (shown)
    keys: list  # tuples of line keys (tr.detour_keys: identities, else public numbers; matched)
    line_bits: np.ndarray  # (n_detours, n_bytes) uint8, packed over the line-key vocabulary
    stop_bits: np.ndarray  # (n_stops, n_bytes) uint8: the detours' line keys serving each stop
    start_ms: np.ndarray
    end_ms: np.ndarray  # NO_END_MS when open-ended
    end_date: np.ndarray  # 'YYYY-MM-DD' or None
    days: np.ndarray  # weekday bit masks
    severity: np.ndarray  # tr.LOW / MEDIUM / HIGH
    delay_min: np.ndarray
    lat: np.ndarray  # detour point (NaN when it has none)
    lng: np.ndarray
    side: np.ndarray
    lat_r: np.ndarray  # detour point in radians and cos(latitude), for the distance sort
    lng_r: np.ndarray
    cos_lat: np.ndarray
    items: list  # per detour: JSON-ready (id, title, lines, severity, delay, endDate, lineDetails)


@dataclass(frozen=True)
class Air:
    """Measured NO2 series per station row (CSR) plus station names and the LEZ name."""

    offsets: np.ndarray  # n_stations + 1
    times_ms: np.ndarray  # end-of-hour timestamps, ascending within a station
    values: np.ndarray  # µg/m³ rounded to 0.1, NaN for null
    station_ids: np.ndarray
    station_names: np.ndarray
    lez_name: str
    no2_rows: np.ndarray  # station rows measuring NO2 with a point, ascending
    no2_lat_r: np.ndarray  # their latitude / longitude in radians and cos(latitude)
    no2_lng_r: np.ndarray
    no2_cos: np.ndarray


@dataclass(frozen=True)
class Prepared:
    works: Works
    detours: Detours
    air: Air
    retrieved_at: str  # oldest retrievedAt of the works / detours / stops layers


def build(engine, reuse=()) -> Prepared:
    """The prepared rule data of ``engine`` (a new object on every call: keep the one of the snapshot's
    :class:`geo.service.loaded.LoadedSnapshot`).

    ``reuse``: ``(engine, prepared)`` pairs built before; a part whose layers (:data:`PARTS`) are the very
    frames of such an engine is taken from its ``prepared`` instead of being computed again.

    Examples
    --------
    >>> build(engine).works.ids.size <= len(engine.works)  # doctest: +SKIP
    True
    """
    parts: dict = {}
    for part, (make, layers) in PARTS.items():
        shared = (
            getattr(prepared, part)
            for other, prepared in reuse
            if all(other.layer_object(layer) is engine.layer_object(layer) for layer in layers)
        )
        found = next(shared, None)
        parts[part] = make(engine) if found is None else found
    return Prepared(**parts, retrieved_at=_retrieved_at(engine))


def _work_rows(frame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise parts of the works: status (stripped), id (text) and description key."""
    status = np.array(
        [s.strip() if isinstance(s, str) else "" for s in _col(frame, "status", "")], dtype=object
    )
    ids = np.array([str(x) for x in _col(frame, "id", "")], dtype=object)
    keys = np.array([wk.description_key(d) for d in _col(frame, "description", "")], dtype=object)
    return status, ids, keys


_NO_START = np.iinfo(np.int64).max  # a member without a start: after every start


def occurrences_of(value) -> int:
    """A work's GIPOD occurrences: a whole number above 0, else 1. The same for a row whatever the other rows
    hold (an integer column with a null elsewhere is read as floats: ``3.0`` is 3).

    Examples
    --------
    >>> [occurrences_of(x) for x in (3, np.int64(2), 3.0, float("nan"), 2.5, 0, None, True)]
    [3, 2, 3, 1, 1, 1, 1, 1]
    """
    if isinstance(value, (bool, np.bool_)):
        return 1
    if isinstance(value, (int, np.integer)):
        return int(value) if value > 0 else 1
    if isinstance(value, (float, np.floating)) and value == value and value > 0 and float(value).is_integer():
        return int(value)
    return 1


def _work_values(frame) -> tuple:
    """Row-wise parts of the works beyond :func:`_work_rows`: status class; start and end (ms, known); GIPOD
    occurrences; description text; and the item parts a work alone in its cluster has (start and end dates,
    hindrance, then the whole item and its ``/disruptions`` template)."""
    status, ids, _keys = _work_rows(frame)
    cls = wk.status_class(status)
    lat, lng = point_coords(frame)
    start_ms, has_start = column_ms(_times(frame, "start"))
    end_ms, has_end = column_ms(_times(frame, "end"))
    start_ms = np.where(has_start, start_ms, NO_END_MS)  # unknown start sorts last, never "upcoming"
    end_ms = np.where(has_end, end_ms, NO_END_MS)
    occ = np.array([occurrences_of(x) for x in _col(frame, "occurrences", 1)], dtype=np.int64)
    desc = np.array([d if isinstance(d, str) else "" for d in _col(frame, "description", "")], dtype=object)
    start_day = np.zeros(len(frame), dtype=np.int64)  # meaningful where the start is known
    start_day[has_start] = local_day_numbers(start_ms[has_start])
    start_date = np.full(len(frame), None, dtype=object)
    start_date[has_start] = day_strings(start_day[has_start])
    end_date = np.full(len(frame), None, dtype=object)
    ok = end_ms != NO_END_MS
    end_date[ok] = day_strings(local_day_numbers(end_ms[ok]))
    hindrance = np.empty(len(frame), dtype=object)
    hindrance[:] = wk.cluster_hindrance(
        np.arange(len(frame)), len(frame), _col(frame, "hindrance", -1), _col(frame, "consequences", "")
    )
    items = np.empty(len(frame), dtype=object)
    items[:] = _items(ids, desc, status, lat, lng, start_date, end_date, occ, hindrance)
    templates = np.empty(len(frame), dtype=object)
    templates[:] = [work_template(item) for item in items]
    return (
        cls,
        start_ms,
        has_start,
        start_day,
        end_ms,
        occ,
        desc,
        start_date,
        end_date,
        hindrance,
        items,
        templates,
    )


def work_template(item: tuple) -> dict:
    """The ``/disruptions`` construction item of a cluster's :attr:`Works.items` entry, in its key order;
    ``distanceKm`` is set per request (copy it first)."""
    i, desc, status, la, ln, start, end, n, h = item
    return {
        "id": i,
        "description": desc,
        "status": status,
        "lat": la,
        "lng": ln,
        "distanceKm": None,
        "startDate": start,
        "endDate": end,
        "occurrences": n,
        "hindrance": h,
    }


def _items(ids, desc, status, lat, lng, start_date, end_date, occurrences, hindrance) -> list:
    """JSON-ready cluster items (id, description, status, lat, lng, start, end, n, hindrance)."""
    return [
        (str(i), str(d), str(s), round(float(a), 6) + 0.0, round(float(b), 6) + 0.0, sd, ed, int(n), h)
        for i, d, s, a, b, sd, ed, n, h in zip(
            ids.tolist(),
            desc.tolist(),
            status.tolist(),
            lat.tolist(),
            lng.tolist(),
            start_date.tolist(),
            end_date.tolist(),
            occurrences.tolist(),
            hindrance,
        )
    ]


def _collapse(engine, listed, desc, lat, lng, keys) -> np.ndarray:
    """:func:`geo.rules.works.collapse_labels` of the ``listed`` works rows; for works taken from a row source,
    by the collapse links among its rows (extended as rows are appended, not built per snapshot)."""
    found = engine.row_source("works")
    if found is not None:
        source, positions = found

        def extend(links, _start, stop):
            _status, _ids, every_key = source.derived("prepared.works", _work_rows)
            every_lat, every_lng = source.derived("points", _read_only_points)
            return (links or wk.CollapseLinks()).extend(stop, every_key, every_lat, every_lng)

        labels = source.grown("prepared.works.links", extend).labels(positions[listed])
        if labels is not None:
            return labels
    return wk.collapse_labels(desc[listed], lat[listed], lng[listed], keys=keys[listed])


def _works(engine) -> Works:
    status, ids, keys = engine.per_row("works", "prepared.works", _work_rows)
    n = status.size
    cls, start_ms, has_start, start_day, end_ms, occ, desc, start_date, end_date, hindrance, alone, dicts = (
        engine.per_row("works", "prepared.works.values", _work_values)
    )
    lat, lng = engine.layer_points("works")
    listed = np.flatnonzero((cls != wk.NOT_LISTED) & np.isfinite(lat))

    labels = _collapse(engine, listed, desc, lat, lng, keys)
    rep_local = wk.representatives(labels, cls[listed], start_ms[listed], ids[listed])
    rep = listed[rep_local]
    k = rep.size
    row_cluster = np.full(n, -1, dtype=np.int64)
    row_cluster[rep] = np.arange(k)
    # GIPOD occurrences of every collapsed work (a work with no count stands for one)
    occurrences = np.bincount(labels, weights=occ[listed], minlength=k).astype(np.int64)

    # a work alone in its cluster is its own item; a cluster of several takes its members' span and hindrance
    items, templates = alone[rep].tolist(), dicts[rep].tolist()
    start_date_of, end_date_of = start_date, end_date
    start_date, end_date = start_date[rep], end_date[rep]
    several = np.flatnonzero(np.bincount(labels, minlength=k) > 1)
    if several.size:
        member = np.isin(labels, several)
        rows, cluster = listed[member], labels[member]
        # the earliest start and the latest end are a member's: its dates (None: unknown start, open end)
        first = _extreme(cluster, np.where(has_start[rows], start_ms[rows], _NO_START), rows, several)
        last = _extreme(cluster, -end_ms[rows], rows, several)
        start_date[several], end_date[several] = start_date_of[first], end_date_of[last]
        merged = wk.merged_hindrance(np.searchsorted(several, cluster), several.size, hindrance[rows])
        r = rep[several]
        for c, item in zip(
            several.tolist(),
            _items(
                ids[r],
                desc[r],
                status[r],
                lat[r],
                lng[r],
                start_date[several],
                end_date[several],
                occurrences[several],
                merged,
            ),
        ):
            items[c], templates[c] = item, work_template(item)

    cluster_cls = cls[rep]
    planned_member = (cluster_cls[labels] == wk.PLANNED) & has_start[listed]
    return Works(
        extents=engine.work_extents.take(rep),
        items=items,
        templates=templates,
        row_cluster=row_cluster,
        ids=ids[rep],
        description=desc[rep],
        status=status[rep],
        status_class=cluster_cls,
        lat=lat[rep],
        lng=lng[rep],
        start_date=start_date,
        end_date=end_date,
        occurrences=occurrences,
        side=_sides(engine, lat[rep], lng[rep]),
        member_cluster=labels[planned_member],
        member_start_day=start_day[listed][planned_member],
    )


def _extreme(cluster, value, rows, clusters) -> np.ndarray:
    """Per cluster of ``clusters`` (ascending, each with a member), the row of its member of least ``value``
    (``cluster``, ``value``, ``rows``: per member)."""
    order = np.lexsort((value, cluster))
    first = np.r_[True, cluster[order][1:] != cluster[order][:-1]]
    return rows[order[first]]


def _detours(engine) -> Detours:
    frame = engine.detours
    rows = np.flatnonzero(tr.antwerp_region(_col(frame, "region", ""), _col(frame, "entity", "")))
    sub = frame.iloc[rows]
    lines = [tr.split_lines(x) for x in _col(sub, "lines")]
    details = [tr.line_details(x) for x in _col(sub, "line_details", "")]
    keys = [tr.detour_keys(dt, ls) for dt, ls in zip(details, _col(sub, "lines", ""))]
    vocab = {key: i for i, key in enumerate(sorted({x for ks in keys for x in ks}))}
    n_bytes = max(1, -(-len(vocab) // 8))

    def bits(key_sets):
        dense = np.zeros((len(key_sets), n_bytes * 8), dtype=bool)
        for r, ks in enumerate(key_sets):
            cols = [vocab[x] for x in ks if x in vocab]
            dense[r, cols] = True
        return np.packbits(dense, axis=1)

    stop_rows, stop_key_codes, stop_key_names = engine.per_layer(
        "stops", "transit.stop_key_pairs", _stop_key_pairs
    )

    start_ms, has_start = column_ms(_times(sub, "start"))
    end_ms, has_end = column_ms(_times(sub, "end"))
    start_ms = np.where(has_start, start_ms, np.iinfo(np.int64).min)
    end_ms = np.where(has_end, end_ms, NO_END_MS)
    end_date = np.full(len(sub), None, dtype=object)
    if has_end.any():
        end_date[has_end] = day_strings(local_day_numbers(end_ms[has_end]))
    n_unserved = np.array([tr.count_items(x) for x in _col(sub, "unserved_stops")], dtype=np.int64)
    n_lines = np.array([len(ks) for ks in keys], dtype=np.int64)
    published = np.asarray(sub["delay_min"], dtype=np.float64) if "delay_min" in sub.columns else None
    delay = tr.delay_minutes(n_unserved, published)
    lat, lng = _coords(sub)
    ids = np.array([str(x) for x in _col(sub, "id", "")], dtype=object)
    titles = np.array([t if isinstance(t, str) else "" for t in _col(sub, "title", "")], dtype=object)
    sev = tr.severity(n_unserved, n_lines, delay)
    items = [
        (str(i), str(t), list(ls), tr.SEVERITY_NAMES[int(v)], int(m), e, [_shown(d) for d in dt])
        for i, t, ls, v, m, e, dt in zip(ids, titles, lines, sev, delay, end_date, details)
    ]
    lat_r, lng_r = np.radians(lat), np.radians(lng)
    return Detours(
        lat_r=lat_r,
        lng_r=lng_r,
        cos_lat=np.cos(lat_r),
        items=items,
        ids=ids,
        id_rank=np.unique(ids.astype(str), return_inverse=True)[1] if ids.size else np.zeros(0, np.int64),
        titles=titles,
        lines=lines,
        keys=keys,
        line_bits=bits(keys),
        stop_bits=_stop_bits(len(engine.stops), stop_rows, stop_key_codes, stop_key_names, vocab, n_bytes),
        start_ms=start_ms,
        end_ms=end_ms,
        end_date=end_date,
        days=np.array([tr.day_mask(x) for x in _col(sub, "days", "")], dtype=np.int64),
        severity=sev,
        delay_min=delay,
        lat=lat,
        lng=lng,
        side=_sides(engine, lat, lng),
    )


def _stop_keys(stops) -> list:
    return [
        tr.stop_keys(i, x, e)
        for i, x, e in zip(_col(stops, "line_ids", ""), _col(stops, "lines", ""), _col(stops, "entity", ""))
    ]


def _stop_key_pairs(stops) -> tuple:
    """The stops' line keys (:func:`geo.rules.transit.stop_keys`) as pairs: per pair its stop row and key
    code, and the distinct keys (index = code)."""
    per_stop = _stop_keys(stops)
    names: dict = {}
    codes = [names.setdefault(key, len(names)) for keys in per_stop for key in keys]
    rows = np.repeat(np.arange(len(per_stop)), [len(keys) for keys in per_stop])
    return rows, np.array(codes, dtype=np.int64), list(names)


def _stop_bits(n_stops: int, rows, codes, names: list, vocab: dict, n_bytes: int) -> np.ndarray:
    """(n_stops, n_bytes) uint8: the detours' line keys (``vocab``: key -> bit) serving each stop, packed."""
    bit = np.array([vocab.get(key, -1) for key in names], dtype=np.int64)[codes] if names else codes
    dense = np.zeros((n_stops, n_bytes * 8), dtype=bool)
    dense[rows[bit >= 0], bit[bit >= 0]] = True
    return np.packbits(dense, axis=1)


_DETAIL_MEMBERS = ("entity", "number", "mode", "network", "region", "regionName")


def _shown(detail: dict) -> dict:
    """One ``lineDetails`` entry of a transit item: the public number as ``lines`` shows it, then the line's
    identity and attributes as published (null when unknown)."""
    out: dict[str, str | None] = {"line": tr.normalise_line(detail.get("line") or "")}
    for k in _DETAIL_MEMBERS:
        v = detail.get(k)
        out[k] = str(v) if v not in (None, "") else None
    return out


def _no2_rows(rows) -> tuple:
    """Row-wise parts of the NO2 hours: measured or not, station id (text), hour (ms, known), value."""
    measured = np.array([str(k).strip().lower() == "measured" for k in _col(rows, "kind", "")], dtype=bool)
    sids = np.array([str(s) for s in _col(rows, "station_id", "")], dtype=object)
    t_ms, has_t = column_ms(_times(rows, "timestamp"))
    values = np.asarray(rows["value"], dtype=np.float64) if "value" in rows.columns else np.zeros(len(rows))
    return measured, sids, t_ms, has_t, values


def _station_rows(stations) -> tuple:
    """The stations' ids (text), names, NO2 flags and the row of each id (the last row of an id)."""
    station_ids = np.array([str(x) for x in _col(stations, "id", "")], dtype=object)
    names = np.array([x if isinstance(x, str) else "" for x in _col(stations, "name", "")], dtype=object)
    flag = np.array([x is True or x == 1 for x in _col(stations, "no2", False)], dtype=bool)
    for shared in (station_ids, names, flag):  # shared by the engines of these very stations
        shared.flags.writeable = False
    row_of = {sid: i for i, sid in enumerate(station_ids)}
    return station_ids, names, flag, row_of


def _air(engine) -> Air:
    stations = engine.stations
    station_ids, station_names, flag, row_of = engine.per_layer(
        "stations", "prepared.air.stations", _station_rows
    )
    measured, sids, t_ms, has_t, values = engine.per_row("no2", "prepared.air", _no2_rows)
    srow = np.array([row_of.get(s, -1) for s in sids.tolist()], dtype=np.int64)
    keep = measured & (srow >= 0) & has_t
    srow, t_ms, values = srow[keep], t_ms[keep], values[keep]
    order = np.lexsort((t_ms, srow))
    srow, t_ms, values = srow[order], t_ms[order], values[order]
    # one value per (station, timestamp): the last row of the layer wins
    last = np.r_[(srow[1:] != srow[:-1]) | (t_ms[1:] != t_ms[:-1]), True] if srow.size else np.zeros(0, bool)
    srow, t_ms, values = srow[last], t_ms[last], values[last]
    values = np.where(np.isfinite(values), np.round(values, 1), np.nan)
    offsets = np.searchsorted(srow, np.arange(len(stations) + 1), side="left")
    names = _col(engine.lez, "name", "")
    s_lat, s_lng = engine.layer_points("stations")
    no2_rows = np.flatnonzero(flag & np.isfinite(s_lat))
    lat_r, lng_r = np.radians(s_lat[no2_rows]), np.radians(s_lng[no2_rows])
    return Air(
        no2_rows=no2_rows,
        no2_lat_r=lat_r,
        no2_lng_r=lng_r,
        no2_cos=np.cos(lat_r),
        offsets=offsets,
        times_ms=t_ms,
        values=values,
        station_ids=station_ids,
        station_names=station_names,
        lez_name=str(names[0]) if len(names) and isinstance(names[0], str) else "Lage-emissiezone Antwerpen",
    )


#: each part of :class:`Prepared`: how it is made and the engine layers it reads (its river sides: ``river``)
PARTS = {
    "works": (_works, ("works", "river")),
    "detours": (_detours, ("detours", "stops", "river")),
    "air": (_air, ("stations", "no2", "lez")),
}


def _retrieved_at(engine) -> str:
    layers = engine.manifest.get("layers", {}) or {}
    stamps = []
    for name in ("works", "detours", "stops"):
        value = (layers.get(name) or {}).get("retrievedAt")
        if value:
            stamps.append(_stamp_ms(value))
    if stamps:
        return iso_utc_ms(min(stamps))
    if engine.as_of is not None:
        return iso_utc_ms(engine.as_of)
    return iso_utc_ms(0)


@functools.lru_cache(maxsize=256)
def _stamp_ms(value) -> int:
    """Epoch ms of a manifest's ``retrievedAt`` (UTC when it has no offset); neighbouring snapshots share most."""
    stamp = pd.Timestamp(value)
    return to_ms(stamp.tz_convert("UTC") if stamp.tzinfo else stamp.tz_localize("UTC"))
