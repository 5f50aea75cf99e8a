"""Session fixtures shared by every test package.

- ``reference_dir``: the published reference files (``../shared/data`` beside the project, or
  ``URBAN_REFERENCE_DIR``); the session fails with a clear message when they are missing.
- ``snapshot_dir``: the demo snapshot, built once per session into a temporary directory.
- ``engine``: ``geo.load(snapshot_dir)`` (the engine with its prepared rule data, as the API loads it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    path = Path(os.environ.get("URBAN_REFERENCE_DIR", REPO.parent / "shared" / "data")).resolve()
    needed = ("boundaries/flanders_brussels_union.geojson", "lez/antwerp_lez_official_simplified.geojson",
              "air/irceline_stations.csv", "river/scheldt_antwerp_centerline_approx.geojson",
              "boundaries/be_municipalities_2019.geojson")
    missing = [n for n in needed if not (path / n).is_file()]
    if missing:
        pytest.fail(f"reference data not found: {path} lacks {missing}. Put the shared data set at "
                    f"../shared/data beside the project or set URBAN_REFERENCE_DIR.", pytrace=False)
    return path


@pytest.fixture(scope="session")
def snapshot_dir(reference_dir, tmp_path_factory) -> Path:
    from geo.data.snapshot import DEMO_AS_OF, DEFAULT_SEED, build_snapshot

    out = tmp_path_factory.mktemp("snapshot") / "snapshot"
    build_snapshot(out, reference_dir, as_of=DEMO_AS_OF, seed=DEFAULT_SEED)
    return out


@pytest.fixture(scope="session")
def engine(snapshot_dir):
    import geo

    return geo.load(snapshot_dir)
