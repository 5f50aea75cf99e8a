"""The per-channel radius count table (geo.index.count_table) against a brute-force loop of the engine's own
haversine, with query points placed on the circles and within rounding of them."""

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import geo.index.count_table as count_table
from geo import haversine_km
from geo.index.count_table import CountTable

from test_engine_table import on_circles


def brute(lat, lng, plat, plng, channel, n_channels, radius):
    """(n, n_channels) counts, one query at a time; layer rows without coordinates never count."""
    out = np.zeros((lat.size, n_channels), dtype=np.int64)
    ok = np.isfinite(plat) & np.isfinite(plng)
    for i, (a, b) in enumerate(zip(lat, lng)):
        d = haversine_km(a, b, plat[ok], plng[ok])
        c = channel[ok][d <= radius]
        out[i] = np.bincount(c[c >= 0], minlength=n_channels)
    return out


def _points_and_queries(rng, n, radius):
    """``n`` points around Antwerp (some rows without one) and queries on their radius circles, around
    them and far outside any grid."""
    plat, plng = rng.normal(51.2, 0.03, n), rng.normal(4.4, 0.05, n)
    plat[n // 2 + 1 :: 7] = np.nan
    ok = np.flatnonzero(np.isfinite(plat))
    qlat, qlng = on_circles(plat[ok], plng[ok], radius, 300, rng)
    qlat = np.r_[qlat, rng.normal(51.2, 0.1, 100), 60.0]
    qlng = np.r_[qlng, rng.normal(4.4, 0.15, 100), 4.4]
    return plat, plng, qlat, qlng


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    radius=st.sampled_from([0.01, 0.05, 0.5, 2.0]) | st.floats(0.01, 6.0),  # cells stay below the radius
    cells=st.sampled_from([1, 2, 4, 8, 24]),
    n=st.integers(1, 80),
)
def test_counts_equal_brute_force_on_and_near_circles(seed, radius, cells, n):
    rng = np.random.default_rng(seed)
    plat, plng = rng.normal(51.2, 0.03, n), rng.normal(4.4, 0.05, n)
    plat[: n // 4] = plat[0]  # duplicates
    plng[: n // 4] = plng[0]
    plat[n // 2 + 1 :: 7] = np.nan  # rows without a point (row 0 always has one)
    channel = rng.integers(-1, 4, n)
    channel[0] = 0  # something counts
    t = CountTable(plat, plng, radius, radius / cells)
    assert t.usable
    ok = np.flatnonzero(np.isfinite(plat))
    qlat, qlng = on_circles(plat[ok], plng[ok], radius, 300, rng)
    qlat = np.r_[qlat, rng.normal(51.2, 0.1, 100), 60.0, 40.0]  # also far outside the grid
    qlng = np.r_[qlng, rng.normal(4.4, 0.15, 100), 4.4, 4.4]
    got = t.counts(qlat, qlng, channel, 4)
    assert got.tolist() == brute(qlat, qlng, plat, plng, channel, 4, radius).tolist()
    assert got.sum() > 0


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    radius=st.sampled_from([0.05, 0.5, 2.0]) | st.floats(0.01, 6.0),
    cells=st.sampled_from([1, 4, 8, 24]),
    n=st.integers(1, 80),
    n_groups=st.integers(1, 4),
)
def test_grouped_counts_equal_brute_force_per_group(seed, radius, cells, n, n_groups):
    """With a channel row per query group (the works' river sides), each query counts by its group's row."""
    rng = np.random.default_rng(seed)
    plat, plng, qlat, qlng = _points_and_queries(rng, n, radius)
    channel = rng.integers(-1, 3, (n_groups, n))
    channel[:, 0] = 0
    t = CountTable(plat, plng, radius, radius / cells)
    group = rng.integers(0, n_groups, qlat.size)
    got = t.counts(qlat, qlng, channel, 3, group=group)
    for g in range(n_groups):
        mine = group == g
        want = brute(qlat[mine], qlng[mine], plat, plng, channel[g], 3, radius)
        assert got[mine].tolist() == want.tolist()
    assert got.sum() > 0


def test_grouped_counts_by_hand():
    """Three points 0, 111 and 222 m north of the query; group 1 leaves the middle one out."""
    plat, plng = np.array([51.0, 51.001, 51.002]), np.array([4.0, 4.0, 4.0])
    t = CountTable(plat, plng, 0.3, 0.05)
    channel = np.array([[0, 0, 1], [0, -1, 1]])
    got = t.counts(np.array([51.0, 51.0]), np.array([4.0, 4.0]), channel, 2, group=np.array([0, 1]))
    assert got.tolist() == [[2, 1], [1, 1]]
    with pytest.raises(ValueError, match="group of each query"):
        t.counts(np.array([51.0]), np.array([4.0]), channel, 2)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    radius=st.sampled_from([0.05, 0.4, 2.0]) | st.floats(0.01, 6.0),
    cells=st.sampled_from([1, 4, 8, 24]),
    n=st.integers(1, 80),
    n_words=st.integers(0, 3),
)
def test_unions_equal_brute_force_on_and_near_circles(seed, radius, cells, n, n_words):
    """Any point within the radius, and the OR of their bit rows, per query (the stops' line bits)."""
    rng = np.random.default_rng(seed)
    plat, plng, qlat, qlng = _points_and_queries(rng, n, radius)
    words = rng.integers(0, 2**63, (n, n_words), dtype=np.uint64) & rng.integers(
        0, 2**63, (n, n_words), dtype=np.uint64
    )
    words[n // 3 :: 5] = 0  # points without any bit still make a query "near"
    t = CountTable(plat, plng, radius, radius / cells)
    near, ored = t.unions(qlat, qlng, words)
    for i in range(qlat.size):
        within = np.flatnonzero(np.isfinite(plat) & (haversine_km(qlat[i], qlng[i], plat, plng) <= radius))
        assert near[i] == (within.size > 0)
        assert ored[i].tolist() == np.bitwise_or.reduce(words[within], axis=0).tolist()
    assert near.any()
    # the sure part is kept per words: other bits on the same table give their own unions
    near2, ored2 = t.unions(qlat, qlng, ~words if n_words else words)
    assert near2.tolist() == near.tolist()


def test_channels_change_between_calls():
    """The sure counts follow the channel assignment of each call (a few assignments are kept)."""
    plat, plng = np.array([51.0, 51.001, 51.002]), np.array([4.0, 4.0, 4.0])
    t = CountTable(plat, plng, 2.0, 0.25)
    q = (np.array([51.0005]), np.array([4.0]))
    for channel in ([0, 0, 0], [0, 1, -1], [1, 1, 0], [0, 0, 0], [-1, -1, -1]):
        want = np.bincount([c for c in channel if c >= 0], minlength=2)
        assert t.counts(*q, np.array(channel), 2)[0].tolist() == want.tolist()


@pytest.mark.parametrize(
    "lat, lng, radius",
    [
        ([], [], 2.0),
        ([np.nan], [4.0], 2.0),
        ([89.5], [4.0], 2.0),
        ([51.0], [179.99], 2.0),
        ([51.0], [4.0], 0.0),
    ],
)
def test_not_usable_where_it_cannot_hold(lat, lng, radius):
    t = CountTable(np.array(lat, dtype=float), np.array(lng, dtype=float), radius, 0.25)
    assert not t.usable
    if not t.usable:
        with pytest.raises(ValueError, match="not usable"):
            t.counts(np.array([51.0]), np.array([4.0]), np.zeros(len(lat), dtype=int), 1)


def test_doctests():
    assert doctest.testmod(count_table, raise_on_error=True).attempted
