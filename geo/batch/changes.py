"""The changes of one publish for many locations at once: what differs between two publishes' answers.

For arrays of points and the engines of two consecutive publishes (each with the clock of its own
``asOf``), :func:`publish_changes` lists every change of the points' answers as :class:`Change` records,
with the engine's vectorised paths and only for what changed: the works whose listed item differs
(:func:`geo.rules.changes.work_changes`; radius queries over those clusters only), the detours whose
identity, item or period state differs (the ``/disruptions`` matching, per detour a vector test over the
points), the nearest station (one array query per engine), NO2 above/below the EU and WHO figures (the
station hysteresis of :func:`station_levels`, computed once per station, not per point) and the sources
gone stale or recovered. A point outside the service area (no answer) has no change.

A detour "hits" a point while its period is in force (``start <= now < end``) and it is listed for the
point by the ``/disruptions`` rules (river side, lines of the stops within the stop distance); its
weekdays are not looked at, so a weekday-only detour does not start and stop every week. See
docs/changes.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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

    engine: object
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
    changed = {i for i in wb.keys() | wa.keys() if i not in wb or i not in wa or wb[i][1:] != wa[i][1:]}
    if not changed:
        return
    pb, cb = _work_pairs(before.engine, lat, lng, side_b, changed)
    pa, ca = _work_pairs(after.engine, lat, lng, side_a, changed)
    ids_b = prepare(before.engine).works.ids
    ids_a = prepare(after.engine).works.ids
    feed = _feed(after.engine, changed)
    was = {(int(p), str(ids_b[c])) for p, c in zip(pb.tolist(), cb.tolist())}
    now = {(int(p), str(ids_a[c])) for p, c in zip(pa.tolist(), ca.tolist())}
    for point, wid in sorted(was | now):
        b = wb[wid][1] if (point, wid) in was else None
        a = wa[wid][1] if (point, wid) in now else None
        status = feed.get(wid, (None, None, None))
        for kind in ch.work_changes(b, a, None if a is not None else (status[0] if wid in feed else None)):
            if kind == ch.WORK_STARTED or kind == ch.WORK_RESCHEDULED:
                valid = status[1]
            elif kind == ch.WORK_ENDED:
                valid = status[2]
            else:
                valid = None
            out.append((point, kind, f"work:{wid}", _work_json(b), _work_json(a), valid))


# --- detours ------------------------------------------------------------------------------------------
def _detour_hits(side: Side, lat, lng, point_side, ids: set) -> dict:
    """detour id -> bool array over the points: the detour hits the point (module docstring)."""
    engine = side.engine
    d = prepare(engine).detours
    wanted = [j for j, i in enumerate(d.ids.tolist()) if str(i) in ids]
    if not wanted or lat.size == 0:
        return {}
    live = tr.in_force(d.start_ms, d.end_ms, side.now_ms)
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
    live = tr.in_force(d.start_ms, d.end_ms, side.now_ms)
    return {
        str(item[0]): (bool(live[j]), item[1], tuple(item[2]), int(d.start_ms[j]), int(d.end_ms[j]))
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
        item, period = by_id[did], ia.get(did) or ib.get(did)
        value = {"title": item[1], "lines": list(item[2]), "severity": item[3], "endDate": item[5]}
        end = period[4] if period[4] != NO_END_MS else None
        stopped_at = end if end is not None and end <= after.now_ms else None
        subject = f"detour:{did}"
        for point, started in zip(moved.tolist(), now[moved].tolist()):
            if started:
                out.append((point, ch.DETOUR_STARTED, subject, None, value, period[3]))
            else:
                out.append((point, ch.DETOUR_STOPPED, subject, value, None, stopped_at))


# --- stations and NO2 ---------------------------------------------------------------------------------
def _nearest_ids(engine, lat, lng) -> np.ndarray:
    """Nearest NO2 station id per point ('' when none)."""
    if lat.size == 0:
        return np.zeros(0, dtype=object)
    idx, _km = engine.nearest_station(lat, lng)
    ids = prepare(engine).air.station_ids
    out = np.full(lat.size, "", dtype=object)
    ok = idx >= 0
    out[ok] = ids[idx[ok]]
    return out


def _no2_json(station: str, level: ch.Level, fig: str, value=None, hour=None) -> dict:
    rule = ch.FIGURES[fig][0]
    out = {"station": station or None, "state": ch.STATE_NAMES[level.state], "figure": rule.figure}
    if value is not None:
        out["value"] = value
        out["hour"] = hour
    return out


def _no2_changes(before: Side, after: Side, lat, lng, crossings: dict, out: list) -> None:
    sb = _nearest_ids(before.engine, lat, lng)
    sa = _nearest_ids(after.engine, lat, lng)
    moved = np.flatnonzero(sb != sa)
    for point in moved.tolist():
        if sb[point] and sa[point]:
            out.append(
                (point, ch.STATION_CHANGED, "station", {"station": sb[point]}, {"station": sa[point]}, None)
            )
    # the points that kept their station, grouped by it (station ids as codes: one sort, not one scan each)
    kept = np.flatnonzero(sb == sa)
    names, codes = np.unique(sa[kept].astype(str), return_inverse=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(names.size + 1))
    group = {str(n): kept[order[bounds[k] : bounds[k + 1]]].tolist() for k, n in enumerate(names) if n}
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
            lb = before.levels.get((sb[point], fig), ch.Level())
            la = after.levels.get((sa[point], fig), ch.Level())
            if ch.UNKNOWN in (lb.state, la.state) or lb.state == la.state:
                continue
            kind = up if la.state == ch.ABOVE else down
            out.append(
                (
                    point,
                    kind,
                    f"no2:{fig}",
                    _no2_json(sb[point], lb, fig),
                    _no2_json(sa[point], la, fig),
                    None,
                )
            )


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
