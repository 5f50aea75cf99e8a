"""Pure normalisers: parsed upstream payloads (dicts/lists, as the live APIs return them) → snapshot layers.

No I/O here: callers (the snapshot builder, the live refresher, the demo generator) parse JSON and pass the
objects in. Structural problems (not the expected container) raise :class:`UpstreamFormatError`; single bad
records (no usable geometry or coordinate: missing, NaN/infinite, or not WGS84 lon/lat such as a Lambert-72
pair; a detour stop that cannot be placed; a line whose public number is unknown) are skipped and counted per
reason in ``layer.attrs["skipped"]`` (``{reason: count}``).
Timestamps without a zone are Belgian local time (Europe/Brussels); unparseable timestamps become NaT.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import shapely
from shapely.geometry import shape

from .layers import SCHEMAS, frame
from .payload import UpstreamFormatError, parse_geo_coordinaat

if TYPE_CHECKING:  # geopandas is imported where a frame is built (layers.frame)
    import geopandas as gpd
from .payload import items as _items
from .upstream_delijn import LineBook, StopBook, region_names

LOCAL_TZ = "Europe/Brussels"
LEZ_NAME = "Lage-emissiezone Antwerpen"
NO2_PHENOMENON = "8"
EVENT_TYPES = frozenset({"evenement"})

_MODELLED = re.compile(r"model|\brio\b|interpol", re.IGNORECASE)
_ESTIMATED = re.compile(r"schat|estimat|forecast|voorspel|prognos", re.IGNORECASE)
_DELAY = re.compile(r"vertraging[^0-9.]{0,40}?(\d{1,3})\s*(?:min|minuten)\b", re.IGNORECASE)


# --- small parsers -----------------------------------------------------------------------------------


def parse_time(value, *, late: bool = False):
    """ISO 8601 string to an aware UTC ``pd.Timestamp``; no zone = Europe/Brussels; bad/empty -> None.

    A zone-less local time is read as Europe/Brussels across both DST changes: a time in the hour that does
    not exist (the last Sunday of March, 02:00-03:00) moves forward to 03:00 CEST; a time in the hour that
    occurs twice (the last Sunday of October, 02:00-03:00) is its first occurrence (CEST), or its second
    (CET) with ``late`` (used for the end of a period, so the period covers the whole repeated hour).

    Examples
    --------
    >>> str(parse_time("2026-05-04T05:00:00"))
    '2026-05-04 03:00:00+00:00'
    >>> str(parse_time("2026-10-25T02:30:00")), str(parse_time("2026-10-25T02:30:00", late=True))
    ('2026-10-25 00:30:00+00:00', '2026-10-25 01:30:00+00:00')
    >>> str(parse_time("2026-03-29T02:30:00"))
    '2026-03-29 01:00:00+00:00'
    >>> parse_time("string") is None
    True
    """
    if value is None or value == "":
        return None
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError):
        return None
    if ts is pd.NaT:
        return None
    if ts.tzinfo is None:
        ts = ts.tz_localize(LOCAL_TZ, ambiguous=not late, nonexistent="shift_forward")
    return ts.tz_convert("UTC")


def station_code(label: str) -> tuple[str, str]:
    """IRCEL label ``"42R801 - Borgerhout"`` -> (``"42R801"``, ``"Borgerhout"``).

    Examples
    --------
    >>> station_code("40AL01 - Linkeroever")
    ('40AL01', 'Linkeroever')
    """
    code, _, place = str(label).partition(" - ")
    return code.strip(), place.strip()


def strip_line(number) -> str:
    """Public line number with leading zeros removed (``"007"`` -> ``"7"``, ``"0"`` stays ``"0"``).

    Examples
    --------
    >>> strip_line("007"), strip_line("12"), strip_line("N12")
    ('7', '12', 'N12')
    """
    s = str(number).strip()
    return s.lstrip("0") or ("0" if s else "")


def _line_key(number: str):
    s = strip_line(number)
    return (0, int(s), number) if s.isdigit() else (1, 0, number)


def _join(values: Iterable[str]) -> str:
    return ",".join(values)


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def _sorted_by_id(layer):
    """Rows ordered by id, numeric-looking ids numerically (shorter first), deterministic."""
    ids = layer["id"].astype(str).tolist()
    order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), ids[i]))
    out = layer.iloc[order].reset_index(drop=True)
    out.attrs = dict(layer.attrs)
    return out


def wgs84_ok(geom) -> bool:
    """True when every coordinate of ``geom`` is finite WGS84 lon/lat (|lon| <= 180, |lat| <= 90).

    Catches what JSON lets through: ``NaN`` (``json.loads`` accepts it) and projected pairs such as
    Lambert-72 ``[152000, 212000]``.

    Examples
    --------
    >>> wgs84_ok(shapely.Point(4.4, 51.2)), wgs84_ok(shapely.Point(152000, 212000))
    (True, False)
    >>> wgs84_ok(shapely.Point(float("nan"), 51.2)), wgs84_ok(shapely.Point())
    (False, False)
    """
    if geom is None or geom.is_empty:
        return False
    xy = shapely.get_coordinates(geom)
    return bool(
        len(xy)
        and np.isfinite(xy).all()
        and (np.abs(xy[:, 0]) <= 180).all()
        and (np.abs(xy[:, 1]) <= 90).all()
    )


# --- GIPOD --------------------------------------------------------------------------------------------


def normalise_works(pages, now=None, hindrance_pages=None) -> gpd.GeoDataFrame:
    """GIPOD OGC API Features ``INNAME`` FeatureCollection(s) (+ ``HINDER_PUNT`` pages) -> ``works`` layer.

    The service sends several records per work (per occurrence or part, id ``INNAME.<GipodId>-<yyMMddHHmm>``);
    a work is its ``GipodId`` and its records collapse into one row:

    - ``status``: ``In uitvoering`` when any record has it, else ``Concreet gepland`` when any has it, else
      the shown record's (not listed);
    - the shown record, among those with that status: the one running at ``now`` (the snapshot's ``asOf``),
      else the next one, else the last one (:func:`geo.data.upstream_gipod.choose`): its description, type,
      owner, start and end;
    - the geometry (the work's extent): the union of the records' geometries with that status (polygons as
      published, made valid; a record with a point adds its point); its point is the layer's representative
      point (``point_on_surface``);
    - ``occurrences``: the number of distinct records;
    - ``hindrance`` / ``consequences``: the validated hindrance of the work in ``hindrance_pages``
      (:func:`geo.data.upstream_gipod.hindrances`): -1 = none published, 0 = hindrance, 1 = severe; the
      consequences ``;``-joined.

    Records that are not works (``Type`` other than ``Werk``/``Grondwerk``) are skipped. Rows sorted by id.
    Skipped records are counted per reason in ``attrs["skipped"]``: ``no_id``, ``no_geometry``,
    ``bad_coordinates``, ``event`` (``Evenement``), ``not_a_work`` (another type), and the hindrance
    records ``hindrance_not_validated``, ``hindrance_no_work``.

    Examples
    --------
    >>> fc = {"type": "FeatureCollection", "features": [{"type": "Feature", "id": "INNAME.1143473-2606010600",
    ...   "geometry": {"type": "Polygon", "coordinates": [[[4.405, 51.217], [4.406, 51.217], [4.406, 51.2175],
    ...                                                    [4.405, 51.217]]]},
    ...   "properties": {"GipodId": 1143473, "Description": "Proefwerk riolering", "Type": "Grondwerk",
    ...                  "Status": "In uitvoering", "Start": "2026-06-01T06:00:00Z", "End": None,
    ...                  "Owner": "water-link"}}]}
    >>> layer = normalise_works(fc)
    >>> layer[["id", "status", "occurrences", "hindrance"]].values.tolist(), layer.geometry[0].geom_type
    ([['1143473', 'In uitvoering', 1, -1]], 'Polygon')
    """
    from .upstream_gipod import STATUS_CLASSES, WORK_TYPES, choose, gipod_id, hindrances

    features = _items(pages, "features", "GIPOD FeatureCollection")
    groups: dict[str, dict] = {}
    skipped: dict[str, int] = {}
    work_types = {t.lower() for t in WORK_TYPES}
    for feat in features:
        if not isinstance(feat, Mapping):
            _count(skipped, "no_id")
            continue
        props = feat.get("properties") or {}
        gid = gipod_id(feat)
        if gid is None:
            _count(skipped, "no_id")
            continue
        kind = str(props.get("Type", "")).strip().lower()
        if kind not in work_types:
            _count(skipped, "event" if kind in EVENT_TYPES else "not_a_work")
            continue
        geom = _record_geometry(feat, skipped)
        if geom is None:
            continue
        start, end = parse_time(props.get("Start")), parse_time(props.get("End"))
        key = str(feat.get("id") or f"{gid}-{props.get('Start')}")
        # the same record read twice (overlapping pages): the later read wins
        groups.setdefault(gid, {})[key] = (start, end, props, geom)
    hindrance_features = (
        [] if hindrance_pages is None else _items(hindrance_pages, "features", "GIPOD HINDER")
    )
    found = hindrances(hindrance_features, skipped)
    now_ms = None if now is None else _ms(parse_time(now) if isinstance(now, str) else pd.Timestamp(now))
    rank = {"running": 0, "planned": 1}
    ids, rows, extents, counts = [], [], [], []
    for gid, records in groups.items():
        classes = {
            k: rank.get(STATUS_CLASSES.get(str(r[2].get("Status") or "").strip(), ""), 2)
            for k, r in records.items()
        }
        best = min(classes.values())
        keys = [k for k in records if classes[k] == best]
        spans = [(_ms(records[k][0]), _ms(records[k][1]), k) for k in keys]
        start, end, props, _ = records[keys[choose(spans, now_ms)]]
        ids.append(gid)
        rows.append((props, start, end))
        extents.append(_union([records[k][3] for k in sorted(keys)]))
        counts.append(len(records))
    hind = [found.get(gid) for gid in ids]
    layer = frame(
        "works",
        {
            "id": ids,
            "description": [p.get("Description") for p, _, _ in rows],
            "status": [p.get("Status") for p, _, _ in rows],
            "type": [p.get("Type") for p, _, _ in rows],
            "owner": [p.get("Owner") for p, _, _ in rows],
            "start": [s for _, s, _ in rows],
            "end": [e for _, _, e in rows],
            "occurrences": counts,
            "hindrance": [-1 if h is None else int(h.severe) for h in hind],
            "consequences": [";".join(h.consequences) if h else "" for h in hind],
        },
        extents,
    )
    layer.attrs["skipped"] = skipped
    return _sorted_by_id(layer)


def _record_geometry(feat: Mapping, skipped: dict):
    """The WGS84 geometry of one GIPOD record (polygons made valid), or None (counted in ``skipped``)."""
    try:
        geom = shapely.force_2d(shape(feat["geometry"]))
    except (KeyError, TypeError, ValueError, AttributeError, shapely.errors.GEOSException):
        _count(skipped, "no_geometry")
        return None
    if not wgs84_ok(geom):  # NaN or projected coordinates: one bad record, never a bad layer
        _count(skipped, "bad_coordinates")
        return None
    try:
        if geom.geom_type.endswith("Polygon") or geom.geom_type == "GeometryCollection":
            geom = shapely.make_valid(geom)
        if geom.is_empty or not wgs84_ok(shapely.point_on_surface(geom)):
            _count(skipped, "no_geometry")
            return None
    except (TypeError, ValueError, AttributeError, shapely.errors.GEOSException):
        _count(skipped, "no_geometry")
        return None
    return geom


def _union(geoms: list):
    """One geometry for a work's records: the record's own when there is one, else their union (a point
    inside a polygon adds nothing)."""
    if len(geoms) == 1 or all(g.equals_exact(geoms[0], 0.0) for g in geoms[1:]):
        return geoms[0]
    return shapely.union_all(geoms)


def _ms(ts) -> int | None:
    if ts is None or ts is pd.NaT:
        return None
    t = pd.Timestamp(ts)
    t = t.tz_localize("UTC") if t.tzinfo is None else t
    return int(t.value // 1_000_000)


# --- De Lijn ------------------------------------------------------------------------------------------


def _lijnrichtingen(value) -> list:
    if value is None:
        return []
    if isinstance(value, Mapping):
        value = value.get("lijnrichtingen") or []
    return [lr for lr in value if isinstance(lr, Mapping)]


def _count(skipped: dict, reason: str, n: int = 1) -> None:
    skipped[reason] = skipped.get(reason, 0) + n


def _book(lines, on=None) -> LineBook:
    return lines if isinstance(lines, LineBook) else LineBook.from_payloads(lines, on)


def _line_order(key: str):
    entity, _, number = key.partition("_")
    return (entity, 0, int(number), number) if number.isdigit() else (entity, 1, 0, number)


def normalise_stops(haltes, lijnrichtingen: Mapping | None = None, lines=None, on=None):
    """De Lijn Kern ``Haltes`` payload(s) + per-stop ``Lijnrichtingen`` -> ``stops`` layer.

    ``lijnrichtingen`` maps the stop key ``"{entiteitnummer}_{haltenummer}"`` to the response of
    ``GET /haltes/{entiteitnummer}/{haltenummer}/lijnrichtingen`` (or its bare list). A ``Halte`` may also
    carry a ``lijnrichtingen`` member itself. ``lines`` are the ``/entiteiten/{e}/lijnen`` answer(s) (or a
    :class:`geo.data.upstream_delijn.LineBook`): the real ``lijnrichtingen`` carry only the internal ``lijnnummer``,
    mapped here to the public number. ``line_ids`` lists the identities of the lines serving the stop
    (``{entiteitnummer}_{lijnnummer}``, what matching uses); ``lines`` the distinct public numbers as
    published (leading zeros kept), ordered numerically (what people see). A line direction whose public
    number is unknown is counted in ``attrs["skipped"]["line_unknown"]``, never listed under its internal
    number; one of a line that runs only from a later date than ``on`` (the snapshot's date: every known
    version starts later) in ``line_not_yet_valid``.

    Examples
    --------
    >>> h = {"haltes": [{"entiteitnummer": "3", "haltenummer": "303980", "omschrijving": "Gilsonplein",
    ...                  "omschrijvingGemeente": "Leuven", "geoCoordinaat": "50.98145,4.82356"}]}
    >>> lr = {"3_303980": {"lijnrichtingen": [{"lijnNummerPubliek": "335", "lijnnummer": "335",
    ...                                         "richting": "HEEN"}]}}
    >>> normalise_stops(h, lr)[["id", "lines", "line_ids"]].values.tolist()
    [['3_303980', '335', '3_335']]
    """

    items = _items(haltes, "haltes", "De Lijn Haltes")
    lijnrichtingen = lijnrichtingen or {}
    book = _book(lines, on)
    if not isinstance(lijnrichtingen, Mapping):
        raise UpstreamFormatError(
            "De Lijn lijnrichtingen: expected an object keyed by '{entiteitnummer}_{haltenummer}'"
        )
    by_id: dict[str, tuple] = {}
    skipped: dict[str, int] = {}
    for h in items:
        if not isinstance(h, Mapping) or not h.get("haltenummer") or h.get("entiteitnummer") is None:
            _count(skipped, "no_id")
            continue
        ll = parse_geo_coordinaat(h.get("geoCoordinaat"))
        if ll is None:
            _count(skipped, "no_coordinates")
            continue
        key = f"{h['entiteitnummer']}_{h['haltenummer']}"
        publics, ids = [], []
        for lr in _lijnrichtingen(h.get("lijnrichtingen")) + _lijnrichtingen(lijnrichtingen.get(key)):
            line = book.resolve({"entiteitnummer": h["entiteitnummer"], **lr})
            if line is None or not line.public:
                _count(skipped, "line_unknown")
            elif line.number and book.not_yet_valid(line.entity, line.number):
                _count(skipped, "line_not_yet_valid")
            else:
                publics.append(line.public)
                if line.number:
                    ids.append(line.key)
        by_id[key] = (h, ll, sorted(_unique(publics), key=_line_key), sorted(_unique(ids), key=_line_order))
    ids = list(by_id)
    vals = [by_id[i] for i in ids]
    layer = frame(
        "stops",
        {
            "id": ids,
            "entity": [str(h["entiteitnummer"]) for h, *_ in vals],
            "number": [str(h["haltenummer"]) for h, *_ in vals],
            "name": [h.get("omschrijving") for h, *_ in vals],
            "municipality": [h.get("omschrijvingGemeente") for h, *_ in vals],
            "lines": [_join(v[2]) for v in vals],
            "line_ids": [_join(v[3]) for v in vals],
        },
        shapely.points([v[1][1] for v in vals], [v[1][0] for v in vals]) if vals else [],
    )
    layer.attrs["skipped"] = skipped
    return _sorted_by_id(layer)


def line_detail(line, regions: Mapping) -> dict:
    """One entry of a detour's ``line_details``: the line as people see it, and its identity.

    Examples
    --------
    >>> from geo.data.upstream_delijn import Line
    >>> line_detail(Line("2", "AN", "1", "948", "BUS", ""), {"AN": "Antwerpen"})
    {'line': '2', 'entity': '1', 'number': '948', 'mode': 'BUS', 'network': None, 'region': 'AN', 'regionName': 'Antwerpen'}
    """
    return {
        "line": line.public,
        "entity": line.entity or None,
        "number": line.number or None,
        "mode": line.mode or None,
        "network": line.network or None,
        "region": line.region or None,
        "regionName": regions.get(line.region) if line.region else None,
    }


def normalise_detours(
    payload, lines=None, stops=None, stop_details: Mapping | None = None, regions=None, on=None
):
    """De Lijn ``Omleidingen`` payload(s) (``omleidingen`` array; ``storingen`` ignored) -> ``detours``.

    Also accepts a bare list of ``Omleiding`` objects or a single one (``GET /omleidingen/{ref}``).

    - ``lines`` (``/entiteiten/{e}/lijnen`` and ``/lijnen/{e}/{l}`` answers, or a
      :class:`geo.data.upstream_delijn.LineBook`; ``on`` chooses between versions of a line) turn each line
      direction's ``(entiteitnummer, lijnnummer)`` into the line's public number, transport region
      (``region``: the comma-joined ``vervoerRegioCode`` values), ``vervoertype`` and ``vervoerslaag``; a
      direction that carries ``lijnNummerPubliek`` itself keeps it. ``line_details`` holds one JSON object
      per distinct line, in published order (:func:`line_detail`; ``regions`` is the ``/vervoerregios``
      answer that names the regions): matching uses its identities, the answer shows it.
    - The point is the mean of the listed ``haltes`` (stops not served): a stop's own ``geoCoordinaat`` when it
      has one, else its place in ``stops`` (the stops layer) or in ``stop_details`` (``{"e_h": Halte}``
      answers of ``GET /haltes/{e}/{h}``). A detour without listed stops has an empty point.
    - Skipped, counted per reason in ``attrs["skipped"]``: no ``referentieOmleiding`` (``no_reference``);
      line directions listed but none with a known public number (``line_unknown``); stops listed but none
      placeable (``stop_not_found``). A line of a kept detour that is in no line list (nor found by
      ``/lijnen/{e}/{l}``) is left out of it and counted once per line (``line_not_found``).
    - ``entity`` is the first line direction's ``entiteitnummer`` (else the first stop's); ``type`` is lower
      case (the service sends ``werken``, ``WERKEN`` or nothing); ``days`` the upper-case ``omleidingsDagen``;
      ``start``/``end`` read ``periode`` as Europe/Brussels (:func:`parse_time`; ``end`` NaT = open-ended,
      ``eindDatum`` absent); ``delay_min`` is read from ``omschrijving``.

    Examples
    --------
    >>> d = normalise_detours({"omleidingen": [{"titel": "Antwerpen: Werken Meir", "referentieOmleiding": 7,
    ...     "periode": {"startDatum": "2026-11-01T05:00:00"}, "type": "werken",
    ...     "lijnrichtingen": [{"lijnNummerPubliek": "007", "entiteitnummer": "1"}], "haltes": []}]})
    >>> d[["id", "entity", "lines"]].values.tolist(), bool(d["end"].isna()[0])
    ([['7', '1', '007']], True)
    """

    if isinstance(payload, Mapping) and "omleidingen" not in payload and "titel" in payload:
        items = [payload]
    elif isinstance(payload, Mapping) and "omleidingen" not in payload and "storingen" in payload:
        items = []  # a /storingen answer (service disruptions, no detours): real ones carry no 'omleidingen'
    else:
        items = _items(payload, "omleidingen", "De Lijn Omleidingen")
    book = _book(lines, on)
    names = region_names(regions)
    places = StopBook.from_sources(stops, stop_details)
    by_id: dict[str, dict] = {}
    skipped: dict[str, int] = {}
    not_found: set[tuple[str, str]] = set()
    for o in items:
        if not isinstance(o, Mapping) or o.get("referentieOmleiding") is None:
            _count(skipped, "no_reference")
            continue
        lrs = _lijnrichtingen(o.get("lijnrichtingen"))
        resolved, missing = [], set()
        for lr in lrs:
            line = book.resolve(lr)
            if line is not None and line.public:
                resolved.append(line)
            else:
                missing.add(
                    (str(lr.get("entiteitnummer", "")).strip(), str(lr.get("lijnnummer", "")).strip())
                )
        if lrs and not resolved:
            _count(skipped, "line_unknown")
            continue
        haltes = [h for h in (o.get("haltes") or []) if isinstance(h, Mapping) and h.get("haltenummer")]
        coords = []
        for h in haltes:
            ll = parse_geo_coordinaat(h.get("geoCoordinaat"))
            lonlat = (ll[1], ll[0]) if ll else places.place(h.get("entiteitnummer", ""), h["haltenummer"])
            if lonlat is not None:
                coords.append(lonlat)
        if haltes and not coords:
            _count(skipped, "stop_not_found")
            continue
        not_found |= missing
        details = list({(x.key if x.number else x.public): line_detail(x, names) for x in resolved}.values())
        entity = next((str(x["entiteitnummer"]) for x in lrs + haltes if x.get("entiteitnummer")), "")
        periode = o.get("periode") or {}
        match = _DELAY.search(str(o.get("omschrijving") or ""))
        by_id[str(o["referentieOmleiding"])] = {
            "title": o.get("titel"),
            "description": o.get("omschrijving"),
            "type": str(o.get("type") or "").strip().lower(),
            "entity": entity,
            "region": _join(sorted(_unique(line.region for line in resolved))),
            "lines": _join(_unique(line.public for line in resolved)),
            "line_details": json.dumps(details, ensure_ascii=False, separators=(",", ":")) if details else "",
            "unserved_stops": _join(_unique(f"{h.get('entiteitnummer')}_{h['haltenummer']}" for h in haltes)),
            "start": parse_time(periode.get("startDatum")),
            "end": parse_time(periode.get("eindDatum"), late=True),
            "days": _join(str(d).strip().upper() for d in (o.get("omleidingsDagen") or []) if d),
            "delay_min": float(match.group(1)) if match else None,
            "geometry": shapely.Point(np.mean([c[0] for c in coords]), np.mean([c[1] for c in coords]))
            if coords
            else shapely.Point(),
        }
    if not_found:
        _count(skipped, "line_not_found", len(not_found))
    ids = list(by_id)
    rows = [by_id[i] for i in ids]
    cols = {c: [r[c] for r in rows] for c in SCHEMAS["detours"][1:]}  # every column after the id
    layer = frame("detours", {"id": ids, **cols}, [r["geometry"] for r in rows])
    layer.attrs["skipped"] = skipped
    return _sorted_by_id(layer)


# --- IRCEL-CELINE -------------------------------------------------------------------------------------


def _point2d(geometry):
    coords = (geometry or {}).get("coordinates") or []
    try:
        lon, lat = float(coords[0]), float(coords[1])
    except (IndexError, TypeError, ValueError):
        return None
    point = shapely.Point(lon, lat)
    return point if wgs84_ok(point) else None


def _phenomenon_ids(props: Mapping) -> set[str]:
    ts = props.get("timeseries")
    if not isinstance(ts, Mapping):
        return set()
    return {str((t.get("phenomenon") or {}).get("id")) for t in ts.values() if isinstance(t, Mapping)}


def normalise_stations(features, reference=None, *, no2_default: bool = True):
    """IRCEL SOS REST ``GET /stations`` (bare array of GeoJSON Features) -> ``stations`` layer.

    ``id``/``name`` come from the label (``"42R801 - Borgerhout"``); ``eoi_code``, ``station_type`` and
    ``area_type`` from ``reference`` (a ``stations`` layer) when given. ``no2`` is True when the expanded
    ``timeseries`` include phenomenon 8, or ``no2_default`` (the list was queried with ``phenomenon=8``)
    when the features carry no timeseries.

    Examples
    --------
    >>> f = [{"type": "Feature", "properties": {"id": 1030, "label": "40AL01 - Linkeroever"},
    ...       "geometry": {"type": "Point", "coordinates": [4.385223684454717, 51.23619419990248, "NaN"]}}]
    >>> normalise_stations(f)[["id", "name", "no2"]].values.tolist()
    [['40AL01', 'Linkeroever', True]]
    """
    items = _items(features, "features", "IRCEL stations")
    ref = {}
    if reference is not None:
        ref = {r["id"]: r for r in reference.drop(columns="geometry").to_dict("records")}
    by_id: dict[str, tuple] = {}
    skipped: dict[str, int] = {}
    for f in items:
        props = (f or {}).get("properties") or {} if isinstance(f, Mapping) else {}
        code, place = station_code(props.get("label", ""))
        point = _point2d(f.get("geometry")) if isinstance(f, Mapping) else None
        if not code or point is None:
            _count(skipped, "no_label" if not code else "no_coordinates")
            continue
        phen = _phenomenon_ids(props)
        no2 = NO2_PHENOMENON in phen if phen else no2_default
        prev = by_id.get(code)
        by_id[code] = (place, point, no2 or (prev is not None and prev[2]))
    ids = sorted(by_id)
    layer = frame(
        "stations",
        {
            "id": ids,
            "eoi_code": [ref.get(i, {}).get("eoi_code", "") for i in ids],
            "name": [by_id[i][0] or ref.get(i, {}).get("name", "") for i in ids],
            "station_type": [ref.get(i, {}).get("station_type", "") for i in ids],
            "area_type": [ref.get(i, {}).get("area_type", "") for i in ids],
            "no2": [by_id[i][2] for i in ids],
        },
        [by_id[i][1] for i in ids],
    )
    layer.attrs["skipped"] = skipped
    return layer


def series_kind(item: Mapping) -> str:
    """``measured``, ``modelled`` or ``estimated`` for an IRCEL timeseries item, from its procedure label.

    IRCEL's SOS serves station measurements; model output (RIO/IFDM interpolation) and estimates or
    forecasts are recognised by their procedure (or series) label.

    Examples
    --------
    >>> series_kind({"label": "Nitrogen dioxide 6522 - procedure, 42R801 - Borgerhout"})
    'measured'
    >>> series_kind({"parameters": {"procedure": {"label": "6600 - RIO-IFDM model - procedure"}}})
    'modelled'
    """
    params = item.get("parameters") or {}
    labels = [
        str((params.get("procedure") or {}).get("label") or ""),
        str((item.get("procedure") or {}).get("label") or "")
        if isinstance(item.get("procedure"), Mapping)
        else "",
        str(item.get("label") or ""),
    ]
    text = " ".join(labels)
    if _MODELLED.search(text):
        return "modelled"
    if _ESTIMATED.search(text):
        return "estimated"
    return "measured"


def _is_no2(item: Mapping) -> bool:
    params = item.get("parameters") or {}
    phen = (params.get("phenomenon") or {}).get("id")
    if phen is not None:
        return str(phen) == NO2_PHENOMENON
    label = str(item.get("label") or "")
    return label.lower().startswith("nitrogen dioxide") or not label


def normalise_no2(timeseries, data: Mapping, stations=None):
    """IRCEL ``GET /timeseries?phenomenon=8`` items + ``getData`` values -> ``no2`` layer.

    ``data`` maps a timeseries id to its ``getData`` response ``{"values": [{"timestamp": ms, "value": x}]}``
    (the batch ``POST /timeseries/getData`` shape). Timestamps are Unix epoch milliseconds UTC, the end of
    the hourly interval; ``null`` values become NaN rows. Non-NO2 series are dropped. The point is the
    series' station (or the ``stations`` layer's point for that id). Sorted by (station, time, kind).

    Examples
    --------
    >>> ts = [{"id": "6522", "label": "Nitrogen dioxide 6522 - procedure, 42R801 - Borgerhout",
    ...        "station": {"properties": {"id": 1112, "label": "42R801 - Borgerhout"},
    ...                    "geometry": {"type": "Point", "coordinates": [4.431821, 51.209663, "NaN"]}}}]
    >>> data = {"6522": {"values": [{"timestamp": 1700002800000, "value": 27.0},
    ...                             {"timestamp": 1700006400000, "value": None}]}}
    >>> normalise_no2(ts, data)["value"].tolist()
    [27.0, nan]
    """
    items = _items(timeseries, "timeseries", "IRCEL timeseries")
    if not isinstance(data, Mapping):
        raise UpstreamFormatError("IRCEL getData: expected an object keyed by timeseries id")
    ref_points = {}
    if stations is not None:
        ref_points = dict(zip(stations["id"], stations.geometry))
    rows: dict[tuple, tuple] = {}
    skipped: dict[str, int] = {}
    for item in items:
        if not isinstance(item, Mapping) or not _is_no2(item):
            continue
        station = item.get("station") or {}
        code, _ = station_code((station.get("properties") or {}).get("label", ""))
        point = _point2d(station.get("geometry")) or ref_points.get(code)
        values = (data.get(str(item.get("id"))) or {}).get("values")
        if not code or point is None or values is None:
            _count(skipped, "no_station" if not code or point is None else "no_values")
            continue
        kind = series_kind(item)
        for v in values:
            try:
                ts = int(v["timestamp"])
                value = v.get("value")
                value = np.nan if value is None else float(value)
            except (KeyError, TypeError, ValueError):
                _count(skipped, "bad_value")
                continue
            key = (code, ts, kind)
            if key not in rows or (np.isnan(rows[key][0]) and not np.isnan(value)):
                rows[key] = (value, point)
    keys = sorted(rows)
    layer = frame(
        "no2",
        {
            "station_id": [k[0] for k in keys],
            "timestamp": pd.to_datetime([k[1] for k in keys], unit="ms", utc=True),
            "value": [rows[k][0] for k in keys],
            "kind": [k[2] for k in keys],
        },
        [rows[k][1] for k in keys],
    )
    layer.attrs["skipped"] = skipped
    return layer


# --- Stad Antwerpen -----------------------------------------------------------------------------------


def normalise_lez(feature_collection):
    """Stad Antwerpen ArcGIS GeoJSON (``f=geojson``, WGS84) FeatureCollection -> ``lez`` layer.

    All features' polygons are merged into one MultiPolygon; parts and holes are kept as published.

    Examples
    --------
    >>> fc = {"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {"OBJECTID": 1},
    ...       "geometry": {"type": "Polygon", "coordinates": [[[4.38, 51.2], [4.43, 51.2], [4.43, 51.24],
    ...                                                        [4.38, 51.2]]]}}]}
    >>> normalise_lez(fc).geometry[0].geom_type
    'MultiPolygon'
    """
    feats = _items(feature_collection, "features", "LEZ GeoJSON")
    polys = []
    for f in feats:
        try:
            geom = shapely.make_valid(shapely.force_2d(shape(f["geometry"])))
        except (KeyError, TypeError, ValueError, AttributeError, shapely.errors.GEOSException):
            continue
        polys.extend(p for p in shapely.get_parts(geom) if p.geom_type == "Polygon")
        for mp in shapely.get_parts(geom):
            if mp.geom_type == "MultiPolygon":
                polys.extend(shapely.get_parts(mp))
    if not polys:
        raise UpstreamFormatError("LEZ GeoJSON: no polygon features")
    geom = shapely.union_all(polys)
    minx, miny, maxx, maxy = geom.bounds
    if not (2.0 <= minx and maxx <= 7.0 and 49.0 <= miny and maxy <= 52.0):
        raise UpstreamFormatError(
            f"LEZ GeoJSON: bounds {geom.bounds} are not WGS84 lon/lat in Belgium; "
            f"request the ArcGIS layer with outSR=4326&f=geojson"
        )
    parts = [p for p in shapely.get_parts(geom) if p.geom_type == "Polygon"]
    parts.sort(key=lambda p: -p.area)
    return frame("lez", {"name": [LEZ_NAME]}, [shapely.MultiPolygon(parts)])


# --- regional boundary --------------------------------------------------------------------------------

SERVICE_AREA_NAME = "Vlaams Gewest + Brussels Hoofdstedelijk Gewest"
#: region identities accepted in a boundary payload's properties (ISO 3166-2, NIS code, names)
_REGION_KEEP = {
    "be-vlg",
    "be-bru",
    "02000",
    "04000",
    "2000",
    "4000",
    "vlaams gewest",
    "région flamande",
    "flemish region",
    "vlaanderen",
    "flanders",
    "brussels hoofdstedelijk gewest",
    "région de bruxelles-capitale",
    "brussels-capital region",
    "brussel",
    "bruxelles",
    "brussels",
}
_REGION_DROP = {
    "be-wal",
    "03000",
    "3000",
    "waals gewest",
    "région wallonne",
    "walloon region",
    "wallonie",
    "wallonia",
}
#: (name, lat, lng) points the service area must contain, and points it must not
BOUNDARY_INSIDE = (
    ("Antwerpen", 51.2194, 4.4025),
    ("Gent", 51.0543, 3.7174),
    ("Brussel Grote Markt", 50.8467, 4.3525),
)
BOUNDARY_OUTSIDE = (("Luik", 50.6326, 5.5797), ("Namen", 50.4674, 4.8720))
#: plausible area of Flanders + Brussels in km² (13,522 + 162 by the official figures)
BOUNDARY_AREA_KM2 = (12_500.0, 15_000.0)


def _region_identity(props: Mapping) -> str | None:
    """``keep``, ``drop`` or None (no recognisable region property) for one feature's properties."""
    for value in props.values():
        text = str(value).strip().lower()
        if text in _REGION_KEEP:
            return "keep"
        if text in _REGION_DROP:
            return "drop"
    return None


def area_km2(geom) -> float:
    """Approximate area in km² of a lon/lat (Multi)Polygon near 51° N (local equirectangular scaling).

    Examples
    --------
    >>> round(area_km2(shapely.box(4.0, 51.0, 4.1, 51.1)), 0)
    77.0
    """
    lat0 = np.radians((geom.bounds[1] + geom.bounds[3]) / 2)
    km = shapely.transform(geom, lambda xy: xy * [111.32 * np.cos(lat0), 110.57])
    return float(km.area)


def normalise_boundary(feature_collection):
    """Regional boundary GeoJSON (WFS ``GetFeature`` / OGC API Features output, WGS84) -> ``service_area``.

    Features recognisable as a region (ISO 3166-2, NIS code or name in any property) are filtered to the
    Flemish and Brussels-Capital regions; without such properties every feature is used. The polygons are
    merged into one MultiPolygon and checked: WGS84 lon/lat in Belgium, a plausible area
    (:data:`BOUNDARY_AREA_KM2`), Antwerp, Ghent and Brussels inside, Liège and Namur outside. Anything else
    raises :class:`UpstreamFormatError`.

    Examples
    --------
    >>> fc = {"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {},
    ...       "geometry": {"type": "Polygon", "coordinates": [[[2.5, 50.7], [4.5, 50.7], [4.5, 51.5], [2.5, 51.5],
    ...                                                        [2.5, 50.7]]]}}]}
    >>> normalise_boundary(fc)
    Traceback (most recent call last):
    ...
    geo.data.payload.UpstreamFormatError: boundary GeoJSON: area ... km² is not plausible ...
    """
    feats = [f for f in _items(feature_collection, "features", "boundary GeoJSON") if isinstance(f, Mapping)]
    identities = [_region_identity(f.get("properties") or {}) for f in feats]
    if any(identities):
        feats = [f for f, ident in zip(feats, identities) if ident == "keep"]
    polys = []
    for f in feats:
        try:
            geom = shapely.force_2d(shape(f["geometry"]))
        except (KeyError, TypeError, ValueError, AttributeError, shapely.errors.GEOSException):
            continue
        if not wgs84_ok(geom):
            raise UpstreamFormatError(
                "boundary GeoJSON: coordinates are not finite WGS84 lon/lat; request the "
                "features in EPSG:4326 (srsName=EPSG:4326 / crs=CRS84)"
            )
        for part in shapely.get_parts(shapely.make_valid(geom)):
            polys.extend(
                shapely.get_parts(part)
                if part.geom_type == "MultiPolygon"
                else [part]
                if part.geom_type == "Polygon"
                else []
            )
    if not polys:
        raise UpstreamFormatError("boundary GeoJSON: no polygon features of the Flemish or Brussels region")
    geom = shapely.union_all(polys)
    minx, miny, maxx, maxy = geom.bounds
    if not (2.3 <= minx and maxx <= 6.5 and 49.4 <= miny and maxy <= 51.6):
        raise UpstreamFormatError(f"boundary GeoJSON: bounds {geom.bounds} are not WGS84 lon/lat in Belgium")
    area = area_km2(geom)
    lo, hi = BOUNDARY_AREA_KM2
    if not lo <= area <= hi:
        raise UpstreamFormatError(
            f"boundary GeoJSON: area {area:,.0f} km² is not plausible for Flanders + "
            f"Brussels (expected {lo:,.0f}–{hi:,.0f} km²)"
        )
    missing = [n for n, lat, lng in BOUNDARY_INSIDE if not shapely.contains_xy(geom, lng, lat)]
    extra = [n for n, lat, lng in BOUNDARY_OUTSIDE if shapely.contains_xy(geom, lng, lat)]
    if missing or extra:
        raise UpstreamFormatError(
            "boundary GeoJSON: not the Flemish + Brussels regions ("
            + ", ".join([f"{n} outside" for n in missing] + [f"{n} inside" for n in extra])
            + ")"
        )
    parts = [p for p in shapely.get_parts(geom) if p.geom_type == "Polygon"]
    parts.sort(key=lambda p: -p.area)
    return frame("service_area", {"name": [SERVICE_AREA_NAME]}, [shapely.MultiPolygon(parts)])
