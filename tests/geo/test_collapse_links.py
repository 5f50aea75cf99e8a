"""``geo.rules.works.CollapseLinks``: links grown batch by batch over rows, restricted to any subset of
them, give the clusters ``collapse_labels`` gives for that subset on its own (the brute-force oracle)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from geo.data.rows import RowSource
from geo.rules import works as wk

DESCRIPTIONS = ["Riolering", "riolering ", "Nutswerken", "Markt", ""]


def _rows(seed: int, n: int):
    """``n`` works in a few streets: points 0-120 m apart (many within the 50 m of a collapse), a few
    descriptions (equal keys across case and spaces), some without a point."""
    rng = random.Random(seed)
    keys = np.array([wk.description_key(rng.choice(DESCRIPTIONS)) for _ in range(n)], dtype=object)
    lat = np.array([51.2 + rng.randrange(4) * 0.01 + rng.uniform(0, 0.0011) for _ in range(n)])
    lng = np.array([4.4 + rng.uniform(0, 0.0017) for _ in range(n)])
    lat[rng.sample(range(n), n // 20)] = np.nan
    return keys, lat, lng


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_links_grown_in_batches_cluster_any_subset_as_collapse_labels(seed):
    rng = random.Random(seed)
    keys, lat, lng = _rows(seed, 900)
    links = wk.CollapseLinks()
    stop = 0
    for size in (300, 1, 7, 40, 0, 280, 12, 260):  # batches linked row by row and by the k-d tree
        stop += size
        links.extend(stop, keys, lat, lng)
        for _ in range(5):
            rows = np.array(rng.sample(range(stop), rng.randrange(0, stop)), dtype=np.int64)
            rows = rows[np.isfinite(lat[rows])]
            expected = wk.collapse_labels(None, lat[rows], lng[rows], keys=keys[rows])
            assert np.array_equal(links.labels(rows), expected)
    assert stop == 900 and links.i.size > 100  # many links: the oracle compares real clusters


def test_links_are_the_brute_force_pairs():
    keys, lat, lng = _rows(4, 400)
    links = (
        wk.CollapseLinks().extend(150, keys, lat, lng).extend(155, keys, lat, lng).extend(400, keys, lat, lng)
    )
    expected = {
        (i, j)
        for i in range(400)
        for j in range(i + 1, 400)
        if keys[i] == keys[j] and wk.haversine_km(lat[i], lng[i], lat[j], lng[j]) <= wk.COLLAPSE_KM
    }
    assert set(zip(links.i.tolist(), links.j.tolist())) == expected
    assert len(expected) == links.i.size  # each pair once


def test_a_row_given_twice_is_left_to_collapse_labels():
    keys, lat, lng = _rows(5, 50)
    links = wk.CollapseLinks().extend(50, keys, lat, lng)
    assert links.labels(np.array([3, 4, 3])) is None


def test_a_row_source_grows_its_value_by_the_rows_appended_since():
    import geopandas as gpd
    from shapely.geometry import Point

    source = RowSource()
    calls = []

    def extend(value, start, stop):
        calls.append((start, stop))
        return (value or []) + list(range(start, stop))

    source.append(gpd.GeoDataFrame(geometry=[Point(4, 51), Point(5, 50)]))
    assert source.grown("rows", extend) == [0, 1]
    assert source.grown("rows", extend) == [0, 1]
    source.append(gpd.GeoDataFrame(geometry=[Point(4, 52)]))
    assert source.grown("rows", extend) == [0, 1, 2]
    assert calls == [(0, 2), (2, 3)]
