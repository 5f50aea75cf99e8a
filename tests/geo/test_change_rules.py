"""The change-feed rules from tables: NO2 hysteresis (one event per real crossing) and work classification."""

from __future__ import annotations

import math

import pytest

from geo.rules import changes as ch

H = 3_600_000
N = math.nan

# (figure, hourly values from hour 0 (NaN: not measured), expected crossings as (state, hour), final state)
HYSTERESIS = [
    # the first value sets the state without an event
    ("eu", [45, 46, 47], [], "above"),
    ("eu", [30, 31], [], "below"),
    # one hour above is not a crossing (dwell 2); two consecutive are, confirmed at the second
    ("eu", [39, 41, 39, 41, 42], [("above", 4)], "above"),
    # hovering around 40 after going above: 38-40 lie in the dead band (36, 40], no event
    ("eu", [39, 41, 42, 39, 40, 38, 41, 39, 37, 38], [("above", 2)], "above"),
    # back below needs two consecutive hours at or below 36
    ("eu", [39, 41, 42, 36, 37, 36, 35], [("above", 2), ("below", 6)], "below"),
    # an oscillating series: one event per real crossing, not one per hour
    (
        "eu",
        [30, 41, 39, 41, 39, 41, 39, 41, 42, 43, 41, 39, 41, 35, 37, 35, 34, 41, 42],
        [("above", 8), ("below", 16), ("above", 18)],
        "above",
    ),
    # a missing hour breaks a run: 41, gap, 41 is not two consecutive hours
    ("eu", [39, 41, N, 41, 39], [], "below"),
    ("eu", [39, 41, N, 41, 41], [("above", 4)], "above"),
    # WHO 10: margin 10 % (back below at 9 or less)
    ("who", [8, 11, 12, 9.5, 10, 9.1, 9, 9, 12], [("above", 2), ("below", 7)], "below"),
    # exactly the figure is not above it; exactly the lower bound counts as below
    ("who", [9, 10, 10, 10], [], "below"),
    ("who", [11, 11, 9, 9], [("below", 3)], "below"),
]


@pytest.mark.parametrize(("fig", "values", "expected", "final"), HYSTERESIS)
def test_no2_hysteresis_from_the_table(fig, values, expected, final):
    rule = ch.FIGURES[fig][0]
    level, found = ch.advance(rule, ch.Level(), [k * H for k in range(len(values))], values)
    assert [(ch.STATE_NAMES[x.state], x.hour // H) for x in found] == expected
    assert ch.STATE_NAMES[level.state] == final


@pytest.mark.parametrize("split", [1, 3, 7, 12])
def test_hysteresis_read_in_pieces_equals_read_at_once(split):
    """Publishes carry overlapping 48-hour windows: reading the series in pieces (hours already read are
    skipped) confirms the same crossings as reading it at once."""
    values = HYSTERESIS[5][1]
    hours = [k * H for k in range(len(values))]
    whole = ch.advance(ch.EU, ch.Level(), hours, values)
    level, first = ch.advance(ch.EU, ch.Level(), hours[:split], values[:split])
    start = max(0, split - 4)  # the next window overlaps the hours read
    level, second = ch.advance(ch.EU, level, hours[start:], values[start:])
    assert (level, first + second) == whole


P = ch.WorkState("Concreet gepland", "2026-07-05", "2026-08-26", "Riolering Driesstraat")
R = ch.WorkState("In uitvoering", "2026-07-05", "2026-08-26", "Riolering Driesstraat")

WORKS = [
    (None, None, None, []),
    (None, P, None, ["work.appeared"]),
    (None, R, None, ["work.appeared"]),
    (P, P, None, []),
    (P, R, None, ["work.started"]),
    (R, R, None, []),
    (P, ch.WorkState(P.status, "2026-07-12", "2026-09-02", P.description), None, ["work.rescheduled"]),
    (P, ch.WorkState(P.status, P.start, "2026-09-02", P.description), None, ["work.rescheduled"]),
    (P, ch.WorkState(P.status, P.start, P.end, "Riolering en wegen"), None, ["work.description_changed"]),
    (
        P,
        ch.WorkState("In uitvoering", "2026-07-06", P.end, "Riolering en wegen"),
        None,
        ["work.started", "work.rescheduled", "work.description_changed"],
    ),
    (R, None, "Uitgevoerd", ["work.ended"]),
    (P, None, "Geannuleerd", ["work.cancelled"]),
    (P, None, "Niet uitgevoerd", ["work.cancelled"]),
    (P, None, None, ["work.removed"]),  # gone from the feed
    (R, None, "In uitvoering", ["work.removed"]),  # still in the feed, no longer listed here
    (R, P, None, []),  # back to planned: not a start, no event of its own
]


@pytest.mark.parametrize(("before", "after", "feed_status", "expected"), WORKS)
def test_work_changes_from_the_table(before, after, feed_status, expected):
    assert ch.work_changes(before, after, feed_status) == expected


def test_event_types_are_unique_and_ranked():
    assert len(set(ch.EVENT_TYPES)) == len(ch.EVENT_TYPES)
    assert [ch.TYPE_RANK[t] for t in ch.EVENT_TYPES] == list(range(len(ch.EVENT_TYPES)))
