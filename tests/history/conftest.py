"""Fixtures of the history tests: a simulated history written once per run, a store per backend."""

from __future__ import annotations

import pickle
import shutil
import time
import uuid

import pytest

from app.history import asof, versions
from app.history.simulate import SimulatedHistory
from app.history.store import open_store

#: the simulated year the property tests run over (a refresh every 4 weeks: 14 publishes)
YEAR_DAYS, YEAR_CADENCE_MIN = 365, 28 * 24 * 60


@pytest.fixture(scope="session")
def year(reference_dir, build_once, demo_layers):
    """The simulated year: built once per run (on the run's demo layers) and unpickled by each worker."""

    def build(root):
        with demo_layers():
            sim = SimulatedHistory(reference_dir, days=YEAR_DAYS, cadence_min=YEAR_CADENCE_MIN)
        (root / "year.pickle").write_bytes(pickle.dumps(sim, protocol=pickle.HIGHEST_PROTOCOL))

    return pickle.loads((build_once("year-sim", build) / "year.pickle").read_bytes())


@pytest.fixture(scope="session")
def year_dirs(year, build_once):
    """``[(instant, snapshot directory)]`` of every refresh of the simulated year, written once per run."""
    instants = list(year.instants())

    def write(root):
        for k, instant in enumerate(instants):
            year.write_at(instant, root / f"{k:03d}")

    root = build_once("year", write)
    return [(instant, root / f"{k:03d}") for k, instant in enumerate(instants)]


@pytest.fixture(scope="session")
def year_engine(year_dirs):
    """``year_engine(k)``: ``geo.load`` of the year's publish ``k`` (a snapshot directory), loaded once per
    worker and shared by every module (read-only: an engine loaded from its directory builds its prepared
    data from scratch; ``asOf`` rebuilds only take from it, never give to it)."""
    import geo

    loaded: dict[int, geo.Engine] = {}

    def of(k: int):
        k = range(len(year_dirs))[k]  # -1 is the newest publish
        if k not in loaded:
            loaded[k] = geo.load(year_dirs[k][1])
        return loaded[k]

    return of


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


def _year_store(build_once, year_dirs, backend: str, postgres_server=None) -> str:
    """The URL of a store of ``backend`` holding the whole simulated year, recorded once per run."""

    def record(root):
        url = str(root / "history.sqlite") if backend == "sqlite" else pg_schema_url(postgres_server)
        store = open_store(url)
        for _instant, path in year_dirs:
            assert store.record_dir(path).new
        store.close()
        (root / "url").write_text(url)

    return (build_once(f"year-{backend}", record) / "url").read_text()


@pytest.fixture(scope="session")
def year_sqlite(year_dirs, build_once) -> str:
    """The SQLite store of the simulated year (read-only: copy it to write)."""
    return _year_store(build_once, year_dirs, "sqlite")


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def year_store_url(request, year_dirs, build_once) -> str:
    """A store of each backend holding the whole simulated year (read-only)."""
    server = request.getfixturevalue("postgres_server") if request.param == "postgresql" else None
    return _year_store(build_once, year_dirs, request.param, server)


@pytest.fixture(scope="session")
def first_publishes_sqlite(year_dirs, build_once):
    """``copy(n, target) -> URL``: a SQLite store of the year's first ``n`` publishes, recorded once per run
    and copied to ``target`` (the copy is the caller's to write)."""

    def copy(n: int, target) -> str:
        def record(root):
            store = open_store(str(root / "history.sqlite"))
            for _instant, path in year_dirs[:n]:
                assert store.record_dir(path).new
            store.close()

        shutil.copy2(build_once(f"year{n}-sqlite", record) / "history.sqlite", target)
        return str(target)

    return copy


@pytest.fixture(scope="session")
def first_publishes_pg(year_dirs, build_once, postgres_server):
    """``copy(n) -> URL``: a fresh PostgreSQL database holding the year's first ``n`` publishes: recorded
    once per run into a template database, then copied by the server (``CREATE DATABASE … TEMPLATE``; the
    copy is the caller's to write)."""
    import psycopg

    def copy(n: int) -> str:
        def record(root):
            name = f"hyear{n}_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {name}")
            store = open_store(postgres_server.url(name))
            for _instant, path in year_dirs[:n]:
                assert store.record_dir(path).new
            store.close()
            (root / "database").write_text(name)

        template = (build_once(f"year{n}-postgresql", record) / "database").read_text()
        name = "h_" + uuid.uuid4().hex[:12]
        for attempt in range(20):  # a template is copied by one CREATE DATABASE at a time
            try:
                with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
                break
            except psycopg.errors.ObjectInUse:
                if attempt == 19:
                    raise
                time.sleep(0.2)
        return postgres_server.url(name)

    return copy


@pytest.fixture
def fresh_asof_process():
    """No versions held in memory and no rebuilt engines, before and after the test: as in a new process."""
    versions.clear()
    asof._engines.clear()
    yield
    versions.clear()
    asof._engines.clear()
