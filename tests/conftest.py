"""Session fixtures shared by every test package.

- ``reference_dir``: the published reference files (``../shared/data`` beside the project, or
  ``URBAN_REFERENCE_DIR``); the session fails with a clear message when they are missing.
- ``snapshot_dir``: the demo snapshot, built once per session into a temporary directory.
- ``engine``: ``geo.load(snapshot_dir)`` (the engine with its prepared rule data, as the API loads it).

Also the Hypothesis profile of every test: no wall-clock deadline per example.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]

# Hypothesis tests check behaviour, not speed: no per-example deadline (its default, 200 ms of wall clock,
# fails correct code on a loaded CI machine — e.g. 605 ms for a 0.3 ms example). Timing lives in bench/.
settings.register_profile("urban", deadline=None)
settings.load_profile("urban")


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    path = Path(os.environ.get("URBAN_REFERENCE_DIR", REPO.parent / "shared" / "data")).resolve()
    needed = (
        "boundaries/flanders_brussels_union.geojson",
        "lez/antwerp_lez_official_simplified.geojson",
        "air/irceline_stations.csv",
        "river/scheldt_antwerp_centerline_approx.geojson",
        "boundaries/be_municipalities_2019.geojson",
    )
    missing = [n for n in needed if not (path / n).is_file()]
    if missing:
        pytest.fail(
            f"reference data not found: {path} lacks {missing}. Put the shared data set at "
            f"../shared/data beside the project or set URBAN_REFERENCE_DIR.",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def snapshot_dir(reference_dir, tmp_path_factory) -> Path:
    from geo.data.publish import build_snapshot
    from geo.data.snapshot import DEMO_AS_OF, DEFAULT_SEED

    out = tmp_path_factory.mktemp("snapshot") / "snapshot"
    build_snapshot(out, reference_dir, as_of=DEMO_AS_OF, seed=DEFAULT_SEED)
    return out


@pytest.fixture(scope="session")
def engine(snapshot_dir):
    import geo

    return geo.load(snapshot_dir)


# --- real PostgreSQL and Redis, one of each per test session (per xdist worker) ------------------------------


@pytest.fixture(scope="session")
def postgres_server():
    """Debian's PostgreSQL, initdb'd into a temp dir, on 127.0.0.1 and a free port (fsync off)."""
    from bench.services import Postgres

    with Postgres() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of a fresh, empty schema of the session's PostgreSQL (one per test: tests do not share
    rows; migrations run into it as into a new database)."""
    import uuid

    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return postgres_server.url("postgres", search_path=schema)


@pytest.fixture(scope="session")
def redis_server():
    """Debian's redis-server on 127.0.0.1 and a free port, no persistence."""
    from bench.services import Redis

    with Redis() as server:
        yield server


@pytest.fixture
def redis_url(redis_server):
    """The session's Redis, emptied for this test."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    return redis_server.url


@pytest.fixture(params=["sqlite", "postgresql"])
def store_backend(request) -> dict:
    """App settings selecting each account-store backend in turn: ``{}`` (the SQLite default) or
    ``{"DATABASE_URL": <fresh PostgreSQL schema>}``."""
    if request.param == "sqlite":
        return {}
    return {"DATABASE_URL": request.getfixturevalue("postgres_url")}
