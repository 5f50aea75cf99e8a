"""Engine fixtures built from the real reference files in ../shared/data and constructed layers.

Only the real boundary, LEZ and station files are read here (never copied into the project); works and
stops are deterministic synthetic points so that brute-force references stay cheap.
"""

import os
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import box

from geo import Engine

REFERENCE = Path(
    os.environ.get("URBAN_REFERENCE_DIR", Path(__file__).resolve().parents[3] / "shared" / "data")
)


def _frame(columns, lng, lat):
    return gpd.GeoDataFrame(columns, geometry=gpd.points_from_xy(lng, lat), crs="EPSG:4326")


@pytest.fixture(scope="session")
def reference_layers():
    """service_area, lez and stations read with GeoPandas from the published reference files."""
    if not (REFERENCE / "boundaries").is_dir():
        pytest.fail(
            f"reference data not found at {REFERENCE}: put ../shared beside the project "
            "or set URBAN_REFERENCE_DIR"
        )
    area = gpd.read_file(REFERENCE / "boundaries" / "flanders_brussels_union.geojson")[["name", "geometry"]]
    lez = gpd.read_file(REFERENCE / "lez" / "antwerp_lez_official_simplified.geojson")[["name", "geometry"]]
    raw = pd.read_csv(REFERENCE / "air" / "irceline_stations.csv", dtype={"station_code": str})
    stations = _frame(
        {"id": raw["station_code"], "name": raw["location"], "no2": raw["no2_2015"] == 1},
        raw["lon"],
        raw["lat"],
    )
    return {"service_area": area, "lez": lez, "stations": stations}


def synthetic_points(n, seed, prefix):
    """n points: 60 % clustered on Antwerp, the rest spread over Flanders; ids shuffled vs. row order."""
    rng = np.random.default_rng(seed)
    k = int(n * 0.6)
    lat = np.r_[rng.normal(51.215, 0.03, k), rng.uniform(50.7, 51.5, n - k)]
    lng = np.r_[rng.normal(4.41, 0.045, k), rng.uniform(2.6, 5.9, n - k)]
    ids = [f"{prefix}{i:05d}" for i in rng.permutation(n)]
    return _frame({"id": ids}, lng, lat)


# Two river-bank boxes sharing the edge lng = 4.40 (constructed: the real river comes from the snapshot)
RIVER_LEFT_BOX = box(4.30, 51.15, 4.40, 51.30)
RIVER_RIGHT_BOX = box(4.40, 51.15, 4.50, 51.30)


@pytest.fixture(scope="session")
def ref_engine(reference_layers):
    """Engine over the real boundary/LEZ/stations plus synthetic works (800) and stops (600)."""
    river = gpd.GeoDataFrame(
        {"part": ["left", "right"], "name": ["Schelde", "Schelde"]},
        geometry=[RIVER_LEFT_BOX, RIVER_RIGHT_BOX],
        crs="EPSG:4326",
    )
    layers = dict(
        reference_layers,
        works=synthetic_points(800, 1, "W"),
        stops=synthetic_points(600, 2, "1_"),
        river=river,
    )
    return Engine.from_layers(layers, {"snapshotId": "test", "asOf": "2026-11-16T07:00:00.000Z"})
