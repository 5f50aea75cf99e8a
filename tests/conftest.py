"""Session fixtures shared by every test package.

- ``reference_dir``: the published reference files (``../shared/data`` beside the project, or
  ``URBAN_REFERENCE_DIR``); the session fails with a clear message when they are missing.
- ``snapshot_dir``: the demo snapshot, built once per session into a temporary directory.
- ``engine``: ``geo.load(snapshot_dir)`` (the engine with its prepared rule data, as the API loads it).
- ``build_once``: builds a read-only artefact once per run, shared by every xdist worker (the snapshot,
  the simulated year, its stores); ``postgres_server`` is one server per run, likewise.

Also the Hypothesis profile of every test: no wall-clock deadline per example.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]

# Hypothesis tests check behaviour, not speed: no per-example deadline (its default, 200 ms of wall clock,
# fails correct code on a loaded CI machine — e.g. 605 ms for a 0.3 ms example). Timing lives in bench/.
settings.register_profile("urban", deadline=None)
settings.load_profile("urban")

# --- artefacts and servers shared by the xdist workers of one run ----------------------------------------------
# The controller makes one directory before it starts the workers (they inherit the environment); the first
# worker that needs an artefact builds it under a lock, the others wait and reuse it; the controller stops the
# shared servers and removes the directory when the run ends.
SHARED_ENV = "URBAN_TEST_SHARED_DIR"


def pytest_configure(config):
    # A suite started in the background (``nohup make test &``) inherits SIGINT ignored, and so would every
    # process a test starts: Python then installs no KeyboardInterrupt handler, and a test that stops its
    # child with SIGINT waits for ever. The tests' processes start with the default, as from a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        except ValueError:  # not the main thread: nothing to restore here
            pass
    if not hasattr(config, "workerinput") and SHARED_ENV not in os.environ:
        config._urban_shared_owner = True  # noqa: SLF001 - our own attribute on the config
        os.environ[SHARED_ENV] = tempfile.mkdtemp(prefix="urban-tests-")


def pytest_unconfigure(config):
    if getattr(config, "_urban_shared_owner", False):
        shared = Path(os.environ.pop(SHARED_ENV))
        _stop_shared_postgres(shared)
        shutil.rmtree(shared, ignore_errors=True)


@contextmanager
def _locked(name: str):
    with open(Path(os.environ[SHARED_ENV]) / f"{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def build_once():
    """``build_once(name, build) -> Path``: ``build(path)`` runs once per run for all workers, and only
    when ``path`` is not complete yet; the artefact must be treated as read-only."""

    def once(name: str, build) -> Path:
        path = Path(os.environ[SHARED_ENV]) / name
        with _locked(name):
            if not (path / ".complete").exists():
                shutil.rmtree(path, ignore_errors=True)
                path.mkdir()
                build(path)
                (path / ".complete").touch()
        return path

    return once


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
def snapshot_dir(reference_dir, build_once, demo_layers, tmp_path_factory) -> Path:
    """The demo snapshot, built once per run, seen by each worker through its own link: what an app writes
    beside its ``DATA_DIR`` (the default history store ``<DATA_DIR>.history.sqlite``, refreshed versions)
    stays the worker's."""
    from geo.data.publish import build_snapshot
    from geo.data.snapshot import DEMO_AS_OF, DEFAULT_SEED

    def build(root: Path) -> None:
        with demo_layers():
            build_snapshot(root / "snapshot", reference_dir, as_of=DEMO_AS_OF, seed=DEFAULT_SEED)

    link = tmp_path_factory.mktemp("snapshot") / "snapshot"
    link.symlink_to(build_once("snapshot", build) / "snapshot", target_is_directory=True)
    return link


@pytest.fixture(scope="session")
def demo_layers(reference_dir, build_once):
    """``with demo_layers(): …``: inside, ``build_layers`` of the demo's clock and seed with nothing else
    given (what the demo snapshot and every ``SimulatedHistory``, hence ``seed_demo``, build first: ~5 s of
    CPU) is answered from one build per run, unpickled (a copy per call); any other call builds as usual.
    For tests where those layers are an input, not what is tested."""
    import pickle

    from app.history import simulate
    from geo.data import publish
    from geo.data.snapshot import DEFAULT_SEED, DEMO_AS_OF, build_layers, iso_ms

    def build(root: Path) -> None:
        built = build_layers(reference_dir, as_of=DEMO_AS_OF, seed=DEFAULT_SEED)
        (root / "layers.pickle").write_bytes(pickle.dumps(built, protocol=pickle.HIGHEST_PROTOCOL))

    def shared(ref, *, as_of=DEMO_AS_OF, seed=DEFAULT_SEED, **others):
        if (
            any(v is not None for v in others.values())
            or seed != DEFAULT_SEED
            or iso_ms(as_of) != DEMO_AS_OF
            or Path(ref).resolve() != reference_dir
        ):
            return build_layers(ref, as_of=as_of, seed=seed, **others)
        return pickle.loads((build_once("demo-layers", build) / "layers.pickle").read_bytes())

    @contextmanager
    def serving():
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(simulate, "build_layers", shared)
            patch.setattr(publish, "build_layers", shared)
            yield

    return serving


@pytest.fixture(scope="session")
def engine(snapshot_dir):
    import geo

    return geo.load(snapshot_dir)


@pytest.fixture(scope="session")
def session_chromium():
    """One headless Chromium per test process for every browser test (starting one costs ~2 s of CPU); tests
    use it through ``browser``/``shared_browser`` (tests/portal/test_portal_browser.py), which empty it after
    each test."""
    from tests.portal.test_portal_browser import chromium

    with chromium() as driver:
        yield driver


# --- real PostgreSQL and Redis, one of each per test session (per xdist worker) ------------------------------


@pytest.fixture(scope="session")
def postgres_server():
    """Debian's PostgreSQL, initdb'd into a temp dir, on 127.0.0.1 and a free port (fsync off): one server
    per run, started by the first worker that needs it and stopped by the controller at the end (tests share
    it through their own schemas and databases)."""
    from bench.services import Postgres

    state = Path(os.environ[SHARED_ENV]) / "postgres.json"
    with _locked("postgres"):
        if state.exists():
            known = json.loads(state.read_text())
            server = Postgres.attach(known["port"], Path(known["dir"]))
        else:
            server = Postgres().start()
            state.write_text(
                json.dumps({"port": server.port, "dir": str(server.dir), "pid": server.proc.pid})
            )
    yield server


def _stop_shared_postgres(shared: Path) -> None:
    state = shared / "postgres.json"
    if not state.exists():
        return
    known = json.loads(state.read_text())
    pid = known["pid"]
    try:
        os.kill(pid, signal.SIGINT)  # "fast" shutdown
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:  # our own child (a run without workers)
                    break
            except ChildProcessError:
                pass  # a worker's child, reaped by init once it ends
            os.kill(pid, 0)
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    shutil.rmtree(known["dir"], ignore_errors=True)


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


# --- the suite's own cost: URBAN_TEST_CPU_LOG=<file> appends "cpu s, wall s, test id" per test (docs/testing.md)

if os.environ.get("URBAN_TEST_CPU_LOG"):
    import resource

    def _cpu_seconds() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        cpu, wall = _cpu_seconds(), time.perf_counter()
        yield
        with open(os.environ["URBAN_TEST_CPU_LOG"], "a") as log:
            log.write(f"{_cpu_seconds() - cpu:.2f}\t{time.perf_counter() - wall:.2f}\t{item.nodeid}\n")
