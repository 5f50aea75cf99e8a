"""``/air-quality`` computation: latest measured NO2 at the nearest station, thresholds, compliance, LEZ.

Pure: engine + point + ``now`` in, JSON-ready dict out. Rules in :mod:`geo.rules.airrules`; the measured series
per station are prepared once in :mod:`geo.rules.prepared`. See docs/rules.md.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..rules import airrules as ar
from ..rules.airrules import window_values  # noqa: F401  (re-exported: air.window_values)
from .loaded import moment
from .point import Point, checked_point
from ..rules.texts import DEFAULT, catalogue
from ..rules.timefmt import iso_utc_ms

UNIT = "µg/m³"


class Reading(NamedTuple):
    """Raw NO2 reading of one point (NaN / -1 when unknown)."""

    station: int  # row in engine.stations, -1 when there is no NO2 station
    station_km: float
    value: float  # last non-null measured value in the window, NaN when none
    first: float  # first non-null measured value in the window
    measured_ms: int  # end-of-hour timestamp of ``value``, -1 when none
    n_values: int  # non-null measured values in the window
    compliance: int  # ar.UNKNOWN / BELOW_WHO / ABOVE_WHO / ABOVE_EU
    in_lez: bool


def nearest_no2_station(engine, lat: float, lng: float) -> tuple:
    """(station row, km) of the nearest NO2 station for one point, (-1, inf) when there is none: the engine's
    nearest index (``engine.nearest_station(lat, lng, "no2")``: exact haversine, ties to the lowest row).

    Examples
    --------
    >>> nearest_no2_station(engine, 51.2194, 4.4025)  # doctest: +SKIP
    (57, 2.448)
    """
    try:
        idx, km = engine.nearest_station(lat, lng, "no2")
    except ValueError:  # a stations layer without the no2 flag (a constructed engine): no NO2 station
        return -1, math.inf
    return int(idx[0]), float(km[0])


def latest_measured_ms(engine, now) -> int | None:
    """End of the newest hour, at or before ``now``, with a measured NO2 value at any station (None: none);
    kept per instant (:attr:`geo.service.moment.Moment.latest_measured_ms`).

    Examples
    --------
    >>> latest_measured_ms(engine, now)  # doctest: +SKIP
    1795158000000
    """
    return moment(engine, now).latest_measured_ms


def read(engine, lat: float, lng: float, now) -> Reading:
    """The raw reading for a checked point.

    Examples
    --------
    >>> read(engine, 51.2194, 4.4025, now).compliance  # doctest: +SKIP
    2
    """
    return read_at(engine, lat, lng, moment(engine, now))


class Placed(NamedTuple):
    """What :func:`read_at` owes to the snapshot and the point alone, not to the clock."""

    station: int  # row of the nearest NO2 station, -1 when there is none
    station_km: float
    in_lez: bool


def placed_at(engine, lat: float, lng: float) -> Placed:
    """The clock-free part of :func:`read_at` for a checked point."""
    station, station_km = nearest_no2_station(engine, lat, lng)
    return Placed(station, station_km, bool(engine.in_lez(lat, lng)[0]))


def read_at(engine, lat: float, lng: float, m, around=None) -> Reading:
    """:func:`read` with the per-instant station readings of a :class:`geo.service.moment.Moment`; with
    ``around`` (a :class:`geo.service.around.Around` of this very point and snapshot), its clock-free part
    is not computed again."""
    station, station_km, in_lez = placed_at(engine, lat, lng) if around is None else around.placed
    if station < 0:
        return Reading(station, station_km, _NAN, _NAN, -1, 0, ar.UNKNOWN, in_lez)
    s = m.reading(station)
    return Reading(station, station_km, s.value, s.first, s.measured_ms, s.n_values, s.compliance, in_lez)


_NAN = float("nan")


def _threshold(limit: float, label: str, value: float) -> dict:
    return {
        "value": int(limit),
        "unit": UNIT,
        "label": label,
        "exceeded": None if value != value else value > limit,
    }


def build(engine, r: Reading, now, lang: str = DEFAULT) -> dict:
    """The response dict of a raw reading, its texts in ``lang``."""
    return build_at(r, moment(engine, now), lang)


def texts(compliance: int, lang: str = DEFAULT) -> tuple:
    """``(thresholds note, WHO label, EU label, compliance label)`` in ``lang`` (:mod:`geo.rules.texts`).

    Examples
    --------
    >>> texts(ar.ABOVE_EU)[3], texts(ar.ABOVE_EU, "fr")[3], texts(ar.ABOVE_EU, "en")[2]
    ('Boven de EU-grenswaarde', "Au-dessus de la valeur limite de l'UE", 'EU limit value (annual mean)')
    """
    t = catalogue(lang)
    return (
        t("thresholds.note"),
        t("threshold.who"),
        t("threshold.eu"),
        t(f"compliance.{ar.COMPLIANCE_NAMES[compliance]}"),
    )


def build_at(r: Reading, m, lang: str = DEFAULT) -> dict:
    """:func:`build` with the per-instant strings of a :class:`geo.service.moment.Moment`."""
    a = m.lookups.prepared.air
    known = r.n_values > 0
    station = None
    if r.station >= 0:
        station = {
            "id": a.station_ids[r.station],
            "name": a.station_names[r.station],
            "distanceKm": round(r.station_km, 3) + 0.0,
        }
    s = m.reading(r.station) if r.station >= 0 else None
    if s is not None and (s.value, s.first, s.measured_ms, s.n_values) == (
        r.value,
        r.first,
        r.measured_ms,
        r.n_values,
    ):
        trend, pct = s.trend  # r is this instant's reading: its texts are cached
        measured_at = s.measured_at
    else:
        trend, pct = ar.trend_one(r.first, r.value, r.n_values)
        measured_at = iso_utc_ms(r.measured_ms) if known else None
    window = m.window
    reading = {
        "pollutant": "NO2",
        "unit": UNIT,
        "value": round(r.value, 1) + 0.0 if known else None,
        "status": "measured" if known else "unknown",
        "measuredAt": measured_at,
        "ageMinutes": (m.now_ms - r.measured_ms) // 60_000 if known else None,
        "trend": ar.TREND_NAMES[trend],
        "trendPercent": None if pct != pct else pct,
        "window": {"from": window[0], "to": window[1], "values": r.n_values},
        "station": station,
    }
    value = r.value
    note, who, eu, label = texts(r.compliance, lang)
    return {
        "reading": reading,
        "thresholds": {
            "basis": "annual",
            "note": note,
            "who": _threshold(ar.WHO_NO2, who, value),
            "eu": _threshold(ar.EU_NO2, eu, value),
        },
        "compliance": {"status": ar.COMPLIANCE_NAMES[r.compliance], "label": label, "indicative": True},
        "lez": {"inside": r.in_lez, "name": a.lez_name if r.in_lez else None},
    }


def air_quality(engine, lat, lng, now, lang: str = DEFAULT) -> dict:
    """Air quality at a point: ``reading``, ``thresholds``, ``compliance``, ``lez``.

    Parameters
    ----------
    engine : geo.Engine
    lat, lng : float
        WGS84 degrees inside the service area (else ``OutsideServiceArea``).
    now : datetime.datetime
        Aware instant of the request.
    lang : str
        Language of the generated labels (``thresholds.note``, ``thresholds.*.label``,
        ``compliance.label``): one of :data:`geo.rules.texts.LANGUAGES`.

    Examples
    --------
    >>> air_quality(engine, 51.2194, 4.4025, now)["reading"]["unit"]  # doctest: +SKIP
    'µg/m³'
    """
    return air_quality_for(engine, checked_point(engine, lat, lng), now, lang)


def air_quality_for(engine, point: Point, now, lang: str = DEFAULT, around=None) -> dict:
    """:func:`air_quality` at a point already checked by :func:`geo.service.point.checked_point` (``around``:
    its :class:`geo.service.around.Around`, when the caller keeps one)."""
    m = moment(engine, now)
    return build_at(read_at(engine, point.lat, point.lng, m, around), m, lang)
