"""A lazy :class:`geo.index.near_one.ExtentNear` (an asOf engine's works table) answers its first queries over
every row of each reach class and builds its tables after ``FEW_QUERIES``: before and after, the rows and the
very floats of the eager table and of the engine's :class:`geo.index.extents.ExtentIndex`; likewise a lazy
``ExtentIndex``."""

from __future__ import annotations

import numpy as np
import pytest
from test_extents import _layer

from geo.index import near_one
from geo.index.extents import ExtentIndex
from geo.index.near_one import ExtentNear, query_radians
from geo.rules.selection import near_side


def _sorted(rows, km, rank):
    order = np.lexsort((rank[rows], km))
    return rows[order].tolist(), km[order].tobytes()


@pytest.mark.parametrize("radius", [0.5, 2.0])
def test_a_lazy_table_answers_as_the_eager_one_before_and_after_it_is_built(radius, monkeypatch):
    monkeypatch.setattr(near_one, "FEW_QUERIES", 40)
    ex, ids = _layer(9, 400)
    index = ExtentIndex(ex, ids)
    eager, lazy = ExtentNear(ex, radius), ExtentNear(ex, radius, lazy=True)
    assert eager.tables is not None and lazy.tables is None and lazy.usable
    side = np.random.default_rng(1).integers(0, 3, ex.size)
    keep = near_side(2, side)
    rng = np.random.default_rng(5)
    lat, lng = rng.normal(51.215, 0.04, 100), rng.normal(4.41, 0.06, 100)
    lat[:20], lng[:20] = ex.lat[:20], ex.lng[:20]
    built_at = None
    for j in range(lat.size):
        q = query_radians(float(lat[j]), float(lng[j]))
        got = lazy.within(float(lat[j]), float(lng[j]), q)
        want = eager.within(float(lat[j]), float(lng[j]), q)
        assert _sorted(*got, index.rank) == _sorted(*want, index.rank)
        assert _sorted(*got, index.rank) == _sorted(
            *index.within(float(lat[j]), float(lng[j]), radius), index.rank
        )
        kept = lazy.within(float(lat[j]), float(lng[j]), q, keep)
        assert _sorted(*kept, index.rank) == _sorted(
            *eager.within(float(lat[j]), float(lng[j]), q, keep), index.rank
        )
        assert keep[kept[0]].all()
        if built_at is None and lazy.tables is not None:
            built_at = j
    assert built_at is not None and 0 < built_at < 2 * 40  # both paths were compared


def test_a_lazy_index_is_built_on_its_first_query():
    ex, ids = _layer(4, 120)
    lazy, eager = ExtentIndex(ex, ids, lazy=True), ExtentIndex(ex, ids)
    assert lazy._built is None
    rows, km = lazy.within(51.215, 4.41, 2.0)
    assert lazy._built is not None
    want_rows, want_km = eager.within(51.215, 4.41, 2.0)
    assert rows.tolist() == want_rows.tolist() and km.tobytes() == want_km.tobytes()
