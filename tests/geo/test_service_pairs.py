"""The rules that exist as a single-point form and a vectorised form over a snapshot are tested from ONE
table (as Shapely tests its predicates; the pure rule pairs are in test_rule_pairs.py): each row names the
pair, its two forms and the boundary cases (point, instant) on a constructed world with works on both river
banks, stops with lines and detours with periods and weekdays; both forms must give the same values, on the
table's cases and on random ones (Hypothesis)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rules_world as W
from geo.index.near_one import NearTable
from geo.rules import works as wk
from geo.rules.timefmt import to_ms
from geo.service import briefing as br
from geo.service import by_rules
from geo.service import disruptions as dis
from geo.service.loaded import moment, prepare
from test_point_fastpath import WORLD

UTC = timezone.utc


@pytest.fixture(scope="module")
def world():
    return W.engine(**WORLD)


def _selection(found):
    return (
        found.clusters.tolist(),
        found.cluster_km.tolist(),
        found.upcoming.tolist(),
        found.detours.tolist(),
        found.detour_km.tolist(),
        found.stops_near,
    )


def selection_fast(engine, lat, lng, now):
    return _selection(dis.find_at(engine, lat, lng, moment(engine, now)))


def selection_rules(engine, lat, lng, now):
    return _selection(dis.find_by_rules(engine, lat, lng, now))


def windows_fast(engine, lat, lng, now):
    """The cached windows of the single-point path (geo.service.briefing._windows_at)."""
    m = moment(engine, now)
    found = dis.find_at(engine, lat, lng, m)
    return br._windows_at(m, found, dis.tally(m.lookups, found).running)


def windows_rules(engine, lat, lng, now):
    """The windows composed afresh from geo.rules.windows (the reference path)."""
    found = dis.find_by_rules(engine, lat, lng, now)
    starts, scores = br.slot_scores(engine, found, to_ms(now))
    out = ()
    for pick in br.windows(starts, scores, to_ms(now)):
        w = br.window_json(starts, pick)
        out += (w["start"], w["end"], w["score"])
    return out


def facts_fast(engine, lat, lng, now):
    return br.briefing(engine, lat, lng, now)["keyFacts"]


def facts_rules(engine, lat, lng, now):
    return by_rules.briefing(engine, lat, lng, now)["keyFacts"]


def near_fast(engine, lat, lng, now):
    """Works clusters within 2 km through the NearTable (the single-point table)."""
    w = prepare(engine).works
    t = NearTable(w.lat, w.lng, wk.RADIUS_KM)
    k, km = t.within(lat, lng)
    order = np.lexsort((t.point[k], km))
    return t.point[k][order].tolist(), km[order].tolist()


def near_rules(engine, lat, lng, now):
    """The same through the engine's point index over the same points (the RadiusGrid, vectorised)."""
    from geo.index.point_index import PointIndex

    w = prepare(engine).works
    p, rows, km = PointIndex(w.lat, w.lng).within_many(np.array([lat]), np.array([lng]), wk.RADIUS_KM)
    order = np.lexsort((rows, km))
    return rows[order].tolist(), km[order].tolist()


MONDAY = datetime(2026, 11, 16, 7, 0, tzinfo=UTC)  # 08:00 in Brussels, on the hour
CASES = [
    W.P + (MONDAY,),  # right bank, in the LEZ
    (51.2200, 4.3990, MONDAY),  # just on the left bank
    (51.2200, 4.4000, MONDAY),  # on the banks' shared edge
    (51.2200, 4.6000, MONDAY + timedelta(minutes=7)),  # outside the river zone, off the hour
    (51.4500, 4.9000, MONDAY),  # no stop near: the no-stop fallback
    (51.2100, 4.3800, datetime(2026, 11, 1, 0, 0, tzinfo=UTC)),  # Allerheiligen (a Sunday)
    (51.2300, 4.4100, datetime(2026, 10, 25, 0, 30, tzinfo=UTC)),  # end of summer time
    (51.2200, 4.4200, datetime(2026, 11, 16, 16, 30, tzinfo=UTC)),  # a detour end instant (i = 0 mod 3)
    (51.2200, 4.4200, datetime(2026, 11, 21, 9, 0, tzinfo=UTC)),  # a Saturday, on the hour
]

#: name: (single-point form, vectorised form)
PAIRS = {
    "selection (find_at / find_by_rules)": (selection_fast, selection_rules),
    "windows (_windows_at / slot_scores + windows)": (windows_fast, windows_rules),
    "key facts (tally_one / tally)": (facts_fast, facts_rules),
    "near (NearTable / RadiusGrid)": (near_fast, near_rules),
}
TABLE = [(name, case) for name in PAIRS for case in CASES]


@pytest.mark.parametrize(("name", "case"), TABLE, ids=[f"{n}-{CASES.index(c)}" for n, c in TABLE])
def test_single_point_and_vectorised_forms_agree_on_the_table(world, name, case):
    fast, rules = PAIRS[name]
    assert fast(world, *case) == rules(world, *case), (name, case)


@pytest.mark.parametrize("name", sorted(PAIRS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_single_point_and_vectorised_forms_agree_on_random_cases(world, name, data):
    fast, rules = PAIRS[name]
    lat = data.draw(st.floats(51.17, 51.27))
    lng = data.draw(st.floats(4.33, 4.47))
    now = datetime(2026, 11, 8, tzinfo=UTC) + timedelta(minutes=data.draw(st.integers(0, 20 * 24 * 60)))
    assert fast(world, lat, lng, now) == rules(world, lat, lng, now), (name, lat, lng, now)


def test_the_table_sees_a_difference(world):
    """A form that drops the no-stop rule (detours add window load without a stop near) disagrees."""
    lat, lng, now = 51.4500, 4.9000, MONDAY
    found = dis.find_by_rules(world, lat, lng, now)
    assert not found.stops_near and found.detours.size
    p = prepare(world)
    starts, traffic, per_detour = br.win.slot_profile(p.detours, to_ms(now))
    running = by_rules._tally(p, found).running
    with_rule = br.win.slot_scores(traffic, per_detour, running, found.detours, False)
    without = br.win.slot_scores(traffic, per_detour, running, found.detours, True)
    assert (with_rule != without).any()
