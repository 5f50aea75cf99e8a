"""The changes of one publish for many locations at once: what differs between two publishes' answers.

For arrays of points and the engines of two consecutive publishes (each with the clock of its own
``asOf``), :func:`publish_changes` lists every change of the points' answers as :class:`Change` records,
with the engine's vectorised paths and only for what changed: the works whose listed item differs
(:func:`geo.rules.changes.work_changes`; radius queries over those clusters only), the detours whose
identity, item or period state differs (the ``/disruptions`` matching, per detour a vector test over the
points), the nearest station (one array query per engine), NO2 above/below the EU and WHO figures (the
station hysteresis of :func:`station_levels`, computed once per station, not per point) and the sources
gone stale or recovered. A point outside the service area (no answer) has no change.

A detour "hits" a point while the live answer lists it: in force on one of its days
(:func:`geo.rules.transit.active_detours`, the ``/disruptions`` rule) and matched by the river side and the
lines of the stops within the stop distance; a weekday-only detour starts and stops with its days, at the
Brussels midnight (:func:`geo.rules.transit.turned_at`). See docs/changes.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data.rows import no_collection
from ..rules import changes as ch
from ..rules import transit as tr
from ..rules.selection import far_side
from ..rules.timefmt import NO_END_MS, to_ms
from ..rules.works import RADIUS_KM
from ..service.loaded import prepare
from .score import _indexes, _stops_served, service_mask


@dataclass(frozen=True)
class Change:
    """One change of one point's answer: ``point`` (position in the query arrays), ``type`` (one of
    :data:`geo.rules.changes.EVENT_TYPES`), ``subject`` (``work:<id>``, ``detour:<id>``, ``station``,
    ``no2:eu``, ``no2:who``, ``source:<name>``), the values ``before`` and ``after`` (None: absent), and
    ``valid_ms``: when the change holds in the world (epoch ms; None when only its recording says)."""

    point: int
    type: str
    subject: str
    before: dict | None
    after: dict | None
    valid_ms: int | None


@dataclass(frozen=True)
class Side:
    """One publish as the derivation reads it: its engine, its clock (epoch ms), its NO2 levels after
    reading its series (:func:`station_levels`) and its stale sources (:func:`geo.rules.changes.stale_sources`)."""

    engine: Any  # geo.data.engine.Engine
    now_ms: int
    levels: dict
    stale: dict


# --- NO2 levels per station -----------------------------------------------------------------------------
def station_levels(engine, levels: dict) -> tuple[dict, dict]:
    """Advance every station's hysteresis over ``engine``'s NO2 series: ``(levels, crossings)``, both keyed
    by ``(station id, figure)`` (figures: ``eu``, ``who``); ``levels`` in: those after the previous publish
    (``{}`` at the first). Stations absent from ``engine`` keep their level.

    Examples
    --------
    >>> levels, crossings = station_levels(engine, {})  # doctest: +SKIP
    """
    a = prepare(engine).air
    out, crossings = dict(levels), {}
    for s, sid in enumerate(a.station_ids.tolist()):
        lo, hi = int(a.offsets[s]), int(a.offsets[s + 1])
        if hi <= lo:
            continue
        times, values = a.times_ms[lo:hi].tolist(), a.values[lo:hi].tolist()
        for fig, (rule, _up, _down) in ch.FIGURES.items():
            level, found = ch.advance(rule, levels.get((sid, fig), ch.Level()), times, values)
            out[(sid, fig)] = level
            if found:
                crossings[(sid, fig)] = found
    return out, crossings


def level_json(level: ch.Level) -> list:
    """A level as a JSON list (stored between publishes)."""
    return [level.state, level.run, level.run_from, level.last_hour]


def level_from_json(data) -> ch.Level:
    return ch.Level(*(int(x) for x in data))


# --- works --------------------------------------------------------------------------------------------
def _work_states(engine) -> dict:
    """id -> (cluster, WorkState, lat, lng) of the works clusters listed by ``engine``."""
    w = prepare(engine).works
    return {
        str(item[0]): (k, ch.WorkState(str(item[2]), item[5], item[6], str(item[1])), item[3], item[4])
        for k, item in enumerate(w.items)
    }


def _feed(engine, ids) -> dict:
    """id -> (status, start ms, end ms) in ``engine``'s works layer for ``ids`` (first row of an id)."""
    frame = engine.works
    if not len(frame) or "id" not in frame.columns or not ids:
        return {}
    idcol = frame["id"].astype(str)
    sub = frame[idcol.isin(set(ids)).to_numpy()]
    out = {}
    for i, status, start, end in zip(
        sub["id"].astype(str),
        sub["status"] if "status" in sub.columns else [""] * len(sub),
        sub["start"] if "start" in sub.columns else [None] * len(sub),
        sub["end"] if "end" in sub.columns else [None] * len(sub),
    ):
        if i not in out:
            out[i] = (str(status).strip(), _ms_or_none(start), _ms_or_none(end))
    return out


def _ms_or_none(value) -> int | None:
    if value is None or value != value:
        return None
    try:
        return int(to_ms(value))
    except (TypeError, ValueError):
        return None


def _work_pairs(engine, lat, lng, side, ids: set) -> tuple[np.ndarray, np.ndarray]:
    """(point, cluster) of the listed works clusters with an id in ``ids`` within 2 km of the points."""
    w = prepare(engine).works
    mask = np.fromiter((str(i) in ids for i in w.ids), dtype=bool, count=w.ids.size)
    if not mask.any() or lat.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    point, cl, _km = _indexes(engine).clusters.subset(mask).within_many(lat, lng, RADIUS_KM)
    keep = ~far_side(side[point], w.side[cl])
    return point[keep], cl[keep]


def _work_json(state: ch.WorkState | None) -> dict | None:
    if state is None:
        return None
    return {
        "status": state.status,
        "startDate": state.start,
        "endDate": state.end,
        "description": state.description,
    }


def _works_changes(before: Side, after: Side, lat, lng, side_b, side_a, out: list) -> None:
    wb, wa = _work_states(before.engine), _work_states(after.engine)
    changed = sorted(i for i in wb.keys() | wa.keys() if i not in wb or i not in wa or wb[i][1:] != wa[i][1:])
    if not changed:
        return
    wanted = set(changed)
    feed = _feed(after.engine, wanted)
    # per changed work (its code: position in ``changed``), the events of a point that had it listed
    # before and after, before only, after only: decided once per work, not per point
    code = {wid: k for k, wid in enumerate(changed)}
    events: dict[tuple[int, bool, bool], list] = {}
    for k, wid in enumerate(changed):
        b, a = wb[wid][1] if wid in wb else None, wa[wid][1] if wid in wa else None
        status = feed.get(wid, (None, None, None))
        gone_status = status[0] if wid in feed else None
        for had, has in ((True, True), (True, False), (False, True)):
            sb, sa = (b if had else None), (a if has else None)
            if (had and sb is None) or (has and sa is None):
                continue
            rows = []
            for kind in ch.work_changes(sb, sa, None if sa is not None else gone_status):
                if kind in (ch.WORK_STARTED, ch.WORK_RESCHEDULED):
                    valid = status[1]
                elif kind == ch.WORK_ENDED:
                    valid = status[2]
                else:
                    valid = None
                rows.append((kind, f"work:{wid}", _work_json(sb), _work_json(sa), valid))
            if rows:
                events[(k, had, has)] = rows
    if not events:
        return
    n = len(changed)

    def keys(engine, side):
        point, cl = _work_pairs(engine, lat, lng, side, wanted)
        ids = prepare(engine).works.ids
        codes = np.fromiter((code[str(ids[c])] for c in cl.tolist()), dtype=np.int64, count=cl.size)
        return np.unique(point.astype(np.int64) * n + codes)

    kb, ka = keys(before.engine, side_b), keys(after.engine, side_a)
    for had, has, found in (
        (True, True, np.intersect1d(kb, ka, assume_unique=True)),
        (True, False, np.setdiff1d(kb, ka, assume_unique=True)),
        (False, True, np.setdiff1d(ka, kb, assume_unique=True)),
    ):
        with_rows = np.array([k for (k, h1, h2) in events if (h1, h2) == (had, has)], dtype=np.int64)
        for key in found[np.isin(found % n, with_rows)].tolist():
            out.extend((key // n, *row) for row in events[(key % n, had, has)])


# --- detours ------------------------------------------------------------------------------------------
def _detour_hits(side: Side, lat, lng, point_side, ids: set) -> dict:
    """detour id -> bool array over the points: the detour hits the point (module docstring)."""
    engine = side.engine
    d = prepare(engine).detours
    wanted = [j for j, i in enumerate(d.ids.tolist()) if str(i) in ids]
    if not wanted or lat.size == 0:
        return {}
    live = tr.active_detours(d, side.now_ms)
    words = _indexes(engine).line_words
    near, served = _stops_served(engine, lat, lng)
    out = {}
    for j in wanted:
        if not live[j]:
            continue
        shares = (served & words[j]).any(axis=1)
        out[str(d.ids[j])] = ~far_side(point_side, d.side[j]) & (~near | shares)
    return out


def _detour_items(side: Side) -> dict:
    d = prepare(side.engine).detours
    live = tr.active_detours(d, side.now_ms)
    return {
        str(item[0]): (
            bool(live[j]),
            item[1],
            tuple(item[2]),
            int(d.start_ms[j]),
            int(d.end_ms[j]),
            int(d.days[j]),
        )
        for j, item in enumerate(d.items)
    }


def _detours_changes(before: Side, after: Side, lat, lng, side_b, side_a, stops_same: bool, out) -> None:
    ib, ia = _detour_items(before), _detour_items(after)
    candidates = {
        i for i in ib.keys() | ia.keys() if not stops_same or i not in ib or i not in ia or ib[i] != ia[i]
    }
    if not candidates:
        return
    hb = _detour_hits(before, lat, lng, side_b, candidates)
    ha = _detour_hits(after, lat, lng, side_a, candidates)
    none = np.zeros(lat.size, dtype=bool)
    by_id = {str(it[0]): it for it in prepare(before.engine).detours.items}
    by_id.update({str(it[0]): it for it in prepare(after.engine).detours.items})
    for did in sorted(hb.keys() | ha.keys()):
        was, now = hb.get(did, none), ha.get(did, none)
        moved = np.flatnonzero(was != now)
        if not moved.size:
            continue
        item, period = by_id[did], ia[did] if did in ia else ib[did]
        value = {"title": item[1], "lines": list(item[2]), "severity": item[3], "endDate": item[5]}
        end = period[4] if period[4] != NO_END_MS else None
        turned = tr.turned_at(period[3], period[4], period[5], before.now_ms, after.now_ms)
        started_at = turned if turned is not None and period[0] else period[3]
        stopped_at = (
            turned
            if turned is not None and not period[0]
            else (end if end is not None and end <= after.now_ms else None)
        )
        subject = f"detour:{did}"
        for point, started in zip(moved.tolist(), now[moved].tolist()):
            if started:
                out.append((point, ch.DETOUR_STARTED, subject, None, value, started_at))
            else:
                out.append((point, ch.DETOUR_STOPPED, subject, value, None, stopped_at))


# --- stations and NO2 ---------------------------------------------------------------------------------
def _nearest_codes(before: Side, after: Side, lat, lng) -> tuple[np.ndarray, np.ndarray, list]:
    """(code before, code after, station ids by code) of the nearest NO2 station per point; code 0: none.
    One array query per engine (one in all when both publishes hold the same stations layer)."""
    index: dict = {"": 0}  # station id -> code, in order of first sight

    def codes(engine):
        if lat.size == 0:
            return np.zeros(0, dtype=np.int64)
        idx, _km = engine.nearest_station(lat, lng)
        ids = prepare(engine).air.station_ids.tolist()
        table = np.array([index.setdefault(str(i), len(index)) for i in ids] + [0], dtype=np.int64)
        return table[np.where(idx >= 0, idx, len(ids))]

    ca = codes(after.engine)
    stations = _layer_hash(after.engine, "stations")
    cb = (
        ca
        if stations is not None and stations == _layer_hash(before.engine, "stations")
        else codes(before.engine)
    )
    return cb, ca, list(index)


def _no2_json(station: str, level: ch.Level, fig: str, value=None, hour=None) -> dict:
    rule = ch.FIGURES[fig][0]
    out = {"station": station or None, "state": ch.STATE_NAMES[level.state], "figure": rule.figure}
    if value is not None:
        out["value"] = value
        out["hour"] = hour
    return out


def _no2_changes(before: Side, after: Side, lat, lng, crossings: dict, out: list) -> None:
    cb, ca, names = _nearest_codes(before, after, lat, lng)
    moved = np.flatnonzero(cb != ca)
    for point in moved.tolist():
        if cb[point] and ca[point]:
            out.append(
                (
                    point,
                    ch.STATION_CHANGED,
                    "station",
                    {"station": names[cb[point]]},
                    {"station": names[ca[point]]},
                    None,
                )
            )
    # the points that kept their station, grouped by it (one sort, not one scan per station)
    kept = np.flatnonzero((cb == ca) & (ca > 0))
    order = kept[np.argsort(ca[kept], kind="stable")]
    bounds = np.searchsorted(ca[order], np.arange(len(names) + 1))
    group = {names[k]: order[bounds[k] : bounds[k + 1]].tolist() for k in range(1, len(names))}
    for fig, (_rule, up, down) in ch.FIGURES.items():
        # same station: each crossing the station's series confirmed in this publish
        for (sid, f), found in sorted(crossings.items()):
            if f != fig:
                continue
            points = group.get(sid, [])
            for x in found:
                kind = up if x.state == ch.ABOVE else down
                other = ch.BELOW if x.state == ch.ABOVE else ch.ABOVE
                b = _no2_json(sid, ch.Level(other), fig)
                a = _no2_json(sid, ch.Level(x.state), fig, x.value, x.hour)
                a["since"] = x.since
                for point in points:
                    out.append((point, kind, f"no2:{fig}", b, a, x.hour))
        # another station: its level against the former one's
        for point in moved.tolist():
            sb, sa = names[cb[point]], names[ca[point]]
            lb = before.levels.get((sb, fig), ch.Level())
            la = after.levels.get((sa, fig), ch.Level())
            if ch.UNKNOWN in (lb.state, la.state) or lb.state == la.state:
                continue
            kind = up if la.state == ch.ABOVE else down
            out.append((point, kind, f"no2:{fig}", _no2_json(sb, lb, fig), _no2_json(sa, la, fig), None))


def _layer_hash(engine, layer: str):
    return ((getattr(engine, "manifest", None) or {}).get("layers", {}).get(layer) or {}).get("sha256")


# --- sources --------------------------------------------------------------------------------------------
def _source_changes(before: Side, after: Side, points: np.ndarray, out: list) -> None:
    for source in sorted(before.stale.keys() | after.stale.keys()):
        was, now = before.stale.get(source, False), after.stale.get(source, False)
        if was == now:
            continue
        kind = ch.SOURCE_STALE if now else ch.SOURCE_RECOVERED
        for point in points.tolist():
            out.append((point, kind, f"source:{source}", {"stale": was}, {"stale": now}, None))


def publish_changes(before: Side, after: Side, lat, lng, crossings: dict) -> list[Change]:
    """Every change of the answers at the points (float64 degree arrays) from publish ``before`` to
    ``after``, ordered by (point, event type, subject, valid time); ``crossings``: those
    :func:`station_levels` found reading ``after``'s series. Points outside the service area of either
    publish have none.

    Examples
    --------
    >>> changes = publish_changes(before, after, lat, lng, crossings)  # doctest: +SKIP
    """
    with no_collection():
        return _publish_changes(before, after, lat, lng, crossings)


def _publish_changes(before: Side, after: Side, lat, lng, crossings: dict) -> list[Change]:
    lat = np.asarray(lat, dtype=np.float64)
    lng = np.asarray(lng, dtype=np.float64)
    _, in_b = service_mask(before.engine, lat, lng)
    _, in_a = service_mask(after.engine, lat, lng)
    ok = np.flatnonzero(in_b & in_a)
    plat, plng = lat[ok], lng[ok]
    out: list[tuple] = []  # (point, type, subject, before, after, valid_ms): made into Change once, sorted
    if ok.size:
        side_b = before.engine.river_side(plat, plng)
        side_a = after.engine.river_side(plat, plng)
        _works_changes(before, after, plat, plng, side_b, side_a, out)
        stops_same = _layer_hash(before.engine, "stops") == _layer_hash(after.engine, "stops")
        _detours_changes(before, after, plat, plng, side_b, side_a, stops_same, out)
        _no2_changes(before, after, plat, plng, crossings, out)
        _source_changes(before, after, np.arange(ok.size), out)
    rank = ch.TYPE_RANK
    out.sort(key=lambda r: (r[0], rank[r[1]], r[2], r[5] or 0))
    ids = ok.tolist()
    return [Change(ids[p], kind, subject, b, a, valid) for p, kind, subject, b, a, valid in out]
