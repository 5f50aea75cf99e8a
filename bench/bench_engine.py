"""Engine primitives against plain GeoPandas (``sjoin`` / ``sjoin_nearest``) measured in the same run.

Batch figures use ``URBAN_BENCH_POINTS`` points (default 10^6); the GeoPandas baselines for radius queries
(which build every pair) run on at most 2x10^5 points and are reported per point. Baselines include what a
GeoPandas user must do to get the same answer: build point geometries and, for distances in metres,
project to Lambert 72 (EPSG:31370).
"""

from __future__ import annotations

import os
import time

import geopandas as gpd
import numpy as np
import shapely

from bench import Row, box_points, median_us, per_second, service_points

METRIC = "EPSG:31370"
ANTWERP = (51.2194, 4.4003)


def _points(lat, lng, crs=None):
    gdf = gpd.GeoDataFrame(geometry=gpd.points_from_xy(lng, lat), crs="EPSG:4326")
    return gdf.to_crs(crs) if crs else gdf


def _baseline_single(fn, lat, lng):
    return median_us(lambda: fn(np.array([lat]), np.array([lng])), repeat=30, warmup=3)


def run(engine) -> list[Row]:
    n = int(os.environ.get("URBAN_BENCH_POINTS", 1_000_000))
    nb = min(n, 200_000)
    rows = []
    blat, blng = box_points(engine, n, seed=1)
    slat, slng = service_points(engine, n, seed=2)
    la, ln = ANTWERP

    # --- polygons ---------------------------------------------------------------------------------
    area = engine.service_area[["geometry"]]
    lez = engine.lez[["geometry"]]

    def sj_area(lat, lng):
        return gpd.sjoin(_points(lat, lng), area, predicate="intersects", how="left")["index_right"].notna()

    def sj_lez(lat, lng):
        return gpd.sjoin(_points(lat, lng), lez, predicate="intersects", how="left")["index_right"].notna()

    minx, miny, maxx, maxy = engine.lez.total_bounds
    rng = np.random.default_rng(3)
    llat, llng = rng.uniform(miny - 0.02, maxy + 0.02, n), rng.uniform(minx - 0.02, maxx + 0.02, n)
    for name, fn, base, (plat, plng) in (
        ("in_service_area", engine.in_service_area, sj_area, (blat, blng)),
        ("in_lez", engine.in_lez, sj_lez, (llat, llng)),
    ):
        rows.append(
            Row(
                name,
                single_us=median_us(lambda: fn(la, ln)),
                batch_per_s=per_second(lambda: fn(plat, plng), n),
                baseline_per_s=per_second(lambda: base(plat, plng), n, repeat=1),
                baseline_single_us=_baseline_single(base, la, ln),
                note="bbox points" if name == "in_service_area" else "LEZ bbox + 2 km",
            )
        )
    rows.append(
        Row(
            "river_side",
            single_us=median_us(lambda: engine.river_side(la, ln)),
            batch_per_s=per_second(lambda: engine.river_side(llat, llng), n),
        )
    )

    # --- nearest station --------------------------------------------------------------------------
    stations = engine.stations[engine.stations["no2"].astype(bool)][["geometry"]].to_crs(METRIC)

    def sj_nearest(lat, lng):
        return gpd.sjoin_nearest(_points(lat, lng, METRIC), stations, distance_col="d")

    rows.append(
        Row(
            "nearest_station(no2)",
            single_us=median_us(lambda: engine.nearest_station(la, ln)),
            batch_per_s=per_second(lambda: engine.nearest_station(slat, slng), n),
            baseline_per_s=per_second(lambda: sj_nearest(slat, slng), n, repeat=1),
            baseline_single_us=_baseline_single(sj_nearest, la, ln),
        )
    )

    # --- radius queries ---------------------------------------------------------------------------
    works = engine.works[["geometry"]].to_crs(METRIC)
    stops = engine.stops[["geometry"]].to_crs(METRIC)

    def sj_within(frame, metres):
        def go(lat, lng):
            pts = _points(lat, lng, METRIC)
            pairs = gpd.sjoin(pts, frame, predicate="dwithin", distance=metres)
            return pairs.groupby(level=0).size().reindex(pts.index, fill_value=0)

        return go

    works_2k, stops_400 = sj_within(works, 2000.0), sj_within(stops, 400.0)
    rows.append(
        Row(
            "works_near 2 km (ids+km)",
            single_us=median_us(lambda: engine.works_near(la, ln, 2.0)),
            baseline_single_us=_baseline_single(works_2k, la, ln),
            note="single point, Groenplaats",
        )
    )
    rows.append(_table_build_row(engine._works.points, 2.0, "count_works_near table build (2 km)"))
    rows.append(
        Row(
            "count_works_near 2 km",
            single_us=median_us(lambda: engine.count_works_near(la, ln, 2.0), repeat=500),
            batch_per_s=per_second(lambda: engine.count_works_near(slat, slng, 2.0), n),
            baseline_per_s=per_second(lambda: works_2k(slat[:nb], slng[:nb]), nb, repeat=1),
            note="count + nearest km per point",
        )
    )
    grid = engine._works.points.grid(2.0)
    rows.append(
        Row(
            "  same, previous index",
            batch_per_s=per_second(lambda: grid.count_nearest(slat, slng), n),
            baseline_per_s=rows[-1].baseline_per_s,
            note="bucket grid (RadiusGrid), same answers",
        )
    )
    alat, alng = (
        np.random.default_rng(4).normal(51.215, 0.03, n),
        np.random.default_rng(5).normal(4.41, 0.045, n),
    )
    rows.append(
        Row(
            "count_works_near 2 km (Antwerp)",
            batch_per_s=per_second(lambda: engine.count_works_near(alat, alng, 2.0), n),
            baseline_per_s=per_second(lambda: works_2k(alat[:nb], alng[:nb]), nb, repeat=1),
            note="points clustered on Antwerp",
        )
    )
    rows.append(
        Row(
            "  same, previous index",
            batch_per_s=per_second(lambda: grid.count_nearest(alat, alng), n),
            baseline_per_s=rows[-1].baseline_per_s,
            note="bucket grid (RadiusGrid), same answers",
        )
    )
    rows.append(
        Row(
            "stops_near 400 m (ids+km)",
            single_us=median_us(lambda: engine.stops_near(la, ln, 0.4)),
            baseline_single_us=_baseline_single(stops_400, la, ln),
        )
    )
    rows.append(
        Row(
            "any_stop_near 400 m",
            single_us=median_us(lambda: engine.any_stop_near(la, ln, 0.4), repeat=500),
            batch_per_s=per_second(lambda: engine.any_stop_near(slat, slng, 0.4), n),
            baseline_per_s=per_second(lambda: stops_400(slat[:nb], slng[:nb]), nb, repeat=1),
        )
    )
    stop_grid = engine._stops.grid(0.4)
    rows.append(
        Row(
            "  same, previous index",
            batch_per_s=per_second(lambda: stop_grid.count_nearest(slat, slng), n),
            baseline_per_s=rows[-1].baseline_per_s,
            note="bucket grid (RadiusGrid), same answers",
        )
    )
    rows.append(_table_build_row(engine._stops, 0.4, "any_stop_near table build (400 m)"))
    rows += _pair_rows(engine, n, works, stops, (slat, slng), (alat, alng))
    return rows


def _sj_pairs(frame, metres):
    """GeoPandas answer of the array form: every (point, row) pair within ``metres`` with its distance,
    sorted by (point, distance, row), through ``sjoin(dwithin)`` in Lambert 72."""

    def go(lat, lng):
        pts = _points(lat, lng, METRIC)
        pairs = gpd.sjoin(pts, frame, predicate="dwithin", distance=metres)
        p, i = pairs.index.to_numpy(), pairs["index_right"].to_numpy()
        km = shapely.distance(pts.geometry.values[p], frame.geometry.values[i]) / 1000.0
        order = np.lexsort((i, km, p))
        return p[order], i[order], km[order]

    return go


def _pair_rows(engine, n, works, stops, uniform, antwerp):
    """works_near / stops_near on arrays (RadiusPairs: point, idx, km): points/s, pairs/s and the ratio
    against the GeoPandas pairs baseline, at 10^5 and ``n`` points."""
    rows = []
    cases = [
        ("works_near 2 km arrays", engine.works_near, 2.0, _sj_pairs(works, 2000.0), uniform, ""),
        (
            "works_near 2 km arrays (Antwerp)",
            engine.works_near,
            2.0,
            _sj_pairs(works, 2000.0),
            antwerp,
            "points clustered on Antwerp, ",
        ),
        ("stops_near 400 m arrays", engine.stops_near, 0.4, _sj_pairs(stops, 400.0), uniform, ""),
    ]
    for name, fn, radius, base, (lat, lng), what in cases:
        nb = min(100_000, n)
        baseline = per_second(lambda: base(lat[:nb], lng[:nb]), nb, repeat=1)
        for m in sorted({min(100_000, n), n}):
            la, ln = lat[:m], lng[:m]
            npairs = fn(la, ln, radius).point.size
            rate = per_second(lambda: fn(la, ln, radius), m)
            rows.append(
                Row(
                    f"{name}, {m:,} points",
                    batch_per_s=rate,
                    baseline_per_s=baseline,
                    note=f"{what}{npairs / m:.1f} pairs/point, {rate * npairs / m / 1e6:.2f} M pairs/s; "
                    f"GeoPandas on {nb:,} points",
                )
            )
    return rows


def _table_build_row(index, radius_km, name):
    """Time to build a RadiusTable (done once per radius and mask, on first use) and its size."""
    from geo.index.radius_table import RadiusTable

    t0 = time.perf_counter()
    table = RadiusTable(index.lat_r, index.lng_r, index.cos_lat, radius_km)
    ms = (time.perf_counter() - t0) * 1e3
    size = sum(a.nbytes for a in (table.cellrec, table.entries, table.boundary)) / 2**20
    return Row(
        name,
        note=f"{ms:.0f} ms once, {size:.0f} MB, {table.ncells:,} cells of "
        f"{table.stats['cell_km'] * 1e3:.0f} m",
    )
