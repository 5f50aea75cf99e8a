"""What a cold ``asOf`` rebuild no longer builds from scratch (docs/history.md → What a cold answer costs):
at every publish of the simulated year, in either order of asking, the incremental structures of the
rebuilt engine equal those a fresh load of the publish's snapshot builds from scratch."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.history import asof, versions
from app.history.store import open_store
from geo.rules import works as wk
from geo.service.loaded import loaded

pytestmark = [pytest.mark.timeout(1800), pytest.mark.usefixtures("fresh_asof_process")]

EXTENT_FIELDS = ("lat", "lng", "has", "reach", "plane_reach", "start", "area", "sin_lat", "cos_lat")


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b


def assert_same_works(rebuilt, fresh):
    """Every field of the prepared works (``geo.rules.prepared.Works``) equal, the extents field by field."""
    for field in dataclasses.fields(rebuilt):
        a, b = getattr(rebuilt, field.name), getattr(fresh, field.name)
        if field.name == "extents":
            for name in EXTENT_FIELDS:
                assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
        else:
            assert _equal(a, b), field.name


def _year(store, year_engine, order):
    """Per publish, in ``order`` (indexes into the year): the rebuilt engine and a load of its snapshot from
    its directory (built from scratch; ``year_engine``: once per worker)."""
    publishes = store.publishes()
    live = year_engine(-1)
    for k in order:
        publish = publishes[k]
        yield publish, asof.engine_of(store, publish, live), year_engine(k)


@pytest.mark.slow
@pytest.mark.parametrize("newest_first", [True, False])
def test_the_works_clusters_of_every_publish_equal_a_build_from_scratch(
    year_sqlite, year_dirs, year_engine, newest_first
):
    store = open_store(year_sqlite)
    order = range(len(year_dirs))
    grown = 0
    for publish, rebuilt, fresh in _year(store, year_engine, reversed(order) if newest_first else order):
        assert rebuilt.snapshot_id == fresh.snapshot_id == publish.snapshot_id
        if rebuilt.row_source("works") is None:
            continue  # the live engine's very layer: nothing rebuilt
        grown += 1
        assert_same_works(loaded(rebuilt).prepared.works, loaded(fresh).prepared.works)
        assert loaded(rebuilt).lookups.work_items == loaded(fresh).lookups.work_items
    assert grown >= len(year_dirs) - 2
    store.close()


@pytest.mark.slow
def test_the_collapse_links_give_the_clusters_of_collapse_labels_at_every_publish(
    year_sqlite, year_dirs, year_engine
):
    """The links grown over every version held, restricted to one publish's listed works, are that publish's
    clusters (checked on the labels themselves, before representatives are chosen)."""
    store = open_store(year_sqlite)
    for _publish, rebuilt, _fresh in _year(store, year_engine, range(len(year_dirs))):
        found = rebuilt.row_source("works")
        if found is None:
            continue
        source, positions = found
        links = source.grown("prepared.works.links", lambda *_: pytest.fail("the rebuild grew the links"))
        status, _ids, keys = rebuilt.per_row("works", "prepared.works", lambda _f: pytest.fail("not derived"))
        lat, lng = rebuilt.layer_points("works")
        listed = np.flatnonzero((wk.status_class(status) != wk.NOT_LISTED) & np.isfinite(lat))
        expected = wk.collapse_labels(None, lat[listed], lng[listed], keys=keys[listed])
        assert np.array_equal(links.labels(positions[listed]), expected)
        assert expected.max() + 1 < listed.size  # some works did collapse: the links are exercised
    store.close()
