"""Cold ``asOf`` answers from the rows near the point (``app.history.local``): at random publishes, instants
and points of the simulated year — and at points chosen where locality is hardest: 2 km from a work, 2 km
from a member of a cluster of several, halfway between two NO2 stations — the engine built from the rows near
the point answers ``/disruptions``, ``/air-quality`` and ``/briefing`` (every language) and the NO2 hour of
the ``sources`` member exactly as the engine of the whole publish, on both store backends."""

from __future__ import annotations

import math
import random
from datetime import timedelta

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import Point

from app.history import asof, local
from app.history.store import open_store
from geo.errors import GeoError
from geo.rules import prepared
from geo.service.air import air_quality, latest_measured_ms
from geo.service.briefing import briefing
from geo.service.disruptions import disruptions

pytestmark = pytest.mark.timeout(1800)

CASES = 24


@pytest.fixture
def no_near_engines():
    """No point-local engines kept before and after the test (``fresh_asof_process`` drops the whole ones)."""
    asof._near.clear()
    asof._near_points.clear()
    yield
    asof._near.clear()
    asof._near_points.clear()


def _offset(lat: float, lng: float, km: float, bearing: float) -> tuple[float, float]:
    """The point ``km`` from (lat, lng) towards ``bearing`` (radians), on a sphere."""
    d = km / 6371.0088
    la, ln = math.radians(lat), math.radians(lng)
    la2 = math.asin(math.sin(la) * math.cos(d) + math.cos(la) * math.sin(d) * math.cos(bearing))
    ln2 = ln + math.atan2(
        math.sin(bearing) * math.sin(d) * math.cos(la), math.cos(d) - math.sin(la) * math.sin(la2)
    )
    return round(math.degrees(la2), 6), round(math.degrees(ln2), 6)


def _hard_points(engine, rng: random.Random) -> list[tuple[float, float]]:
    """Points where locality is hardest in ``engine``'s snapshot: about 2 km (± 40 m) from a work, from a
    member of a cluster of several, and halfway (± 30 m) between two NO2 stations; and random ones."""
    works = engine.works
    lat, lng = engine.layer_points("works")
    ok = np.flatnonzero(np.isfinite(lat))
    keys = np.array([prepared.wk.description_key(d) for d in works["description"]], dtype=object)
    _, counts = np.unique(keys[ok], return_counts=True)
    shared = set(np.unique(keys[ok])[counts > 1].tolist())
    members = [int(i) for i in ok if keys[i] in shared]
    out = []
    for rows in (ok.tolist(), members or ok.tolist()):
        for i in rng.sample(rows, 6):
            out.append(_offset(lat[i], lng[i], 2.0 + rng.uniform(-0.04, 0.04), rng.uniform(0, 2 * math.pi)))
    s_lat, s_lng = engine.layer_points("stations")
    flag = engine.stations["no2"].fillna(False).to_numpy(dtype=bool)
    no2 = [int(i) for i in np.flatnonzero(flag & np.isfinite(s_lat)) if 50.9 < s_lat[i] < 51.45]
    for _ in range(6):
        a, b = rng.sample(no2, 2)
        mid = ((s_lat[a] + s_lat[b]) / 2, (s_lng[a] + s_lng[b]) / 2)
        out.append(_offset(*mid, rng.uniform(0, 0.03), rng.uniform(0, 2 * math.pi)))
    for _ in range(6):
        out.append((round(rng.uniform(51.15, 51.3), 6), round(rng.uniform(4.3, 4.5), 6)))
    return out


def _answers(engine, lat: float, lng: float, now) -> list:
    try:
        out = [disruptions(engine, lat, lng, now), latest_measured_ms(engine, now)]
        for lang in ("nl", "fr", "en"):
            out += [air_quality(engine, lat, lng, now, lang), briefing(engine, lat, lng, now, lang)]
        return out
    except GeoError as exc:  # outside the service area: both say so
        return [type(exc).__name__, str(exc)]


@pytest.mark.slow
def test_answers_from_the_rows_near_the_point_are_those_of_the_whole_publish(
    year_store_url, year_dirs, year_engine, fresh_asof_process, no_near_engines
):
    """24 cases per backend, the path taken asserted: most are answered from the rows near
    the point, and those rows are few."""
    history = open_store(year_store_url)
    live = year_engine(-1)
    index = asof.publish_index(history)
    publishes = [index.at(history, int(instant.timestamp() * 1000)) for instant, _path in year_dirs]
    rng = random.Random(2639)
    near_built = 0
    for case in range(CASES):
        k = rng.randrange(len(year_dirs) - 1)
        publish, whole = publishes[k], year_engine(k)
        points = _hard_points(whole, random.Random(case))
        lat, lng = points[case % len(points)]
        until = index.until(publish)
        instant = publish.as_of + timedelta(seconds=rng.uniform(0, (until - publish.as_of_ms) / 1000))
        try:
            engine = local.engine_near(history, publish, [live], lat, lng, until)
        except local.NotLocal:
            continue
        near_built += 1
        assert len(engine.works) < len(whole.works) / 4 and len(engine.no2) < 50
        for now in (instant, publish.as_of):
            assert _answers(engine, lat, lng, now) == _answers(whole, lat, lng, now), (k, lat, lng, now)
    assert near_built >= CASES * 0.7
    history.close()


def test_a_point_whose_cluster_reaches_beyond_the_rows_read_is_answered_by_the_whole_publish(
    year_store_url, year_dirs, year_engine, fresh_asof_process, no_near_engines, monkeypatch
):
    """No round of boxes allowed: a cluster near the point that reaches the edge of the rows read makes the
    answer not local, and :func:`app.history.asof.engine_at` answers from the whole publish's engine."""
    history = open_store(year_store_url)
    index = asof.publish_index(history)
    instant, _path = year_dirs[6]
    publish = index.at(history, int(instant.timestamp() * 1000))
    point = (51.2194, 4.4025)
    engine = local.engine_near(history, publish, [year_engine(-1)], *point, index.until(publish))
    assert len(engine.works) < len(year_engine(6).works)
    monkeypatch.setattr(local, "ROUNDS", 0)
    with pytest.raises(local.NotLocal):
        local.engine_near(history, publish, [year_engine(-1)], *point, index.until(publish))
    before = dict(asof.built)
    whole = asof.engine_at(history, publish, year_engine(-1), point, index.until(publish))
    assert asof.built["not_local"] == before["not_local"] + 1 and whole is asof.engine_of(history, publish)
    assert len(whole.works) == len(year_engine(6).works)
    assert _answers(whole, *point, instant) == _answers(year_engine(6), *point, instant)
    history.close()


def test_the_works_values_of_a_row_do_not_depend_on_the_other_rows_nulls():
    """An integer column with a null in another row is read as floats: a row's occurrences stay its own (a
    frame of the rows near a point has other rows than the whole layer)."""
    rows = {
        "id": ["a", "b"],
        "description": ["x", "y"],
        "status": ["In uitvoering", "In uitvoering"],
        "start": pd.to_datetime(["2026-01-01", "2026-01-02"], utc=True),
        "end": pd.to_datetime(["2026-02-01", "2026-02-02"], utc=True),
        "occurrences": pd.array([3, 2], dtype="int64"),
        "hindrance": pd.array([1, 0], dtype="int64"),
        "consequences": ["", ""],
    }
    geometry = [Point(4.4, 51.2), Point(4.41, 51.21)]
    alone = gpd.GeoDataFrame({k: v[:1] for k, v in rows.items()}, geometry=geometry[:1], crs="EPSG:4326")
    with_null = gpd.GeoDataFrame(
        {**rows, "occurrences": [3.0, float("nan")], "hindrance": [1.0, float("nan")]},
        geometry=geometry,
        crs="EPSG:4326",
    )
    assert with_null["occurrences"].dtype == np.float64
    values_alone, values_null = prepared._work_values(alone), prepared._work_values(with_null)
    assert values_alone[5][0] == values_null[5][0] == 3  # occurrences
    assert values_alone[10][0] == values_null[10][0]  # the whole item


def test_the_works_read_near_a_point_grow_until_its_clusters_are_whole():
    """A chain of works with one description, 33 m apart, from within the 2 km reach to 3 km beyond the box
    read: ``geo`` asks for boxes around its members at the edge until every link of the chain is read; a
    chain of another description beside it (out of reach) and one south out of reach are not followed."""
    import pyarrow as pa
    import shapely

    from geo.service import local as near

    lat0, lng0 = 51.2, 4.4
    rows = []  # (description, lat, lng)
    start = lat0 + 2.0 / 111.19  # 2 km north: within reach
    rows += [("riolering", start + i * 0.0003, lng0) for i in range(120)]  # ~4 km long, northwards
    rows += [("asfalt", start + i * 0.0003, lng0 + 0.001) for i in range(40, 160)]  # beside it from 3.3 km
    rows += [("riolering", lat0 - 3.0 / 111.19 - i * 0.0003, lng0) for i in range(40)]  # out of reach, south

    def table(picked):
        return pa.table(
            {
                "status": ["In uitvoering"] * len(picked),
                "description": [rows[i][0] for i in picked],
                "geometry": [shapely.to_wkb(Point(rows[i][2], rows[i][1])) for i in picked],
            }
        )

    def meets(i, b):
        return b[0] <= rows[i][1] <= b[2] and b[1] <= rows[i][2] <= b[3]

    read = [near.box(lat0, lng0, near.FETCH_KM)]
    picked = [i for i in range(len(rows)) if meets(i, read[0])]
    asked = 0
    while True:
        more = near.works_to_read(table(picked), lat0, lng0, read)
        if not more:
            break
        asked += 1
        read += more
        picked = [i for i in range(len(rows)) if any(meets(i, b) for b in read)]
    chain = set(range(120))
    assert chain <= set(picked) and asked > 5  # the whole chain, followed a few members at a time
    assert not set(range(240, 280)) & set(picked)  # the southern chain: never near a cluster in reach
    beside = set(range(120, 240)) & set(picked)  # the other description, out of reach: read beside the chain
    assert beside and max(rows[i][1] for i in beside) < rows[119][1] + 0.002  # ... but not followed beyond it
