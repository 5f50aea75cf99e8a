"""Batch scoring at scale (issue 17), at small sizes: the pair table against the API's selection and a
brute-force oracle, exact CSV errors from the multi-threaded reader, the overlapped pipeline's failures, and
the same output from one process, local worker processes and Dask (files and Parquet directories)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from geo.service.disruptions import find_by_rules
from geo.index import pair_table
from geo.index.pair_table import PairTable
from geo.service.loaded import prepare
from geo.batch.score import service_mask
from geo.batch.cli import main, run
from geo.batch.pair_rows import DETOUR, WORK, pair_arrays, pairs_table
from geo.batch.pipe import ReadAhead, WriteBehind
from geo.index.spherical import haversine_km


def test_pairs_are_the_api_selection_of_every_point(engine, clock, sample):
    lat, lng, _ = sample
    row, kind, item, km = pair_arrays(engine, lat, lng, clock)
    p = prepare(engine)
    # order: (input row, works before detours, id)
    ids = np.where(
        kind == WORK,
        p.works.ids[np.where(kind == WORK, item, 0)],
        p.detours.ids[np.where(kind == DETOUR, item, 0)],
    ).astype(str)
    keys = list(zip(row.tolist(), kind.tolist(), ids.tolist()))
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    _, inside = service_mask(engine, lat, lng)
    assert not np.isin(row, np.flatnonzero(~inside)).any()
    assert (kind == DETOUR).any() and (kind == WORK).any()
    for i in np.flatnonzero(inside).tolist():
        f = find_by_rules(engine, float(lat[i]), float(lng[i]), clock)
        m = row == i
        w, d = m & (kind == WORK), m & (kind == DETOUR)
        assert sorted(zip(item[w].tolist(), km[w].tolist())) == sorted(
            zip(f.clusters.tolist(), f.cluster_km.tolist())
        )
        assert sorted(zip(item[d].tolist(), km[d].tolist())) == sorted(
            zip(f.detours.tolist(), f.detour_km.tolist())
        )


@pytest.mark.parametrize("radius", [0.3, 2.0, 7.5])
def test_pair_table_equals_brute_force(radius):
    rng = np.random.default_rng(int(radius * 10))
    plat, plng = rng.uniform(50.9, 51.1, 300), rng.uniform(3.9, 4.3, 300)
    plat[7] = np.nan  # a point without coordinates is never listed
    rank = rng.permutation(300)
    qlat, qlng = rng.uniform(50.85, 51.15, 400), rng.uniform(3.8, 4.4, 400)
    qlat[:5], qlng[:5] = plat[10:15], plng[10:15]  # queries on points: distance 0
    qlat[5], qlng[5] = 10.0, 4.0  # far outside the table
    table = PairTable(plat, plng, rank, radius)
    assert table.usable
    q, k, km = table.pairs(qlat, qlng)
    d = haversine_km(qlat[:, None], qlng[:, None], plat[None, :], plng[None, :])
    bq, bk = np.nonzero(d <= radius)
    assert sorted(zip(q.tolist(), k.tolist())) == sorted(zip(bq.tolist(), bk.tolist()))
    np.testing.assert_allclose(km, d[q, k], rtol=0, atol=1e-9)
    assert list(zip(q.tolist(), rank[k].tolist())) == sorted(zip(q.tolist(), rank[k].tolist()))
    assert not PairTable(np.array([89.5]), np.array([4.0]), np.array([0]), radius).usable


@pytest.mark.parametrize("threads", [1, 3])
def test_pair_table_groups_blocks_and_threads_equal_brute_force(monkeypatch, threads):
    """Tiny query chunks and candidate blocks (so every chunk, block and thread boundary is crossed), and
    point groups a query group may not pair with, against the brute-force answer."""
    monkeypatch.setattr(pair_table, "QUERY_CHUNK", 37)
    monkeypatch.setattr(pair_table, "PAIR_BLOCK", 11)
    rng = np.random.default_rng(5)
    plat, plng = rng.uniform(51.0, 51.1, 200), rng.uniform(4.0, 4.2, 200)
    pgroup = rng.integers(0, 3, 200)
    allowed = np.array([[True, True, True], [True, True, False], [True, False, True]])
    rank = rng.permutation(200)
    qlat, qlng = rng.uniform(50.98, 51.12, 500), rng.uniform(3.98, 4.22, 500)
    qgroup = rng.integers(0, 3, 500)
    table = PairTable(plat, plng, rank, 1.5, group=pgroup, allowed=allowed)
    q, k, km = table.pairs(qlat, qlng, group=qgroup, threads=threads)
    d = haversine_km(qlat[:, None], qlng[:, None], plat[None, :], plng[None, :])
    bq, bk = np.nonzero((d <= 1.5) & allowed[qgroup[:, None], pgroup[None, :]])
    assert q.size > 1000 and sorted(zip(q.tolist(), k.tolist())) == sorted(zip(bq.tolist(), bk.tolist()))
    assert km.tobytes() == d[q, k].tobytes()  # the same haversine, the same floats
    assert list(zip(q.tolist(), rank[k].tolist())) == sorted(zip(q.tolist(), rank[k].tolist()))


def test_pairs_do_not_depend_on_the_thread_count(engine, clock):
    rng = np.random.default_rng(8)
    n = 3 * pair_table.QUERY_CHUNK + 5  # three spans of real chunks, dense on Antwerp
    lat, lng = rng.normal(51.215, 0.03, n), rng.normal(4.41, 0.045, n)
    one = pairs_table(engine, lat, lng, clock, threads=1)
    assert one.num_rows > 5 * n
    for threads in (2, 3, None):
        assert pairs_table(engine, lat, lng, clock, threads=threads).equals(one)


def test_pairs_cli_writes_the_long_table(engine, now, snapshot_dir, sample, tmp_path):
    lat, lng, _ = sample
    src = tmp_path / "p.csv"
    pd.DataFrame({"lat": lat, "lng": lng}).to_csv(src, index=False)
    for ext in ("parquet", "csv"):
        out = tmp_path / f"pairs.{ext}"
        summary = run(src, out, data=snapshot_dir, chunk_size=37, progress=False, engine=engine, pairs=True)
        got = pq.read_table(out) if ext == "parquet" else None
        expected = pairs_table(engine, lat, lng, now)
        if got is None:
            got = pd.read_csv(out, keep_default_na=False, na_values=[""], dtype={"id": str})
            exp = expected.to_pandas().astype({"kind": str, "id": str})
            pd.testing.assert_frame_equal(got, exp, check_dtype=False)
        else:
            assert got.column_names == ["input_row", "kind", "id", "distanceKm"]
            assert got.equals(expected.cast(got.schema))
        assert summary["pairs"]["work"] + summary["pairs"]["detour"] == expected.num_rows
        assert summary["rows"] == lat.size
    result = CliRunner().invoke(
        main, [str(src), "-o", str(tmp_path / "x.geojson"), "--pairs", "--data", str(snapshot_dir)]
    )
    assert result.exit_code == 1 and "the pair table is written as .csv or .parquet" in result.output


def test_bad_row_in_a_later_block_names_its_line(snapshot_dir, loaded_once, tmp_path):
    src = tmp_path / "late.csv"
    rows = [f"{i},51.{i:04d},4.4" for i in range(3000)]
    rows[2100] = "2100,51.2"  # line 2102 of the file (data row 2101)
    src.write_text("id,lat,lng\n" + "\n".join(rows) + "\n")
    out = tmp_path / "out.parquet"
    result = CliRunner().invoke(
        main, [str(src), "-o", str(out), "--data", str(snapshot_dir), "--chunk-size", "100"]
    )
    assert result.exit_code == 1
    assert "line 2102 (data row 2101) has 2 fields, the header has 3: '2100,51.2'" in result.output
    assert not list(tmp_path.glob("out.parquet*"))


def test_pipeline_stages_hand_errors_to_the_caller():
    def broken():
        yield 1
        raise ValueError("reader failed")

    got = []
    with pytest.raises(ValueError, match="reader failed"):
        for x in ReadAhead(broken()):
            got.append(x)
    assert got == [1]

    def write(x):
        if x == 2:
            raise OSError("disk full")

    behind = WriteBehind(write)
    with pytest.raises(OSError, match="disk full"):
        for x in range(1, 50):
            behind.put(x)
        behind.finish()


def _parts(tmp_path, sample):
    lat, lng, _ = sample
    src = tmp_path / "points"
    src.mkdir()
    table = pa.table({"id": [f"{i:05d}" for i in range(lat.size)], "lat": lat, "lng": lng})
    for i, s in enumerate(range(0, lat.size, 150)):
        pq.write_table(table.slice(s, 150), src / f"points-{i}.parquet", row_group_size=64)
    whole = tmp_path / "whole.parquet"
    pq.write_table(table, whole)
    return src, whole


@pytest.mark.parametrize("pairs", [False, True], ids=["scores", "pairs"])
def test_parquet_directory_equals_the_single_file(engine, snapshot_dir, sample, tmp_path, pairs):
    src, whole = _parts(tmp_path, sample)
    one, parts = tmp_path / "one.parquet", tmp_path / "out"
    run(whole, one, data=snapshot_dir, chunk_size=50, progress=False, engine=engine, pairs=pairs)
    summary = run(src, parts, data=snapshot_dir, chunk_size=50, progress=False, engine=engine, pairs=pairs)
    assert sorted(p.name for p in parts.iterdir()) == [f"part-{i:05d}.parquet" for i in range(3)]
    assert pq.read_table(parts).equals(pq.read_table(one))
    assert summary["rows"] == len(sample[0]) and summary["ran_on"] == "1 process, 3 part(s)"
    assert not (tmp_path / "out.partial").exists()


def test_stops_table_equals_the_pair_walk(engine):
    """Any stop within 400 m and the OR of those stops' line bits: the stops table against the pair walk,
    on points dense around Antwerp's stops, on the 400 m circles around them and across the service area."""
    from geo.batch.score import _stops_served, _stops_served_pairs
    from geo.data.engine import point_coords
    from geo.index.spherical import EARTH_RADIUS_KM

    rng = np.random.default_rng(12)
    s_lat, s_lng = point_coords(engine.stops)
    ok = np.flatnonzero(np.isfinite(s_lat))
    pick = rng.choice(ok, 4000)
    bearing = rng.uniform(0, 2 * np.pi, pick.size)
    reach = 0.4 * (1 + rng.choice([0.0, 1e-12, -1e-12, 1e-6, -1e-6], pick.size)) / EARTH_RADIUS_KM
    circle_lat = s_lat[pick] + np.degrees(reach * np.cos(bearing))
    circle_lng = s_lng[pick] + np.degrees(reach * np.sin(bearing)) / np.cos(np.radians(s_lat[pick]))
    lat = np.r_[rng.normal(51.215, 0.03, 20_000), circle_lat, rng.uniform(50.7, 51.5, 20_000)]
    lng = np.r_[rng.normal(4.41, 0.045, 20_000), circle_lng, rng.uniform(2.6, 5.9, 20_000)]
    near, served = _stops_served(engine, lat, lng)
    near_w, served_w = _stops_served_pairs(engine, lat, lng)
    assert near.tolist() == near_w.tolist() and served.tobytes() == served_w.tobytes()
    assert 0.2 < near.mean() < 0.9 and served.any()


def test_works_count_tables_equal_the_pair_walk(engine, clock):
    """The works counts (running, planned, upcoming, running within 0.5 km) of the count tables against the
    pair walk over the clusters' extents, around Antwerp, along the demo's long works and across Flanders."""
    import shapely

    from geo.batch.score import _works_counts, _works_counts_pairs

    rng = np.random.default_rng(13)
    extents = np.asarray(engine.works.geometry.values)
    corners = shapely.get_coordinates(
        extents[shapely.length(shapely.minimum_rotated_rectangle(extents)) > 0.03]
    )
    lat = np.r_[
        rng.normal(51.215, 0.03, 20_000),
        corners[:, 1] + rng.normal(0, 0.01, len(corners)),
        rng.uniform(50.75, 51.4, 10_000),
    ]
    lng = np.r_[
        rng.normal(4.41, 0.045, 20_000),
        corners[:, 0] + rng.normal(0, 0.015, len(corners)),
        rng.uniform(2.7, 5.8, 10_000),
    ]
    inside = engine.in_service_area(lat, lng)
    lat, lng = lat[inside], lng[inside]
    side = engine.river_side(lat, lng)
    tables, walk = (
        _works_counts(engine, lat, lng, side, clock),
        _works_counts_pairs(engine, lat, lng, side, clock),
    )
    assert tables.tolist() == walk.tolist() and (tables[3] > 0).sum() > 1000


@pytest.mark.parametrize("pairs", [False, True])
def test_parquet_statistics_only_on_the_input_keys(engine, snapshot_dir, sample, tmp_path, pairs):
    """Min/max statistics on the carried input columns (or the pairs' input row), which can skip row
    groups; none on computed values, whose every row group spans about the same range."""
    lat, lng, _ = sample
    src = tmp_path / "in.csv"
    pd.DataFrame({"ref": [f"p{i:05d}" for i in range(lat.size)], "lat": lat, "lng": lng}).to_csv(
        src, index=False
    )
    out = tmp_path / "out.parquet"
    run(src, out, data=snapshot_dir, chunk_size=50, progress=False, engine=engine, pairs=pairs)
    meta = pq.ParquetFile(out).metadata
    keys = {"input_row"} if pairs else {"ref", "lat", "lng"}
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            col = group.column(c)
            stats = col.statistics
            has = stats is not None and stats.has_min_max
            assert has == (col.path_in_schema in keys), col.path_in_schema
            if col.path_in_schema in ("active_works", "transit_disruptions", "no2_value", "risk_score"):
                assert "RLE_DICTIONARY" in col.encodings  # counts and few-valued floats: dictionary pages
            if col.path_in_schema in ("ref", "lat", "lng", "no2_station_km", "distanceKm"):
                assert "RLE_DICTIONARY" not in col.encodings  # unique values: never tried
    first = meta.row_group(0).column(0).statistics
    assert first.min == (0 if pairs else "p00000")


# the module's Dask cluster last: it is closed as soon as its two tests are done
@pytest.mark.slow
def test_one_process_local_workers_and_dask_write_the_same(
    engine, snapshot_dir, sample, tmp_path, dask_cluster
):
    from distributed import Client

    from geo.batch.dask import PLUGIN

    src, whole = _parts(tmp_path, sample)
    # the parent's engine given: loaded once (a fresh load and cold workers: test_score_cli)
    kw = dict(data=snapshot_dir, chunk_size=60, progress=False, engine=engine)
    expected = {}
    for pairs in (False, True):
        run(whole, tmp_path / f"one-{pairs}.parquet", pairs=pairs, **kw)
        expected[pairs] = pq.read_table(tmp_path / f"one-{pairs}.parquet")
    run(whole, tmp_path / "w2.parquet", workers=2, pairs=True, **kw)
    assert pq.read_table(tmp_path / "w2.parquet").equals(expected[True])
    run(src, tmp_path / "w2-dir", workers=2, **kw)
    assert pq.read_table(tmp_path / "w2-dir").equals(expected[False])
    cluster = dask_cluster
    with Client(cluster) as client:
        for pairs in (False, True):
            out = tmp_path / f"dask-{pairs}"
            summary = run(src, out, dask=cluster.scheduler_address, pairs=pairs, **kw)
            assert summary["ran_on"].startswith("Dask tcp://127.0.0.1")
            assert pq.read_table(out).equals(expected[pairs])
        run(whole, tmp_path / "dask-file.parquet", dask=cluster.scheduler_address, pairs=True, **kw)
        assert pq.read_table(tmp_path / "dask-file.parquet").equals(expected[True])
        plugins = client.run(lambda dask_worker: sorted(dask_worker.plugins))
        assert all(PLUGIN in names for names in plugins.values()) and len(plugins) == 2


@pytest.mark.slow
def test_dask_dataframe_scoring(engine, now, snapshot_dir, sample, dask_cluster):
    """score_dask on the module's cluster (the one the test above runs urban-score on)."""
    import dask.dataframe as dd
    from distributed import Client

    from geo.batch.dask import score_dask
    from geo.batch.score import score

    lat, lng, _ = sample
    frame = pd.DataFrame({"lat": lat, "lng": lng, "k": np.arange(lat.size)})
    with Client(dask_cluster):
        got = score_dask(dd.from_pandas(frame, npartitions=5), snapshot_dir).compute()
    expected = frame.join(score(frame, engine, now))
    pd.testing.assert_frame_equal(got, expected)
