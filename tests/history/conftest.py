"""Fixtures of the history tests: a simulated history written once per run, a store per backend."""

from __future__ import annotations

import pickle
import shutil
import time
import uuid
from pathlib import Path

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


#: the year's first publishes also kept as stores of their own, copied while the year is recorded
CHECKPOINTS = (4, 6)


def _year_store(build_once, year_dirs, backend: str, postgres_server=None) -> Path:
    """The directory of the store of ``backend`` holding the whole simulated year, recorded once per run:
    ``url`` (the store), and ``first<n>`` per ``n`` of ``CHECKPOINTS``: a copy of the store when it held the
    year's first ``n`` publishes (SQLite: ``first<n>.sqlite``; PostgreSQL: the name of a template database)."""

    def record(root):
        if backend == "sqlite":
            url = str(root / "history.sqlite")
        else:
            name = _new_database(postgres_server, f"hyear_{uuid.uuid4().hex[:8]}")
            url = postgres_server.url(name)
        store = open_store(url)
        for n, (_instant, path) in enumerate(year_dirs, 1):
            assert store.record_dir(path).new
            if n not in CHECKPOINTS:
                continue
            store.close()  # the copy is of a closed store (SQLite: its WAL checkpointed)
            if backend == "sqlite":
                shutil.copy2(root / "history.sqlite", root / f"first{n}.sqlite")
            else:
                (root / f"first{n}").write_text(_new_database(postgres_server, f"{name}_{n}", template=name))
            store = open_store(url)
        store.close()
        (root / "url").write_text(url)

    root = build_once(f"year-{backend}", record)
    store = open_store((root / "url").read_text())
    _READ_ONLY.add(store.identity)
    store.close()
    return root


def _new_database(postgres_server, name: str, template: str | None = None) -> str:
    """``name``, created empty or as a copy of ``template`` (copied by one CREATE DATABASE at a time)."""
    import psycopg

    copy = f" TEMPLATE {template}" if template else ""
    for attempt in range(20):
        try:
            with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {name}{copy}")
            return name
        except psycopg.errors.ObjectInUse:
            if attempt == 19:
                raise
            time.sleep(0.2)
    raise AssertionError("unreachable")


#: identities of the read-only year stores, and per ``(identity, seq)`` the frames their rows rebuild
_READ_ONLY: set[str] = set()
_REBUILT: dict[tuple[str, int], dict] = {}


def stored_layers(store, seq: int) -> dict:
    """``store.snapshot(seq)``'s layers: the frames rebuilt from the store's rows, the reference the
    in-memory reads are checked against. Rebuilt once per worker for the read-only year stores (read-only:
    compare, never change them); every other store rebuilds them on each call."""
    if store.identity not in _READ_ONLY:
        return store.snapshot(seq)[0]
    key = (store.identity, seq)
    if key not in _REBUILT:
        _REBUILT[key] = store.snapshot(seq)[0]
    return _REBUILT[key]


@pytest.fixture(scope="session")
def year_sqlite(year_dirs, build_once) -> str:
    """The SQLite store of the simulated year (read-only: copy it to write)."""
    return (_year_store(build_once, year_dirs, "sqlite") / "url").read_text()


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def year_store_url(request, year_dirs, build_once) -> str:
    """A store of each backend holding the whole simulated year (read-only)."""
    server = request.getfixturevalue("postgres_server") if request.param == "postgresql" else None
    return (_year_store(build_once, year_dirs, request.param, server) / "url").read_text()


@pytest.fixture(scope="session")
def first_publishes_sqlite(year_dirs, build_once):
    """``copy(n, target) -> URL``: a SQLite store of the year's first ``n`` publishes (``n`` one of
    ``CHECKPOINTS``), recorded once per run and copied to ``target`` (the copy is the caller's to write)."""

    def copy(n: int, target) -> str:
        assert n in CHECKPOINTS, n
        shutil.copy2(_year_store(build_once, year_dirs, "sqlite") / f"first{n}.sqlite", target)
        return str(target)

    return copy


@pytest.fixture(scope="session")
def first_publishes_pg(year_dirs, build_once, postgres_server):
    """``copy(n) -> URL``: a fresh PostgreSQL database holding the year's first ``n`` publishes (``n`` one
    of ``CHECKPOINTS``): recorded once per run into a template database, then copied by the server
    (``CREATE DATABASE … TEMPLATE``; the copy is the caller's to write)."""

    def copy(n: int) -> str:
        assert n in CHECKPOINTS, n
        template = (
            _year_store(build_once, year_dirs, "postgresql", postgres_server) / f"first{n}"
        ).read_text()
        return postgres_server.url(_new_database(postgres_server, "h_" + uuid.uuid4().hex[:12], template))

    return copy


@pytest.fixture
def fresh_asof_process():
    """No versions held in memory and no rebuilt engines, before and after the test: as in a new process."""
    versions.clear()
    asof._engines.clear()
    yield
    versions.clear()
    asof._engines.clear()
