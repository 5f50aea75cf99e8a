"""A real gunicorn deployment on 127.0.0.1 for ``make loadtest`` and the ops tests.

:func:`prepare` makes an instance folder with a migrated account store, enterprise accounts with keys and
saved locations; :class:`Gunicorn` starts ``gunicorn -c gunicorn.conf.py wsgi:app`` on it and waits for
``/healthz``.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Fixture:
    """What :func:`prepare` made: keys (plaintext), their account ids, saved location ids per key, points."""

    instance: Path
    keys: list[str] = field(default_factory=list)
    account_ids: list[int] = field(default_factory=list)
    locations: list[list[str]] = field(default_factory=list)
    points: list[tuple[float, float]] = field(default_factory=list)


def inside_points(data_dir, n: int, seed: int = 7) -> list[tuple[float, float]]:
    """``n`` points inside the service area: stops/stations/works of the snapshot, slightly jittered."""
    from geo.data.engine import Engine

    engine = Engine.load(data_dir)
    rng = random.Random(seed)
    candidates = []
    for frame in (engine.stops, engine.stations, engine.works):
        geom = frame.geometry
        pts = geom[~geom.is_empty & geom.notna()].representative_point()
        candidates += list(zip(pts.y.tolist(), pts.x.tolist()))
    out = []
    while len(out) < n:
        lat, lng = rng.choice(candidates)
        lat, lng = round(lat + rng.uniform(-0.002, 0.002), 6), round(lng + rng.uniform(-0.002, 0.002), 6)
        if bool(engine.in_service_area(lat, lng)[0]):
            out.append((lat, lng))
    return out


def prepare(
    instance: Path,
    data_dir,
    *,
    accounts: int = 40,
    locations_per_account: int = 3,
    points: int = 200,
    plan: str = "enterprise",
    seed: int = 7,
    database_url: str | None = None,
) -> Fixture:
    """A fresh instance folder with ``accounts`` accounts on ``plan``, each with saved locations (in the
    instance's SQLite store, or in the PostgreSQL store at ``database_url``)."""
    from app.store import accounts as acc
    from app.store import postgres as db_postgres
    from app.store.sqlite import connect
    from app.store.db import migrate
    from app.store.saved_locations import add_location

    instance = Path(instance)
    instance.mkdir(parents=True, exist_ok=True)
    pts = inside_points(data_dir, points, seed)
    fx = Fixture(instance, points=pts)
    conn = db_postgres.connect(database_url) if database_url else connect(str(instance / "urban.sqlite"))
    try:
        migrate(conn)
        rng = random.Random(seed)
        for i in range(accounts):
            row, key = acc.create_account(conn, f"load{i}@stad.antwerpen.be", plan)
            fx.keys.append(key)
            fx.account_ids.append(row["id"])
            ids = []
            for j in range(locations_per_account):
                lat, lng = rng.choice(pts)
                loc = add_location(
                    conn,
                    row["id"],
                    name=f"Werf {j}",
                    address="",
                    lat=lat,
                    lng=lng,
                    location_id=f"loc_{i}_{j}",
                    is_primary=j == 0,
                )
                ids.append(loc["id"])
            fx.locations.append(ids)
    finally:
        conn.close()
    return fx


def get(port: int, path: str, headers=None, timeout: float = 10.0):
    """One GET over a fresh connection: (status, headers dict, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def run_until_exit(env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run gunicorn with this project's config under ``env`` until it exits (a start-up it refuses)."""
    return subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "gunicorn.conf.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def stop_process(proc: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM (gunicorn's graceful stop), then SIGKILL when it is not gone after ``timeout`` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Gunicorn:
    """``gunicorn -c gunicorn.conf.py`` on 127.0.0.1 for an instance folder (a context manager).

    Examples
    --------
    >>> with Gunicorn(instance, workers=2) as server:          # doctest: +SKIP
    ...     get(server.port, "/healthz")[0]
    200
    """

    def __init__(self, instance, *, workers: int = 4, data_dir=None, env=None, log=None, port=None):
        self.instance = Path(instance)
        self.port = port or free_port()
        self.log_path = Path(log) if log else self.instance / "gunicorn.log"
        self.env = dict(os.environ)
        self.env.update(
            {
                "URBAN_ENV": "production",
                "URBAN_SECRET_KEY": "load-test-secret-not-for-production",
                "URBAN_INSTANCE_PATH": str(self.instance),
                "PORT": str(self.port),
                "HOST": "127.0.0.1",
                "URBAN_PUBLIC_URL": f"http://127.0.0.1:{self.port}",
                "WEB_CONCURRENCY": str(workers),
                "URBAN_DATA_DIR": str(
                    Path(data_dir or self.env.get("URBAN_DATA_DIR", ROOT / "data/snapshot")).resolve()
                ),
            }
        )
        self.env.update(env or {})
        self.proc = None

    def start(self, timeout: float = 60.0) -> "Gunicorn":
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "gunicorn.conf.py")],
            cwd=ROOT,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while True:
            try:
                if get(self.port, "/healthz", timeout=2)[0] == 200:
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    "gunicorn did not start:\n" + self.log_path.read_text(errors="replace")[-3000:]
                )
            time.sleep(0.1)

    def worker_pids(self) -> list[int]:
        """Pids of the master's live worker processes."""
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(p) for p in path.read_text().split()]

    def stop(self) -> int | None:
        if self.proc is not None:
            stop_process(self.proc)
        if getattr(self, "_log", None):
            self._log.close()
        return None if self.proc is None else self.proc.returncode

    def log_lines(self) -> list[dict]:
        """The JSON access log entries written so far."""
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
