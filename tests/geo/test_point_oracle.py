"""The single-point endpoints equal the reference path (``geo.service.by_rules``: the public vectorised rules
composed per call, also the baseline of ``bench/bench_point.py``) on the demo snapshot, byte for byte,
over random points and instants, including both DST changes and the autumn fold."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geo.service import air, briefing, by_rules, disruptions

PAIRS = [
    (disruptions.disruptions, by_rules.disruptions),
    (air.air_quality, by_rules.air_quality),
    (briefing.briefing, by_rules.briefing),
]
BRUSSELS = ZoneInfo("Europe/Brussels")


@pytest.fixture(scope="module")
def points(engine):
    """400 seeded random points inside the service area."""
    rng = np.random.default_rng(11)
    minx, miny, maxx, maxy = engine.service_area.total_bounds
    lat, lng = rng.uniform(miny, maxy, 4000), rng.uniform(minx, maxx, 4000)
    inside = engine.in_service_area(lat, lng)
    return list(zip(lat[inside][:400].tolist(), lng[inside][:400].tolist()))


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
        datetime(2026, 10, 25, 2, 30, tzinfo=BRUSSELS),
        datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=BRUSSELS),
        datetime(2026, 3, 29, 0, 59, 59, 999_000, tzinfo=UTC),
        datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
    ]
    for now in instants:
        for lat, lng in points[:25]:
            for fast, slow in PAIRS:
                assert _dump(fast(engine, lat, lng, now)) == _dump(slow(engine, lat, lng, now)), (fast, now)
