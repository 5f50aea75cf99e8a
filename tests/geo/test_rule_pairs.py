"""Every rule that exists as an array form and a scalar form is tested from ONE table (as Shapely tests its
predicates): each row names the pair and the boundary cases; both forms must give the same values, bit for
bit (NaN equals NaN), on the table's cases and on random ones (Hypothesis)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geo.rules import airrules as ar
from geo.rules import risk
from geo.rules import selection as sel
from geo.rules import tally as ta


def _risk_array(*args):
    score = risk.risk_score(*[[a] for a in args])
    return float(score[0]), int(risk.risk_level(score)[0])


def _trend_array(first, last, n):
    cls = ar.trend_class([first], [last], [n])
    return int(cls[0]), float(ar.reported_trend_percent([first], [last], [n])[0])


def _tally_array(status_class, clusters, km, upcoming, severity, detours, near_km):
    return ta.tally(
        np.array(status_class, dtype=np.int8),
        np.array(clusters, dtype=np.int64),
        np.array(km, dtype=np.float64),
        np.array(upcoming, dtype=bool),
        np.array(severity, dtype=np.int8),
        np.array(detours, dtype=np.int64),
        near_km,
    )


def _matched_bits(active, stops_near, served):
    """:func:`geo.rules.selection.matched` on int bit masks (the single-point form), as detour numbers."""
    mask = sel.matched(
        sum(1 << j for j, a in enumerate(active) if a),
        stops_near,
        sum(1 << j for j, s in enumerate(served) if s),
    )
    return tuple(j for j in range(len(active)) if mask >> j & 1)


def _matched_array(active, stops_near, served):
    """The same on bool arrays (the vectorised form)."""
    n = len(active)
    out = sel.matched(
        np.array(active, dtype=bool).reshape(n), stops_near, np.array(served, dtype=bool).reshape(n)
    )
    return tuple(np.flatnonzero(out).tolist())


@st.composite
def _selections(draw):
    """(status per cluster, listed clusters by distance, km, upcoming, severity per detour, listed detours,
    near km)."""
    n, m = draw(st.integers(0, 8)), draw(st.integers(0, 6))
    status = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    clusters = draw(st.permutations(range(n)))[: draw(st.integers(0, n))]
    km = sorted(draw(st.lists(st.floats(0, 2), min_size=len(clusters), max_size=len(clusters))))
    upcoming = draw(st.lists(st.booleans(), min_size=len(clusters), max_size=len(clusters)))
    severity = draw(st.lists(st.integers(0, 2), min_size=m, max_size=m))
    detours = draw(st.permutations(range(m)))[: draw(st.integers(0, m))]
    return (
        status,
        list(clusters),
        km,
        upcoming,
        severity,
        list(detours),
        draw(st.sampled_from([0.0, 0.5, 2.0])),
    )


@st.composite
def _detour_sets(draw):
    n = draw(st.integers(0, 70))  # beyond 64 detours: the int form has no width limit
    flags = st.lists(st.booleans(), min_size=n, max_size=n)
    return tuple(draw(flags)), draw(st.booleans()), tuple(draw(flags))


NO2 = st.one_of(st.just(float("nan")), st.floats(0, 200, allow_nan=False).map(lambda v: round(v, 1)))
COUNT = st.integers(0, 12)
COMPLIANCE = st.sampled_from([ar.UNKNOWN, ar.BELOW_WHO, ar.ABOVE_WHO, ar.ABOVE_EU])

#: name: (scalar form, array form made scalar, boundary cases, Hypothesis strategy of argument tuples)
PAIRS = {
    "risk": (
        risk.risk_one,
        _risk_array,
        [
            (0, 0, 0, 0, 0, 0, ar.UNKNOWN, True),  # nothing: 0 points, low
            (1, 2, 0, 0, 0, 0, ar.BELOW_WHO, True),  # 2.0: exactly moderate
            (1, 2, 1, 0, 1, 1, ar.ABOVE_WHO, True),  # 6.25: high
            (1, 2, 1, 0, 1, 1, ar.ABOVE_WHO, False),  # detours count only with a stop near
            (10, 10, 10, 10, 10, 10, ar.ABOVE_EU, True),  # every cap
            (0, 0, 4, 0, 0, 0, ar.ABOVE_EU, False),  # 1 + 2 = 3: moderate
            (2, 5, 0, 0, 0, 1, ar.UNKNOWN, True),  # 4 + 2 = 6 (works cap): high
            (0, 9, 0, 0, 1, 0, ar.BELOW_WHO, True),  # 4 + 1 = 5.0: exactly high
        ],
        st.tuples(COUNT, COUNT, COUNT, COUNT, COUNT, COUNT, COMPLIANCE, st.booleans()),
    ),
    "compliance": (
        ar.compliance_one,
        lambda v: int(ar.compliance_class([v])[0]),
        [
            (float("nan"),),
            (0.0,),
            (10.0,),
            (10.1,),
            (40.0,),
            (40.1,),
            (400.0,),
        ],
        st.tuples(NO2),
    ),
    "trend": (
        ar.trend_one,
        _trend_array,
        [
            (20.0, 22.5, 2),
            (20.0, 20.5, 2),
            (20.0, 25.0, 1),
            (20.0, 21.0, 2),
            (20.0, 19.0, 2),
            (20.0, 20.99, 3),
            (0.0, 3.0, 2),
            (0.0, 0.0, 2),
            (float("nan"), 20.0, 2),
            (20.0, float("nan"), 2),
            (33.3, 31.7, 2),
            (10.0, 10.5, 2),  # 5.0 %: not stable (exclusive bound)
        ],
        st.tuples(NO2, NO2, st.integers(0, 3)),
    ),
    "tally": (
        ta.tally_one,
        _tally_array,
        [
            ([], [], [], [], [], [], 0.5),  # nothing listed: nearest None
            ([1, 2, 1], [2, 1, 0], [0.3, 0.6, 1.2], [False, True, False], [2, 0], [0, 0, 1], 0.5),
            ([1, 1], [1, 0], [0.5, 0.5], [True, True], [], [], 0.5),  # on near_km: included; upcoming running
            (
                [2, 2, 0],
                [0, 1, 2],
                [0.1, 0.2, 0.3],
                [True, False, True],
                [1, 1, 2],
                [2, 1],
                0.0,
            ),  # no running
            ([0, 1], [0, 1], [0.0, 2.0], [False, False], [0, 1, 2], [2, 1, 0], 2.0),  # not listed status
        ],
        _selections(),
    ),
    "matched": (
        _matched_bits,
        _matched_array,
        [
            ((), True, ()),
            ((True, True, False, True), True, (False, True, True, False)),  # shares a line with a near stop
            ((True, True, False, True), False, (False, False, False, False)),  # no stop near: all in force
            ((False,) * 64 + (True,), True, (False,) * 64 + (True,)),  # detour 64: past one machine word
        ],
        _detour_sets(),
    ),
}


def same(a, b) -> bool:
    """Equal values, NaN equal to NaN, and equal types of number (no int/float mix-up in a JSON body)."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b and float(a).hex() == float(b).hex()


CASES = [(name, args) for name, (_, _, cases, _) in PAIRS.items() for args in cases]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[f"{n}{a}" for n, a in CASES])
def test_scalar_and_array_forms_agree_on_the_table(name, args):
    scalar, array, _, _ = PAIRS[name]
    assert same(scalar(*args), array(*args)), (name, args, scalar(*args), array(*args))


@pytest.mark.parametrize("name", sorted(PAIRS))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_scalar_and_array_forms_agree_on_random_arguments(name, data):
    scalar, array, _, strategy = PAIRS[name]
    args = data.draw(strategy)
    assert same(scalar(*args), array(*args)), (name, args)


def test_the_table_can_fail():
    """The comparison sees a difference in the last bit, a NaN against a number, an int against a float or a
    NumPy scalar (the JSON body would change), and None against a number."""
    assert not same(0.1 + 0.2, 0.3) and not same(float("nan"), 0.0) and same((1, float("nan")), (1, np.nan))
    assert not same(1, 1.0) and not same(None, 0.0) and not same(1, np.int64(1)) and same(None, None)


def test_risk_weights_are_named_once():
    """risk_one and risk_score read the same constants: changing one weight changes both forms."""
    args = (1, 1, 1, 1, 1, 1, ar.ABOVE_EU, True)
    saved = risk.WORKS_NEAR
    try:
        risk.WORKS_NEAR = 3.0
        assert same(risk.risk_one(*args), _risk_array(*args))
        assert risk.risk_one(*args)[0] == 3.0 + 0.5 + 0.25 + 3.5 + 2.0
    finally:
        risk.WORKS_NEAR = saved
