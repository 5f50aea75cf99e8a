"""Batch scoring: the data-endpoint figures for many points at once, one row per input point.

The rules are those of :mod:`geo.service.disruptions`, :mod:`geo.service.air` and :mod:`geo.service.briefing`, applied to whole
arrays: per-engine prepared data from :mod:`geo.rules.prepared`, the rule functions of :mod:`geo.rules.works`,
:mod:`geo.rules.transit`, :mod:`geo.rules.airrules` and :func:`geo.service.briefing.risk_score`, and radius pairs aggregated
per chunk (:mod:`geo.batch.pairs`), never all (point, work) pairs at once. See docs/scoring.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..rules import airrules as ar
from ..service import briefing as br
from ..rules import transit as tr
from ..rules import works as wk
from ..rules.airrules import window_values
from ..coords import as_arrays, valid_mask
from ..rules.selection import far_side
from ..rules.works import RADIUS_KM
from ..data.engine import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT, point_coords
from ..errors import InvalidCoordinates
from ..index.count_table import CountTable
from ..index.extents import ExtentIndex
from ..index.point_index import PointIndex
from ..service.loaded import loaded, prepare
from .pairs import pairs_within
from ..rules.timefmt import iso_utc_ms, to_ms

OK, INVALID, OUTSIDE = 0, 1, 2
STATUS_NAMES = ("ok", "invalid_coordinates", "outside_service_area")
RIVER_NAMES = {RIVER_NONE: "none", RIVER_LEFT: "left", RIVER_RIGHT: "right"}

#: output columns in order (see docs/scoring.md for their meaning and the API field each one equals)
COLUMNS = (
    "status",
    "in_service_area",
    "in_lez",
    "river_side",
    "no2_station_id",
    "no2_station_name",
    "no2_station_km",
    "no2_value",
    "no2_measured_at",
    "no2_trend",
    "no2_trend_percent",
    "no2_compliance",
    "active_works",
    "planned_works",
    "upcoming_works_14d",
    "transit_disruptions",
    "high_severity_transit",
    "transit_fallback",
    "risk",
    "risk_score",
)
#: float columns with a few distinct values per snapshot and clock (one per station, or per risk outcome)
FEW_VALUES = ("no2_value", "no2_trend_percent", "risk_score")


@dataclass(frozen=True)
class _Indexes:
    """Point indexes of the works clusters and of the stops, built once per engine."""

    clusters: ExtentIndex  # over prepare(engine).works clusters (row = cluster; their extents)
    stops: PointIndex  # over engine.stops rows
    stop_words: np.ndarray  # (n_stops, n_words) uint64: the stop x line bits of prepare(engine).detours
    line_words: np.ndarray  # (n_detours, n_words) uint64: the detour line bits


def _words(bits: np.ndarray) -> np.ndarray:
    """Packed uint8 bit rows as uint64 words (zero-padded)."""
    n, nb = bits.shape
    pad = -nb % 8
    if pad:
        bits = np.hstack([bits, np.zeros((n, pad), dtype=np.uint8)])
    return np.ascontiguousarray(bits).view(np.uint64).reshape(n, bits.shape[1] // 8)


def per_engine(key: str, engine, build):
    """``build(engine)``, made once per loaded snapshot (:meth:`geo.service.loaded.LoadedSnapshot.derived`)."""
    return loaded(engine).derived(key, build)


def _indexes(engine) -> _Indexes:
    return per_engine("batch.indexes", engine, _build_indexes)


def _build_indexes(engine) -> _Indexes:
    p = prepare(engine)
    s_lat, s_lng = point_coords(engine.stops)
    s_ids = engine.stops["id"].astype(str).to_numpy() if "id" in engine.stops.columns else None
    return _Indexes(
        clusters=ExtentIndex(p.works.extents, p.works.ids),
        stops=PointIndex(s_lat, s_lng, s_ids),
        stop_words=_words(p.detours.stop_bits),
        line_words=_words(p.detours.line_bits),
    )


# --- inputs -----------------------------------------------------------------------------------------
def _points_arrays(points, lat: str, lng: str):
    """(lat, lng float arrays with NaN for unusable values, index or None) of the accepted inputs."""
    if isinstance(points, pd.DataFrame):
        if lat in points.columns and lng in points.columns:
            return _numeric(points[lat]), _numeric(points[lng]), points.index
        geometry = getattr(points, "geometry", None) if hasattr(points, "active_geometry_name") else None
        if geometry is not None and points.active_geometry_name is not None:
            geometry = geometry.to_crs("EPSG:4326") if geometry.crs is not None else geometry
            import shapely

            geom = np.asarray(geometry.values, dtype=object)
            is_point = shapely.get_type_id(geom) == 0
            x, y = shapely.get_x(geom), shapely.get_y(geom)
            return np.where(is_point, y, np.nan), np.where(is_point, x, np.nan), points.index
        raise KeyError(
            f"points has no columns {lat!r}/{lng!r} and no point geometry; columns are {list(points.columns)}"
        )
    if isinstance(points, tuple) and len(points) == 2:
        la, ln = as_arrays(*(_numeric(v) for v in points))
        return la, ln, None
    raise TypeError("points must be a DataFrame / GeoDataFrame or a (lat, lng) tuple of arrays")


def _numeric(values) -> np.ndarray:
    """float64 array; values that are not numbers become NaN (reported as invalid coordinates)."""
    if isinstance(values, pd.Series):
        if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
            return values.to_numpy(dtype=np.float64, na_value=np.nan)
        return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    try:
        return np.atleast_1d(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError):
        return pd.to_numeric(
            pd.Series(np.atleast_1d(np.asarray(values, dtype=object))), errors="coerce"
        ).to_numpy(dtype=np.float64, na_value=np.nan)


def service_mask(engine, la: np.ndarray, ln: np.ndarray):
    """(valid, inside) bool arrays: usable coordinates, and those inside the service area (the points the
    API answers for)."""
    valid = valid_mask(la, ln)
    inside = np.zeros(la.size, dtype=bool)
    if valid.any():
        inside[valid] = engine.in_service_area(la[valid], ln[valid])
    return valid, inside


# --- rules over arrays ------------------------------------------------------------------------------
def _clock(engine, now):
    if now is None:
        if engine.as_of is None:
            raise ValueError("now is required: the snapshot's manifest has no asOf")
        return engine.as_of
    return now


#: cell sizes of the works count tables: 250 m (about a third of the pairs within reach need a distance)
WORKS_CELL_KM = {RADIUS_KM: RADIUS_KM / 8, br.NEAR_WORK_KM: RADIUS_KM / 8}
_SIDES = np.array([RIVER_NONE, RIVER_LEFT, RIVER_RIGHT], dtype=np.int8)


def _works_tables(engine):
    """(CountTable within RADIUS_KM, CountTable within NEAR_WORK_KM) over the works clusters, or None."""
    w = prepare(engine).works
    tables = tuple(CountTable(w.lat, w.lng, r, cell, w.extents) for r, cell in WORKS_CELL_KM.items())
    return tables if all(t.usable for t in tables) else None


def _works_counts(engine, lat, lng, side, now):
    """(active, planned, upcoming, active within 0.5 km) per point, far-side clusters dropped.

    Counted per status channel and query river side (the group whose far-side clusters are left out)
    through the per-engine :class:`CountTable` s (a cell lookup plus the exact distance of the cell's
    boundary clusters); the pair walk when no table can be built."""
    tables = per_engine("batch.works_tables", engine, _works_tables)
    if tables is None:
        return _works_counts_pairs(engine, lat, lng, side, now)
    w = prepare(engine).works
    running = w.status_class == wk.RUNNING
    planned = w.status_class == wk.PLANNED
    upcoming = planned & wk.upcoming_clusters(w, now)
    kind = np.where(running, 0, np.where(upcoming, 2, np.where(planned, 1, -1)))
    kept = ~far_side(_SIDES[:, None], w.side[None, :])  # (query side, cluster): not on the far side
    group = side.astype(np.int64)  # the query's side is its row of kept clusters
    wide = tables[0].counts(lat, lng, np.where(kept & (kind >= 0), kind, -1), 3, group=group)
    near = tables[1].counts(lat, lng, np.where(kept & running, 0, -1), 1, group=group)
    out = np.empty((4, lat.size), dtype=np.int64)
    out[0], out[2], out[3] = wide[:, 0], wide[:, 2], near[:, 0]
    out[1] = wide[:, 1] + wide[:, 2]
    return out


def _works_counts_pairs(engine, lat, lng, side, now):
    """:func:`_works_counts` from every (point, cluster) pair within the radius (distances to the clusters'
    extents, :class:`geo.index.extents.ExtentIndex`), ``PAIR_POINTS`` points at a time."""
    w = prepare(engine).works
    index = _indexes(engine).clusters
    n = lat.size
    out = np.zeros((4, n), dtype=np.int64)
    running = w.status_class == wk.RUNNING
    planned = w.status_class == wk.PLANNED
    upcoming = planned & wk.upcoming_clusters(w, now)
    for s in range(0, n, PAIR_POINTS):
        e = min(n, s + PAIR_POINTS)
        q, c, km = index.within_many(lat[s:e], lng[s:e], RADIUS_KM)
        keep = ~far_side(side[s:e][q], w.side[c])
        q, c, km = q[keep], c[keep], km[keep]
        run = running[c]
        out[0, s:e] = np.bincount(q[run], minlength=e - s)
        out[1, s:e] = np.bincount(q[planned[c]], minlength=e - s)
        out[2, s:e] = np.bincount(q[upcoming[c]], minlength=e - s)
        out[3, s:e] = np.bincount(q[run & (km <= br.NEAR_WORK_KM)], minlength=e - s)
    return out


PAIR_POINTS = 1 << 14  # points per step of the pair walks (bounds the pairs held at once)


#: cell size of the stops table: 100 m (about 2 million cells over the service area, 4 bytes each)
STOPS_CELL_KM = tr.STOP_RADIUS_KM / 4


def _stops_table(engine):
    """CountTable within the stop radius over ``engine.stops`` rows, or None."""
    table = CountTable(*point_coords(engine.stops), tr.STOP_RADIUS_KM, STOPS_CELL_KM)
    return table if table.usable else None


def _stops_served(engine, lat, lng):
    """(any stop within the stop radius, OR of the Antwerp-region line bits of those stops) per point.

    Through the per-engine stops :class:`CountTable` (a cell lookup plus the exact distance of the cell's
    boundary stops); the pair walk when no table can be built."""
    table = per_engine("batch.stops_table", engine, _stops_table)
    if table is None:
        return _stops_served_pairs(engine, lat, lng)
    return table.unions(lat, lng, _indexes(engine).stop_words)


def _stops_served_pairs(engine, lat, lng):
    """:func:`_stops_served` by walking every (point, stop) pair within the stop radius."""
    ix = _indexes(engine)
    n = lat.size
    near = np.zeros(n, dtype=bool)
    served = np.zeros((n, ix.stop_words.shape[1]), dtype=np.uint64)
    for chunk in pairs_within(ix.stops, lat, lng, tr.STOP_RADIUS_KM):
        stops = chunk.index.rows[chunk.k]
        first = np.flatnonzero(np.r_[True, chunk.q[1:] != chunk.q[:-1]])
        rows = chunk.rows[chunk.q[first]]
        near[rows] = True
        served[rows] = np.bitwise_or.reduceat(ix.stop_words[stops], first, axis=0)
    return near, served


def _transit_counts(engine, lat, lng, side, now):
    """(detours kept per point by severity: (3, n) int64 with rows LOW, MEDIUM, HIGH; any stop within the
    stop distance per point), as ``disruptions.find``."""
    d = prepare(engine).detours
    ix = _indexes(engine)
    now_ms = to_ms(now)
    active = np.flatnonzero(tr.active_detours(d, now_ms))
    out = np.zeros((3, lat.size), dtype=np.int64)
    near, served = _stops_served(engine, lat, lng)
    if active.size == 0:
        return out, near
    lines_here = served.any(axis=1)
    # points without a stop nearby keep every active detour on their own river side
    free = np.flatnonzero(~near)
    # points near stops keep the detours sharing a line with them (none when no Antwerp-region line)
    linked = np.flatnonzero(lines_here)
    if free.size:  # depends on the point's river side only: one table row per side
        sides = np.array([RIVER_NONE, RIVER_LEFT, RIVER_RIGHT], dtype=np.int8)
        table = np.zeros((3, RIVER_RIGHT + 1), dtype=np.int64)
        for j in active.tolist():
            table[int(d.severity[j]), sides] += ~far_side(sides, d.side[j])
        out[:, free] = table[:, side[free]]
    for j in active.tolist():
        sev = int(d.severity[j])
        if linked.size:
            shares = (served[linked] & ix.line_words[j]).any(axis=1)
            out[sev, linked] += shares & ~far_side(side[linked], d.side[j])
    return out, near


def _air_by_station(engine, now):
    """Per station row: (value, first, n_values, measured_ms) over the 2-hour window ending at ``now``."""
    a = prepare(engine).air
    n = a.station_ids.size
    lo, hi = ar.window_bounds(a.offsets, a.times_ms, np.arange(n), to_ms(now))
    value, first = np.full(n, np.nan), np.full(n, np.nan)
    count, measured = np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    for s in np.flatnonzero(hi > lo).tolist():  # per station (about a hundred), not per point
        value[s], first[s], count[s], measured[s] = window_values(a, int(lo[s]), int(hi[s]))
    return value, first, count, measured


# --- output -----------------------------------------------------------------------------------------
def _cat(codes, names) -> Column:
    return Column("cat", np.asarray(codes, dtype=np.int64), categories=tuple(names))


def _int(values, missing) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(np.asarray(values, dtype=np.int64), np.asarray(missing, dtype=bool))


def _float(values, missing) -> pd.arrays.FloatingArray:
    values = np.asarray(values, dtype=np.float64)
    missing = np.asarray(missing, dtype=bool) | np.isnan(values)
    return pd.arrays.FloatingArray(np.where(missing, 0.0, values), missing)


def _bool(values, missing) -> pd.arrays.BooleanArray:
    return pd.arrays.BooleanArray(np.asarray(values, dtype=bool), np.asarray(missing, dtype=bool))


def score(points, engine, now=None, *, lat: str = "lat", lng: str = "lng") -> pd.DataFrame:
    """Score many points: one row per input point, in input order, with the input's index.

    Parameters
    ----------
    points : DataFrame, GeoDataFrame or (lat, lng) tuple of arrays
        A frame with columns ``lat``/``lng`` (names configurable) or, failing those, point geometries
        (reprojected to EPSG:4326 when the frame has another CRS).
    engine : geo.Engine
    now : datetime.datetime, optional
        Aware instant (the clock of the API request); default: the snapshot's ``asOf``.
    lat, lng : str
        Column names of the coordinates.

    Returns
    -------
    pandas.DataFrame
        The columns of :data:`COLUMNS`. ``status`` is ``ok``, ``invalid_coordinates`` (not a number,
        NaN, infinite or out of range) or ``outside_service_area``; other columns are missing (NA) on
        rows that are not ``ok`` (``in_service_area`` is False for outside points). Never raises for bad
        coordinates and never drops a row.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"lat": [51.2194, 50.6326, 95.0], "lng": [4.4025, 5.5797, 4.0]})
    >>> score(frame, engine)["status"].tolist()  # doctest: +SKIP
    ['ok', 'outside_service_area', 'invalid_coordinates']
    """
    columns, index = score_columns(points, engine, now, lat=lat, lng=lng)
    frame = pd.DataFrame({name: _pandas(c) for name, c in columns.items()}, columns=list(COLUMNS))
    if index is not None:
        frame.index = index
    return frame


@dataclass(frozen=True)
class Column:
    """One score column as NumPy arrays, before it becomes pandas (:func:`score`) or Arrow
    (:func:`geo.batch.io.score_arrow`, the same values without a DataFrame in between).

    ``kind`` is ``cat`` (``values``: int64 codes into ``categories``, -1 missing; ``object_index``: the
    categories are names from the snapshot, kept as an object Index), ``bool``, ``int`` or ``float``
    (``values`` with the ``missing`` mask; a NaN float is missing too)."""

    kind: str
    values: np.ndarray
    missing: np.ndarray | None = None
    categories: tuple = ()
    object_index: bool = False


def score_columns(points, engine, now=None, *, lat: str = "lat", lng: str = "lng"):
    """(dict of :data:`COLUMNS` name -> :class:`Column`, the input's index or None): what :func:`score`
    puts in its frame."""
    la, ln, index = _points_arrays(points, lat, lng)
    la, ln = as_arrays(la, ln)
    if la.size and not np.issubdtype(la.dtype, np.floating):
        raise InvalidCoordinates("coordinates must be numbers")
    now = _clock(engine, now)
    to_ms(now)  # rejects a naive datetime early
    n = la.size
    status = np.full(n, INVALID, dtype=np.int8)
    valid, inside = service_mask(engine, la, ln)
    status[valid] = OUTSIDE
    status[inside] = OK
    ok = np.flatnonzero(inside)
    plat, plng = la[ok], ln[ok]
    m = ok.size
    not_ok = ~inside

    side = engine.river_side(plat, plng) if m else np.zeros(0, dtype=np.int8)
    in_lez = engine.in_lez(plat, plng) if m else np.zeros(0, dtype=bool)
    works = _works_counts(engine, plat, plng, side, now) if m else np.zeros((4, 0), dtype=np.int64)
    transit, stops_near = (
        _transit_counts(engine, plat, plng, side, now)
        if m
        else (np.zeros((3, 0), dtype=np.int64), np.zeros(0, dtype=bool))
    )
    station, station_km = (
        engine.nearest_station(plat, plng, "no2") if m else (np.zeros(0, np.int64), np.zeros(0))
    )

    a = prepare(engine).air
    value_s, first_s, count_s, measured_s = _air_by_station(engine, now)
    has = station >= 0
    st = np.where(has, station, 0)
    value = np.where(has, value_s[st] if value_s.size else np.nan, np.nan)
    first = np.where(has, first_s[st] if first_s.size else np.nan, np.nan)
    n_values = np.where(has, count_s[st] if count_s.size else 0, 0)
    compliance = ar.compliance_class(value)
    trend = ar.trend_class(first, value, n_values)
    pct = ar.reported_trend_percent(first, value, n_values)

    active, planned, upcoming, near_running = works
    risk_points = br.risk_score(
        near_running,
        active - near_running,
        upcoming,
        transit[0],
        transit[1],
        transit[2],
        compliance,
        stops_near,
    )
    risk = br.risk_level(risk_points)

    def spread(values, fill, dtype=None):
        full = np.full(n, fill, dtype=dtype or np.asarray(values).dtype)
        full[ok] = values
        return full

    measured_names = [iso_utc_ms(int(t)) if t >= 0 else "" for t in measured_s.tolist()]
    measured_code = np.where(has & (n_values > 0), st, -1)
    return {
        "status": _cat(status, STATUS_NAMES),
        "in_service_area": Column("bool", inside, ~valid),
        "in_lez": Column("bool", spread(in_lez, False), not_ok),
        "river_side": _cat(
            spread(side.astype(np.int64), -1),
            [RIVER_NAMES[k] for k in (RIVER_NONE, RIVER_LEFT, RIVER_RIGHT)],
        ),
        "no2_station_id": _names(spread(np.where(has, station, -1), -1, np.int64), a.station_ids, n),
        "no2_station_name": _names(spread(np.where(has, station, -1), -1, np.int64), a.station_names, n),
        "no2_station_km": Column("float", spread(np.where(has, station_km, np.nan), np.nan), not_ok),
        "no2_value": Column("float", spread(value, np.nan), not_ok),
        "no2_measured_at": _names(
            spread(measured_code, -1, np.int64), np.array(measured_names, dtype=object), n
        ),
        "no2_trend": _cat(spread(trend.astype(np.int64), -1), ar.TREND_NAMES),
        "no2_trend_percent": Column("float", spread(pct, np.nan), not_ok),
        "no2_compliance": _cat(spread(compliance.astype(np.int64), -1), ar.COMPLIANCE_NAMES),
        "active_works": Column("int", spread(active, 0), not_ok),
        "planned_works": Column("int", spread(planned, 0), not_ok),
        "upcoming_works_14d": Column("int", spread(upcoming, 0), not_ok),
        "transit_disruptions": Column("int", spread(transit.sum(axis=0), 0), not_ok),
        "high_severity_transit": Column("int", spread(transit[tr.HIGH], 0), not_ok),
        "transit_fallback": Column("bool", spread(~stops_near, False), not_ok),
        "risk": _cat(spread(risk.astype(np.int64), -1), br.RISK_NAMES),
        "risk_score": Column("float", spread(risk_points, np.nan), not_ok),
    }, index


def _pandas(c: Column):
    """The pandas array of a :class:`Column` (categorical, or nullable boolean / Int64 / Float64)."""
    if c.kind == "cat":
        cats = pd.Index(list(c.categories), dtype=object) if c.object_index else list(c.categories)
        return pd.Categorical.from_codes(c.values, categories=cats)
    return {"bool": _bool, "int": _int, "float": _float}[c.kind](c.values, c.missing)


def join_scores(frame: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s columns followed by the score columns (same index); an input column named like a score
    column is renamed ``input_<name>``, as ``urban-score`` does.

    Examples
    --------
    >>> join_scores(pd.DataFrame({"risk": [1]}), pd.DataFrame({"risk": ["low"]})).columns.tolist()
    ['input_risk', 'risk']
    """
    clash = {c: f"input_{c}" for c in frame.columns if c in scores.columns}
    return pd.concat([frame.rename(columns=clash) if clash else frame, scores], axis=1)


def _none_cat(n) -> Column:
    return Column("cat", np.full(n, -1, dtype=np.int64))


def _names(codes, names, n) -> Column:
    """Categorical column of ``names[code]`` (NA for -1); duplicate names share one category."""
    if names.size == 0:
        return _none_cat(n)
    uniq, inverse = np.unique(np.asarray([str(x) for x in names], dtype=object), return_inverse=True)
    codes = np.asarray(codes, dtype=np.int64)
    mapped = np.where(codes >= 0, inverse[np.maximum(codes, 0)], -1)
    empty = np.flatnonzero(uniq == "")
    if empty.size:  # an empty name is a missing one
        mapped = np.where(mapped == empty[0], -1, mapped)
    return Column("cat", np.asarray(mapped, dtype=np.int64), categories=tuple(uniq), object_index=True)
