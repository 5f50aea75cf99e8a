"""The single-point endpoints equal the previous per-request path (the public vectorised rules composed per
call, kept in ``bench/bench_point.py`` as the benchmark's baseline) on the demo snapshot, byte for byte,
over random points and instants, including both DST changes and the autumn fold."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # bench/ is a top-level folder, not an installed package
    sys.path.insert(0, str(ROOT))

from bench.bench_point import previous_air_quality, previous_briefing, previous_disruptions  # noqa: E402
from geo.service import air, briefing, disruptions  # noqa: E402

PAIRS = [(disruptions.disruptions, previous_disruptions), (air.air_quality, previous_air_quality),
         (briefing.briefing, previous_briefing)]
BRUSSELS = ZoneInfo("Europe/Brussels")


@pytest.fixture(scope="module")
def points(engine):
    from bench import service_points

    lat, lng = service_points(engine, 400, seed=11)
    return list(zip(lat.tolist(), lng.tolist()))


def _dump(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 399), st.integers(-40 * 24 * 60, 3 * 24 * 60), st.integers(0, 59_999))
def test_fast_path_equals_the_previous_path(engine, points, i, minutes, ms):
    lat, lng = points[i]
    now = engine.as_of + timedelta(minutes=minutes, milliseconds=ms)
    for fast, slow in PAIRS:
        assert _dump(fast(engine, lat, lng, now)) == _dump(slow(engine, lat, lng, now)), (fast.__name__, now)


def test_fast_path_equals_the_previous_path_around_dst(engine, points):
    instants = [  # in this order: the fold pair is equal as datetimes, an hour apart as instants
        datetime(2026, 10, 25, 2, 30, tzinfo=BRUSSELS), datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=BRUSSELS),
        datetime(2026, 3, 29, 0, 59, 59, 999_000, tzinfo=UTC), datetime(2026, 3, 29, 1, 0, tzinfo=UTC)]
    for now in instants:
        for lat, lng in points[:25]:
            for fast, slow in PAIRS:
                assert _dump(fast(engine, lat, lng, now)) == _dump(slow(engine, lat, lng, now)), (fast, now)
