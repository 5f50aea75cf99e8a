"""Fixtures of the history tests: a simulated history written once per session, a store per backend."""

from __future__ import annotations

import uuid

import pytest

from app.history.simulate import SimulatedHistory
from app.history.store import open_store

#: the simulated year the property tests run over (a refresh every 4 weeks: 14 publishes)
YEAR_DAYS, YEAR_CADENCE_MIN = 365, 28 * 24 * 60


@pytest.fixture(scope="session")
def year(reference_dir):
    return SimulatedHistory(reference_dir, days=YEAR_DAYS, cadence_min=YEAR_CADENCE_MIN)


@pytest.fixture(scope="session")
def year_dirs(year, tmp_path_factory):
    """``[(instant, snapshot directory)]`` of every refresh of the simulated year, written once."""
    root = tmp_path_factory.mktemp("year")
    out = []
    for k, instant in enumerate(year.instants()):
        path = root / f"{k:03d}"
        year.write_at(instant, path)
        out.append((instant, path))
    return out


def pg_schema_url(postgres_server) -> str:
    import psycopg

    schema = "h_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return postgres_server.url("postgres", search_path=schema)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    """A fresh, empty history store of each backend in turn."""
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return pg_schema_url(request.getfixturevalue("postgres_server"))


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def year_store_url(request, year_dirs, tmp_path_factory) -> str:
    """A store of each backend holding the whole simulated year (recorded once per session)."""
    if request.param == "sqlite":
        url = str(tmp_path_factory.mktemp("history") / "history.sqlite")
    else:
        url = pg_schema_url(request.getfixturevalue("postgres_server"))
    store = open_store(url)
    for _instant, path in year_dirs:
        assert store.record_dir(path).new
    store.close()
    return url
