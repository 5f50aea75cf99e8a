"""The single-point fast path (geo.service.lookups, geo.index.near_one, geo.service.moment) gives the rules'
answers exactly.

The oracles are the vectorised rule functions and the engine's own radius queries, on a constructed world
with works on both river banks, recurring works, stops with lines and detours with periods and weekdays.
"""

import copy
import json
import math
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rules_world as W
from geo.service import air, briefing as br, disruptions as dis
from geo.rules import works as wk
from geo.service.lookups import stop_detour_masks
from geo.index.near_one import NearTable
from geo.service.loaded import loaded, prepare
from geo.index.spherical import haversine_rad
from geo.rules.timefmt import from_ms, iso_utc_ms

UTC = timezone.utc
RUN, PLAN = "In uitvoering", "Concreet gepland"


def _world(seed=3):
    rng = np.random.default_rng(seed)
    n = 160
    lat, lng = rng.normal(51.22, 0.012, n), rng.normal(4.40, 0.02, n)
    statuses = rng.choice([RUN, PLAN, "Gepland", "Uitgevoerd"], n)
    starts = [f"2026-11-{d:02d}T07:00:00Z" for d in rng.integers(1, 30, n)]
    works = [
        (f"W{i:03d}", f"Werk {i % 40}", s, round(a, 6), round(b, 6), st_, None)
        for i, (s, a, b, st_) in enumerate(zip(statuses, lat, lng, starts))
    ]
    works += [
        ("R1", "Werk 1", RUN, 51.2200, 4.4200, "2026-11-01T07:00:00Z", None),  # recurring pair
        ("R2", "werk  1", RUN, 51.2202, 4.4200, "2026-11-03T07:00:00Z", None),
    ]
    stops = [
        (
            f"1_{i}",
            "1" if i % 5 else "2",
            round(a, 6),
            round(b, 6),
            ",".join(map(str, rng.integers(1, 12, 2))),
        )
        for i, (a, b) in enumerate(zip(rng.normal(51.22, 0.01, 90), rng.normal(4.40, 0.015, 90)))
    ]
    days = ["", "MAANDAG", "ZATERDAG,ZONDAG", "DINSDAG,WOENSDAG"]
    detours = [
        (
            f"3{i:04d}",
            "1",
            ",".join(map(str, rng.integers(1, 12, 1 + i % 3))),
            "1_1," * (i % 6),
            f"2026-11-{1 + i % 20:02d}T{i % 24:02d}:00:00Z",
            None if i % 4 == 0 else f"2026-11-{16 + i % 3:02d}T{(5 * i) % 24:02d}:30:00Z",
            days[i % 4],
            None if i % 7 == 3 else (round(51.21 + 0.002 * (i % 9), 6), round(4.38 + 0.005 * (i % 7), 6)),
        )
        for i in range(24)
    ]
    no2 = [("42R801", f"2026-11-16T{h:02d}:00:00Z", 18.0 + h, "measured") for h in range(3, 11)]
    return dict(works_rows=works, stop_rows=stops, detour_rows=detours, no2_rows=no2)


WORLD = _world()


@pytest.fixture(scope="module")
def world():
    return W.engine(**WORLD)


@settings(max_examples=150, deadline=None)
@given(st.floats(51.17, 51.27), st.floats(4.33, 4.47), st.integers(0, 20 * 24))
def test_find_equals_the_vectorised_rules(world, lat, lng, hours):
    now = datetime(2026, 11, 8, 0, 0, tzinfo=UTC) + timedelta(hours=hours, minutes=7)
    got = dis.find(world, lat, lng, now)
    ref = dis.find_by_rules(world, lat, lng, now)
    for a, b in zip(got[:5], ref[:5]):
        assert a.tolist() == b.tolist()
    assert got.stops_near == ref.stops_near


@settings(max_examples=200, deadline=None)
@given(st.floats(51.17, 51.27), st.floats(4.33, 4.47))
def test_near_table_equals_the_engine_radius_query(world, lat, lng):
    t = NearTable(world.stops.geometry.y.to_numpy(), world.stops.geometry.x.to_numpy(), 0.4)
    k, km = t.within(lat, lng)
    order = np.argsort(t.point[k], kind="stable")
    rows, dist = world.stops_near(lat, lng, 0.4)
    by_row = np.argsort(rows, kind="stable")
    assert t.point[k][order].tolist() == rows[by_row].tolist()
    assert km[order].tolist() == dist[by_row].tolist()  # the same floats, not merely close


def test_near_table_on_the_radius_is_inclusive():
    dlat = math.degrees(2.0 / 6371.0088)  # exactly 2 km north along the meridian (up to rounding)
    t = NearTable(np.array([51.0 + dlat, 51.0 + 2 * dlat]), np.array([4.0, 4.0]), 2.0)
    k, km = t.within(51.0, 4.0)
    ref = haversine_rad(
        np.radians([51.0]),
        np.radians([4.0]),
        np.cos(np.radians([51.0])),
        np.radians([51.0 + dlat]),
        np.radians([4.0]),
        np.cos(np.radians([51.0 + dlat])),
    )
    assert t.point[k].tolist() == ([0] if ref[0] <= 2.0 else [])
    assert NearTable(np.zeros(0), np.zeros(0), 2.0).within(51.0, 4.0)[0].size == 0


@settings(max_examples=200, deadline=None)
@given(*[st.integers(0, 12)] * 6, st.sampled_from([0, 1, 2, 3]), st.booleans())
def test_risk_one_equals_the_vectorised_score(near, other, up, low, medium, high, compliance, stops_near):
    score, level = br.risk_one(near, other, up, low, medium, high, compliance, stops_near)
    vec = br.risk_score([near], [other], [up], [low], [medium], [high], [compliance], [stops_near])
    assert score == float(vec[0]) and level == int(br.risk_level(vec)[0])


@settings(max_examples=300, deadline=None)
@given(st.integers(-62_135_596_800_000, 253_402_300_799_999))
def test_iso_utc_ms_equals_strftime(ms):
    dt = from_ms(ms)
    assert iso_utc_ms(ms) == dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _instants():
    """Instants on and around the world's boundaries: detour starts/ends, measurement t and t + 2 h,
    local midnight, a rush end (08:30Z), on and just off the hour (08:00Z: the 23rd window, Tuesday
    07:00-09:00 local, is the worst and fits only on the hour), and the same instant in another zone."""
    out = []
    for base in (
        "2026-11-16T05:30:00",
        "2026-11-16T09:00:00",
        "2026-11-16T11:00:00",
        "2026-11-15T23:00:00",
        "2026-11-17T04:30:00",
        "2026-11-16T06:59:59.999",
        "2026-11-16T08:30:00",
        "2026-11-16T08:00:00",
    ):
        t = datetime.fromisoformat(base).replace(tzinfo=UTC)
        out += [t - timedelta(milliseconds=1), t, t + timedelta(milliseconds=1), t + timedelta(seconds=59)]
    out.append(datetime(2026, 11, 16, 10, 0, tzinfo=timezone(timedelta(hours=-3))))
    brussels = ZoneInfo("Europe/Brussels")  # the autumn fold: equal as datetimes, an hour apart as instants
    out += [
        datetime(2026, 10, 25, 2, 30, tzinfo=brussels),
        datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=brussels),
    ]
    return out


def _fresh(template):
    """A new engine over ``template``'s layers with no clock cache: a new object, so ``loaded`` makes it a new
    loaded snapshot (its own prepared data, lookups and empty clock caches); only the clock-free spatial
    indexes of the layers (built once, the slow part) are the template's."""
    fresh = copy.copy(template)
    times = loaded(fresh).times
    assert loaded(fresh) is not loaded(template) and times.last is None
    assert not (
        times.upcoming or times.active or times.readings or times.slots or times.windows or times.rush
    )
    return fresh


def test_cached_clock_data_equals_a_fresh_engine(world):
    points = [(51.2200, 4.4200), (51.2150, 4.3900), (51.2300, 4.4100), (51.4500, 4.9000)]
    template = W.engine(
        **WORLD
    )  # not `world`: its spatial indexes are built by the first fresh engine's queries
    for now in _instants():
        fresh = _fresh(template)  # no clock cache: every value computed for this instant alone
        for lat, lng in points:
            for fn in (br.briefing, dis.disruptions, air.air_quality):
                assert json.dumps(fn(world, lat, lng, now)) == json.dumps(fn(fresh, lat, lng, now)), (fn, now)


def test_same_instant_in_another_zone_gives_the_same_answer(world):
    now = datetime(2026, 11, 16, 7, 0, tzinfo=UTC)
    other = now.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert br.briefing(world, 51.22, 4.42, now) == br.briefing(world, 51.22, 4.42, other)
    with pytest.raises(ValueError):
        br.briefing(world, 51.22, 4.42, now.replace(tzinfo=None))


def test_responses_do_not_share_mutable_parts(world):
    now = datetime(2026, 11, 16, 7, 0, tzinfo=UTC)
    first = dis.disruptions(world, 51.22, 4.42, now)
    assert first["transit"] and first["construction"]
    first["transit"][0]["lines"].append("X")
    first["construction"][0]["distanceKm"] = -1
    second = dis.disruptions(world, 51.22, 4.42, now)
    assert "X" not in second["transit"][0]["lines"] and second["construction"][0]["distanceKm"] >= 0


def test_upcoming_flags_follow_the_brussels_date(world):
    from geo.service.loaded import loaded
    from geo.service.moment import Moment

    works = prepare(world).works
    start = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # spans the end of summer time
    for h in range(0, 40 * 24, 5):
        now = start + timedelta(hours=h)
        assert Moment(loaded(world), now).upcoming.tolist() == wk.upcoming_clusters(works, now).tolist(), now


def test_build_of_a_reading_from_another_instant_reports_that_reading(engine):
    now = engine.as_of
    r = air.read(engine, 51.2194, 4.4025, now - timedelta(hours=1))
    assert r.n_values > 0
    out = air.build(engine, r, now)["reading"]
    assert out["measuredAt"] == iso_utc_ms(r.measured_ms)
    assert out["ageMinutes"] == (int(now.timestamp() * 1000) - r.measured_ms) // 60_000
    assert out["value"] == round(r.value, 1)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40), st.integers(1, 70), st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_stop_detour_masks_equal_the_pairwise_rule(n_stops, n_detours, n_lines, seed):
    rng = np.random.default_rng(seed)
    stops = rng.random((n_stops, n_lines)) < 0.2
    detours = rng.random((n_detours, n_lines)) < 0.2
    got = stop_detour_masks(np.packbits(stops, axis=1), np.packbits(detours, axis=1))
    want = [sum(1 << j for j in range(n_detours) if (stops[s] & detours[j]).any()) for s in range(n_stops)]
    assert got == want
