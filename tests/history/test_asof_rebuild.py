"""How an ``asOf`` engine is rebuilt (docs/history.md): layers whose file is unchanged are shared with the
engines in memory, the others read from the store, each row decoded once per process; the result is the
snapshot a fresh load gives (the byte identity of the answers is test_asof_api's)."""

from __future__ import annotations

import pytest
from pandas.testing import assert_frame_equal

from app.history import asof
from app.history.store import ROWS, open_store
from geo.data.layers import DECLARED

NAMES = [layer.name for layer in DECLARED]

pytestmark = pytest.mark.timeout(1800)


@pytest.fixture
def history(year_store_url):
    store = open_store(year_store_url)
    asof._engines.clear()
    yield store
    asof._engines.clear()
    store.close()


def _sha(manifest, name):
    return manifest["layers"][name]["sha256"]


def test_a_rebuild_shares_the_unchanged_layers_and_reads_the_others(history, year_engine):
    live = year_engine(-1)
    publish = history.publishes()[-2]
    engine = asof.engine_of(history, publish, live)
    fresh = year_engine(-2)
    same = [n for n in NAMES if _sha(fresh.manifest, n) == _sha(live.manifest, n)]
    changed = [n for n in NAMES if n not in same]
    assert "stations" in same and "works" in changed  # the simulated year changes works, not stations
    for name in NAMES:
        assert (getattr(engine, name) is getattr(live, name)) == (name in same), name
        assert_frame_equal(getattr(engine, name), getattr(fresh, name))
    assert engine._stations is live._stations
    assert engine.snapshot_id == fresh.snapshot_id


def test_a_rebuild_shares_layers_with_the_engines_kept_too(history, year_engine):
    first, second = history.publishes()[:2]
    one = asof.engine_of(history, first)  # nothing to share with
    two = asof.engine_of(history, second)
    m1, m2 = year_engine(0).manifest, year_engine(1).manifest
    for name in NAMES:
        assert (getattr(two, name) is getattr(one, name)) == (_sha(m1, name) == _sha(m2, name)), name


def test_rows_are_decoded_once_per_process(history, monkeypatch):
    publish = history.publishes()[3]
    ROWS.clear()
    history.snapshot(publish.seq)
    fetched = []
    original = history._blobs
    monkeypatch.setattr(history, "_blobs", lambda hashes: fetched.append(len(hashes)) or original(hashes))
    layers, _manifest = history.snapshot(publish.seq)
    assert fetched == [] and len(layers["works"]) > 0
    ROWS.clear()
    history.snapshot(publish.seq)
    assert sum(fetched) > 0


def test_a_layer_decodes_the_same_from_row_json_and_from_decoded_rows():
    """The GeoDataFrame is the one the GeoParquet file gives, from JSON texts or cached values alike."""
    import io
    import json

    import geopandas as gpd
    import pandas as pd
    from shapely.geometry import Point, box

    from app.history import rows as rowcodec
    from geo.data.snapshot import read_layer

    frame = gpd.GeoDataFrame(
        {
            "id": ["b", "a"],
            "start": pd.to_datetime(["2026-01-02T08:00:00Z", None], utc=True),
            "n": [3, None],
        },
        geometry=[box(4.0, 51.0, 4.1, 51.1), Point(4.4, 51.2)],
        crs="EPSG:4326",
    )
    buf = io.BytesIO()
    frame.to_parquet(buf)
    enc = rowcodec.encode_file("works", buf.getvalue())
    texts = [enc.rows[k][1] for k in rowcodec.order_keys(enc.rows, enc.order)]
    want = read_layer(buf.getvalue())
    for rows in (texts, [json.loads(t) for t in texts]):
        got = rowcodec.decode_layer(enc.schema, rows)
        assert_frame_equal(got, want)
        assert got.crs == want.crs
