"""The change feed's detours follow the live answer's rule, weekdays included (docs/rules.md, "Change feed:
a detour's days"): each row is one detour and two publishes; the feed's events and valid times are worked out
by hand, and at each publish the derivation's "hits" equals ``/disruptions`` listing the detour."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

import rules_world as W

from geo.batch.changes import Side, publish_changes
from geo.rules import transit as tr
from geo.rules.timefmt import to_ms
from geo.service.disruptions import disruptions

LAT, LNG = W.P
STOP = [("1_101", "1", round(LAT + 0.002, 7), LNG, "7")]  # 0.222 km: serves line 7
WEEKDAYS = "MAANDAG,DINSDAG,WOENSDAG,DONDERDAG,VRIJDAG"


def utc(*a) -> datetime:
    return datetime(*a, tzinfo=timezone.utc)


FRI, SAT, SUN, MON = (
    utc(2026, 11, 20, 12),
    utc(2026, 11, 21, 12),
    utc(2026, 11, 22, 12),
    utc(2026, 11, 23, 12),
)
SAT_0, MON_0 = "2026-11-20T23:00:00Z", "2026-11-22T23:00:00Z"  # 00:00 in Brussels (CET)

# (days, start, end, before publish, after publish, events as (type, validAt))
TABLE = [
    # weekdays only: stops at Saturday 00:00 Brussels, starts again at Monday 00:00
    (WEEKDAYS, "2026-11-01T00:00:00Z", None, FRI, SAT, [("detour.stopped", SAT_0)]),
    (WEEKDAYS, "2026-11-01T00:00:00Z", None, SAT, SUN, []),
    (WEEKDAYS, "2026-11-01T00:00:00Z", None, SUN, MON, [("detour.started", MON_0)]),
    (WEEKDAYS, "2026-11-01T00:00:00Z", None, FRI, MON, []),  # off over the weekend, back on: the same state
    # every day (empty days): the weekend changes nothing
    ("", "2026-11-01T00:00:00Z", None, FRI, SAT, []),
    # the period: starts at its start, stops at its end
    ("", "2026-11-20T15:00:00Z", None, FRI, SAT, [("detour.started", "2026-11-20T15:00:00Z")]),
    (
        "",
        "2026-11-01T00:00:00Z",
        "2026-11-20T18:00:00Z",
        FRI,
        SAT,
        [("detour.stopped", "2026-11-20T18:00:00Z")],
    ),
    # a Saturday-only detour that starts on a Friday: it hits from Saturday 00:00, not from its start
    ("ZATERDAG", "2026-11-20T15:00:00Z", None, FRI, SAT, [("detour.started", SAT_0)]),
    # weekdays only, period ending on the Saturday: not on its day when its period ends, it stopped at midnight
    (WEEKDAYS, "2026-11-01T00:00:00Z", "2026-11-21T10:00:00Z", FRI, SAT, [("detour.stopped", SAT_0)]),
]


def _engine(days, start, end):
    row = ("40001", "1", "7", "", start, end, days, (round(LAT + 0.003, 7), LNG))
    return W.engine(stop_rows=STOP, detour_rows=[row])


def _iso(ms):
    return (
        None if ms is None else datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    )


@pytest.mark.parametrize(("days", "start", "end", "before", "after", "expected"), TABLE)
def test_detour_events_follow_the_live_rule_from_the_table(days, start, end, before, after, expected):
    engine = _engine(days, start, end)
    b, a = Side(engine, to_ms(before), {}, {}), Side(engine, to_ms(after), {}, {})
    found = publish_changes(b, a, np.array([LAT]), np.array([LNG]), {})
    assert [(c.type, _iso(c.valid_ms)) for c in found if c.subject.startswith("detour:")] == expected
    # the derivation's state at each publish is the live answer's
    listed = [
        any(t["id"] == "40001" for t in disruptions(engine, LAT, LNG, at)["transit"])
        for at in (before, after)
    ]
    kinds = {c.type for c in found}
    if listed[0] != listed[1]:
        assert kinds == {"detour.started" if listed[1] else "detour.stopped"}
    else:
        assert not kinds & {"detour.started", "detour.stopped"}


def test_turned_at_is_none_without_a_change_and_the_last_switch_with_several():
    week = tr.day_mask(WEEKDAYS)
    # Friday noon to the next Tuesday noon: off at Saturday 00:00, on again at Monday 00:00 -> Monday
    assert _iso(tr.turned_at(0, tr_no_end(), week, to_ms(FRI), to_ms(utc(2026, 11, 24, 12)))) == MON_0
    assert tr.turned_at(0, tr_no_end(), tr.ALL_DAYS, to_ms(FRI), to_ms(MON)) is None


def tr_no_end():
    from geo.rules.timefmt import NO_END_MS

    return int(NO_END_MS)
