"""Fixtures for the platform tests: an app on a temporary instance folder (real SQLite files), its test
client and CLI runner, an injectable wall clock, accounts made through the library, and a small real
engine over a constructed service area (a box around Flanders and Brussels)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import geopandas as gpd
import pytest
from shapely.geometry import box

from app.store import accounts
from app import create_app
from app.store.db import open_store
from geo import Engine
from platform_helpers import INSIDE, OUTSIDE, bearer  # noqa: F401  (fixtures' and tests' shared names)

#: constructed service area: inside is 50.6 ≤ lat ≤ 51.6 and 2.5 ≤ lng ≤ 6.0
SERVICE_BOX = (2.5, 50.6, 6.0, 51.6)


class Clock:
    """A settable UTC clock (``WALL_CLOCK``)."""

    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


@pytest.fixture(scope="session")
def box_engine():
    area = gpd.GeoDataFrame(
        {"name": ["Vlaanderen en Brussel (test)"]}, geometry=[box(*SERVICE_BOX)], crs="EPSG:4326"
    )
    return Engine.from_layers(
        {"service_area": area}, {"snapshotId": "box", "asOf": "2026-11-16T07:00:00.000Z"}
    )


@pytest.fixture
def clock():
    return Clock(datetime(2026, 11, 16, 12, 0, tzinfo=UTC))


@pytest.fixture
def make_app(tmp_path, clock):
    """``make_app(**overrides)``: a fresh app on this test's instance folder."""

    def factory(**overrides):
        config = {
            "TESTING": True,
            "ENGINE": None,
            "INSTANCE_PATH": str(tmp_path / "instance"),
            "WALL_CLOCK": clock,
        }
        config.update(overrides)
        return create_app(config)

    return factory


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def store(app):
    conn = open_store(app)
    yield conn
    conn.close()


@pytest.fixture
def account(store):
    """``account(plan="developer", email=None)`` → (row, key)."""
    counter = iter(range(1, 10_000))

    def make(plan="developer", email=None):
        return accounts.create_account(store, email or f"user{next(counter)}@stad.antwerpen.be", plan)

    return make
