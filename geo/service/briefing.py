"""``/briefing`` computation: risk, headline (Dutch by default), key facts, best/worst 2-hour window, next rush peak.

Built from the same selections as ``/disruptions`` and ``/air-quality`` plus the rush-hour profile of
:mod:`geo.rules.calendar`. Pure and deterministic; see docs/rules.md for every constant.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import air as air_mod
from ..rules import airrules as ar  # noqa: F401  (the doctests' compliance names)
from . import disruptions as dis
from ..rules import transit as tr
from ..rules import works as wk
from .loaded import moment, prepare
from .point import Point, checked_point
from ..rules.risk import (  # noqa: F401  (re-exported: the briefing's rule names)
    HIGH,
    HORIZON_HOURS,
    LOAD_PER_DETOUR,
    LOAD_PER_RUNNING_WORK,
    LOAD_WEIGHT,
    LOW,
    MODERATE,
    NEAR_WORK_KM,
    RISK_NAMES,
    TRAFFIC_WEIGHT,
    WINDOW_HOURS,
    risk_level,
    risk_one,
    risk_score,
)
from ..rules import windows as win
from ..rules.texts import DEFAULT, catalogue
from ..rules.windows import windows  # noqa: F401  (re-exported: the briefing's rule names)
from ..rules.timefmt import MS_PER_HOUR, from_ms, iso_local

RISK_KEYS = ("risk.low", "risk.moderate", "risk.high")
AIR_KEYS = ("air.unknown", "air.below_who", "air.above_who", "air.above_eu")  # per compliance class
STOP_RADIUS_M = round(tr.STOP_RADIUS_KM * 1000)


def _works_phrase(t, n: int) -> str:
    return t("works.none", radius=wk.RADIUS_TEXT) if n == 0 else t.plural("works", n, radius=wk.RADIUS_TEXT)


def _transit_phrase(t, n: int, high: int) -> str:
    if n == 0:
        return t("transit.none")
    text = t.plural("transit", n)
    return t("transit.with_high", transit=text, high=high) if high else text


def _fallback_phrase(t, n: int) -> str:
    """Headline clause when no stop lies near the point: the listed detours are regional context."""
    region = t("region.none") if n == 0 else t.plural("region", n)
    return t("fallback", m=STOP_RADIUS_M, region=region)


def headline(level: int, counts: dict, compliance: int, stops_near: bool, lang: str = DEFAULT) -> str:
    r"""One-line summary from a fixed template (docs/rules.md) in ``lang`` (:mod:`geo.rules.texts`).

    With a stop within the stop distance: ``{risk}: {works}, {detours}, {NO2}``. Without one (the
    contract's no-stop fallback) the detours are not the point's own, so they move to a closing clause:
    ``{risk}: {works}, {NO2}; geen halte binnen 400 m ({n} omleidingen in de regio Antwerpen)``.

    Examples
    --------
    >>> c = {"activeWorks": 2, "transitDisruptions": 12, "highSeverityTransit": 3}
    >>> print(headline(LOW, c, ar.BELOW_WHO, False).replace("; ", ";\n"))
    Weinig hinder: 2 werken in uitvoering binnen 2 km, NO2 onder de WHO-richtlijn;
    geen halte binnen 400 m (12 omleidingen in de regio Antwerpen)
    >>> print(headline(HIGH, c, ar.UNKNOWN, True).replace("), ", "),\n"))
    Veel hinder: 2 werken in uitvoering binnen 2 km, 12 omleidingen van De Lijn (3 met grote hinder),
    NO2 onbekend
    >>> print(headline(HIGH, c, ar.ABOVE_EU, True, "en"))
    High disruption: 2 road works in progress within 2 km, 12 De Lijn detours (3 high-impact), NO2 above the EU limit value
    """
    return _headline(
        level,
        counts["activeWorks"],
        counts["transitDisruptions"],
        counts["highSeverityTransit"],
        compliance,
        stops_near,
        lang,
    )


@lru_cache(maxsize=4096)  # a few small integers: the same headline recurs across points and requests
def _headline(
    level: int, n_works: int, n_transit: int, n_high: int, compliance: int, stops_near: bool, lang: str
) -> str:
    t = catalogue(lang)
    risk, works, air = t(RISK_KEYS[level]), _works_phrase(t, n_works), t(AIR_KEYS[compliance])
    if not stops_near:
        return t("headline.no_stop", risk=risk, works=works, air=air, fallback=_fallback_phrase(t, n_transit))
    return t("headline.stop", risk=risk, works=works, air=air, transit=_transit_phrase(t, n_transit, n_high))


def _fallback_text(t, stops_near: bool, n: int) -> str:
    """Whether the detours were matched through a stop near the point or kept by the no-stop fallback."""
    if stops_near:
        return t("fact.stop", m=STOP_RADIUS_M)
    return t("fact.no_stop.none", m=STOP_RADIUS_M) if n == 0 else t.plural("fact.no_stop", n, m=STOP_RADIUS_M)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def slot_scores(engine, found, now_ms: int):
    """(slot starts ms, score per hourly slot) over the next 24 h for a selection ``found``: the rule of
    :mod:`geo.rules.windows` (:func:`~geo.rules.windows.slot_profile` + :func:`~geo.rules.windows.slot_scores`)
    computed afresh, as the reference path does."""
    p = prepare(engine)
    starts, traffic, load_per_detour = win.slot_profile(p.detours, now_ms)
    n_running = int(np.count_nonzero(p.works.status_class[found.clusters] == wk.RUNNING))
    return starts, win.slot_scores(traffic, load_per_detour, n_running, found.detours, found.stops_near)


def window_json(starts, pick) -> dict:
    """``{start, end, score}`` of window ``pick = (index, score)``: local times with offsets.

    Examples
    --------
    >>> window_json(np.array([1_792_882_800_000]), (0, 0.5))["end"]  # across the end of summer time
    '2026-10-25T02:00:00+01:00'
    """
    i, score = pick
    return {
        "start": iso_local(from_ms(int(starts[i]))),
        "end": iso_local(from_ms(int(starts[i]) + WINDOW_HOURS * MS_PER_HOUR)),
        "score": score,
    }


def briefing(engine, lat, lng, now, lang: str = DEFAULT) -> dict:
    """Operations briefing at a point: ``risk``, ``headline``, ``keyFacts``, ``bestWindow``,
    ``worstWindow``, ``nextRushPeak``.

    Parameters
    ----------
    engine : geo.Engine
    lat, lng : float
        WGS84 degrees inside the service area (else ``OutsideServiceArea``).
    now : datetime.datetime
        Aware instant of the request.
    lang : str
        Language of the generated texts (``headline``, ``keyFacts[].text``): one of
        :data:`geo.rules.texts.LANGUAGES`; numbers and codes do not depend on it.

    Examples
    --------
    >>> briefing(engine, 51.2194, 4.4025, now)["risk"] in ("low", "moderate", "high")  # doctest: +SKIP
    True
    """
    return briefing_for(engine, checked_point(engine, lat, lng), now, lang)


def briefing_for(engine, point: Point, now, lang: str = DEFAULT, around=None) -> dict:
    """:func:`briefing` at a point already checked by :func:`geo.service.point.checked_point` (``around``:
    its :class:`geo.service.around.Around`, when the caller keeps one)."""
    lat, lng = point
    m = moment(engine, now)
    found = dis.find_at(engine, lat, lng, m, around)
    t = dis.tally(m.lookups, found, NEAR_WORK_KM)
    counts = dis.summary_of(t, found)
    reading = air_mod.read_at(engine, lat, lng, m, around)
    _, level = risk_one(*t.risk_args(reading.compliance, found.stops_near))
    b_start, b_end, b_score, w_start, w_end, w_score = _windows_at(m, found, t.running)
    kind, r_start, r_peak, r_end = m.rush()
    return {
        "risk": RISK_NAMES[level],
        "headline": headline(level, counts, reading.compliance, found.stops_near, lang),
        "keyFacts": key_facts(
            m.lookups.prepared, t.nearest_running_km, counts, found.stops_near, reading, lang
        ),
        "bestWindow": {"start": b_start, "end": b_end, "score": b_score},
        "worstWindow": {"start": w_start, "end": w_end, "score": w_score},
        "nextRushPeak": {"kind": kind, "start": r_start, "peak": r_peak, "end": r_end},
    }


def _windows_at(m, found, n_running: int) -> tuple:
    """Best and worst window of a point as ``(start, end, score) * 2`` strings and floats: the rule of
    :mod:`geo.rules.windows` on the clock's cached :func:`~geo.rules.windows.slot_profile`, formatted as
    :func:`window_json` does, and cached per instant and load situation (running works and the ordered
    detour selection: the order fixes the floating-point sum)."""
    sel = found.detours if found.stops_near else found.detours[:0]
    key = (n_running, sel.tobytes())

    def compute():
        starts, traffic, load_per_detour = m.slots()
        best, worst = windows(
            starts, win.slot_scores(traffic, load_per_detour, n_running, sel, True), m.now_ms
        )
        out = ()
        for i, score in (best, worst):
            s = int(starts[i])
            out += (m.local_iso(s), m.local_iso(s + WINDOW_HOURS * MS_PER_HOUR), score)
        return out

    return m.windows(key, compute)


def key_facts(p, nearest_km, counts, stops_near: bool, reading, lang: str = DEFAULT) -> list:
    """The fixed list of key facts (always the same keys, in the same order) in ``lang``, from the prepared
    data ``p``, the distance of the nearest running work (:attr:`geo.rules.tally.Tally.nearest_running_km`,
    None when there is none), the ``summary`` counts, whether a stop lies near and the NO2 reading."""
    nearest = round(nearest_km, 3) + 0.0 if nearest_km is not None else None
    n_act, n_up = counts["activeWorks"], counts["upcomingWorks14d"]
    n_tr, n_hi = counts["transitDisruptions"], counts["highSeverityTransit"]
    a = p.air
    if reading.n_values:
        no2 = round(reading.value, 1) + 0.0
        station = a.station_names[reading.station] or a.station_ids[reading.station]
        no2_text = _no2_text(reading.value, station, a.station_ids[reading.station], lang)
    else:
        no2_text, no2 = catalogue(lang)("fact.no2.none"), None
    texts = _fact_texts(
        n_act,
        None if nearest is None else round(nearest * 1000),
        n_up,
        n_tr,
        n_hi,
        stops_near,
        bool(reading.in_lez),
        lang,
    )
    return [
        {"key": "activeWorks", "text": texts[0], "value": n_act},
        {"key": "nearestActiveWorkKm", "text": texts[1], "value": nearest},
        {"key": "upcomingWorks14d", "text": texts[2], "value": n_up},
        {"key": "transitDisruptions", "text": texts[3], "value": n_tr},
        {"key": "highSeverityTransit", "text": texts[4], "value": n_hi},
        {"key": "transitFallback", "value": None if stops_near else n_tr, "text": texts[5]},
        {"key": "no2", "text": no2_text, "value": no2},
        {"key": "lez", "text": texts[6], "value": reading.in_lez},
    ]


@lru_cache(maxsize=4096)  # small integers and flags: the same texts recur across points and requests
def _fact_texts(
    n_act: int, nearest_m, n_up: int, n_tr: int, n_hi: int, stops_near: bool, in_lez: bool, lang: str
) -> tuple:
    """The texts of the key facts but ``no2``, in :func:`key_facts` order (a tuple: shared, never changed)."""
    t = catalogue(lang)
    return (
        _cap(_works_phrase(t, n_act)),
        t("fact.nearest", m=nearest_m)
        if nearest_m is not None
        else t("fact.nearest.none", radius=wk.RADIUS_TEXT),
        t("fact.upcoming.none") if n_up == 0 else t.plural("fact.upcoming", n_up),
        _cap(_transit_phrase(t, n_tr, 0)),
        t("fact.high.none") if n_hi == 0 else t.plural("fact.high", n_hi),
        _fallback_text(t, stops_near, n_tr),
        t("fact.lez.inside" if in_lez else "fact.lez.outside"),
    )


@lru_cache(maxsize=4096)
def _no2_text(value: float, station: str, station_id: str, lang: str) -> str:
    t = catalogue(lang)
    return t("fact.no2", value=t.decimal(value, 1), station=station, id=station_id)


def daytime_window(engine, lat, lng, now, hours: tuple[int, int] = win.DAYTIME_HOURS):
    """The quietest 2-hour window of the next 24 h within local ``hours`` (:func:`geo.rules.windows.daytime_best`)
    as :func:`window_json` gives it, or None: the window the dashboard proposes to people (the API's
    ``bestWindow`` may lie at night)."""
    lat, lng = checked_point(engine, lat, lng)
    m = moment(engine, now)
    found = dis.find_at(engine, lat, lng, m)
    starts, scores = slot_scores(engine, found, m.now_ms)
    pick = win.daytime_best(starts, scores, m.now_ms, hours)
    return None if pick is None else window_json(starts, pick)
