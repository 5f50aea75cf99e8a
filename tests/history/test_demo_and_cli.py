"""The demo's history (the simulated refreshes before its clock, ending at the demo snapshot itself) and the
documented commands of ``python -m app.history``."""

from __future__ import annotations

import pytest

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from app.store import accounts
from app import create_app
from app.store.db import open_store as open_accounts
from app.history.asof import iso
from app.history.store import open_store
from app.history.simulate import SimulatedHistory, seed_demo

#: the session fixtures record a simulated year: minutes on a shared 2-core machine, not the default 5
pytestmark = pytest.mark.timeout(1800)

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_simulation_is_deterministic_and_ends_at_the_demo_snapshot(
    reference_dir, engine, demo_layers, tmp_path
):
    """Two simulations give the same refreshes: one built here, one on the run's shared demo layers (built
    by another ``build_layers`` call, maybe in another process); the last is the demo snapshot itself."""
    sim = SimulatedHistory(reference_dir, days=1, cadence_min=360)
    with demo_layers():
        again = SimulatedHistory(reference_dir, days=1, cadence_min=360)
    instants = sim.instants()
    assert len(instants) == 5 and instants[-1] == engine.as_of
    ids = [sim.write_at(t, tmp_path / f"a{k}")["snapshotId"] for k, t in enumerate(instants)]
    assert [
        again.write_at(t, tmp_path / f"b{k}")["snapshotId"] for k, t in reversed(list(enumerate(instants)))
    ] == ids[::-1]
    assert ids[-1] == engine.snapshot_id
    assert len(set(ids)) == len(ids)  # every refresh changed something (NO2 every hour)


def test_the_simulation_evolves_works_detours_and_no2(year):
    start, end = year.instants()[0], year.instants()[-1]
    first, _ = year.layers_at(start)
    last, _ = year.layers_at(end)
    works_then, works_now = set(first["works"]["id"]), set(last["works"]["id"])
    assert works_then - works_now and works_now - works_then  # works left the feed and appeared
    assert set(first["detours"]["id"]) != set(last["detours"]["id"])
    gone = first["no2"]["timestamp"].max()
    assert gone < last["no2"]["timestamp"].min()  # the NO2 window moved on
    hours = first["no2"][first["no2"]["kind"] == "measured"].groupby("station_id").size()
    assert hours.max() <= 48 and hours.min() < 48  # hourly values with gaps


@pytest.mark.slow
def test_seed_demo_records_the_days_before_the_clock_and_the_demo_answers_as_of(
    reference_dir, snapshot_dir, engine, demo_layers, tmp_path
):
    url = str(tmp_path / "demo.history.sqlite")
    store = open_store(url)
    with demo_layers():
        assert seed_demo(store, reference_dir, snapshot_dir, days=0.5, cadence_min=180) == 5
    publishes = store.publishes()
    assert publishes[-1].snapshot_id == engine.snapshot_id and publishes[-1].as_of == engine.as_of
    assert engine.as_of - publishes[0].as_of == timedelta(hours=12)
    app = create_app(
        {
            "TESTING": True,
            "INSTANCE_PATH": str(tmp_path / "instance"),
            "ENGINE": engine,
            "HISTORY_URL": url,
            "WALL_CLOCK": lambda: engine.as_of + timedelta(minutes=5),
        }
    )
    conn = open_accounts(app)
    _row, key = accounts.create_account(conn, "demo@antwerpen.be", "enterprise")
    conn.close()
    c = app.test_client()
    live = c.get("/api/v1/briefing?lat=51.2194&lng=4.4025", headers={"Authorization": f"Bearer {key}"})
    now = c.get(
        f"/api/v1/briefing?lat=51.2194&lng=4.4025&asOf={iso(engine.as_of)}",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert now.status_code == 200 and now.data == live.data  # the demo's own clock: its live answer
    earlier = c.get(
        f"/api/v1/air-quality?lat=51.2194&lng=4.4025&asOf={iso(engine.as_of - timedelta(hours=7))}",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert earlier.status_code == 200 and earlier.headers["As-Of-Snapshot"] == publishes[1].snapshot_id


def run(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "app.history", *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )


def invoke(*args):
    """``python -m app.history`` in process (the same click entry point; the first record of
    :func:`test_record_info_and_prune_commands` runs the real command line)."""
    from types import SimpleNamespace

    from click.testing import CliRunner

    from app.history.__main__ import main

    result = CliRunner().invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)


def test_record_info_and_prune_commands(year_dirs, year_engine, tmp_path):
    url = str(tmp_path / "cli.sqlite")
    for k, (_instant, path) in enumerate(year_dirs[:3]):
        out = (run if k == 0 else invoke)("record", str(path), "--url", url)
        assert out.returncode == 0 and "recorded" in out.stdout, out.stderr
    again = invoke("record", str(year_dirs[2][1]), "--url", url)
    assert again.returncode == 0 and "already recorded" in again.stdout
    info = invoke("info", "--url", url)
    assert "history_publish  3" in info.stdout and "recorded from" in info.stdout
    now = year_dirs[2][0] + timedelta(days=400)
    pruned = invoke("prune", "--url", url, "--days", "365", "--now", iso(now))
    assert pruned.returncode == 0 and pruned.stdout.startswith("pruned 2 publishes"), (
        pruned.stdout + pruned.stderr
    )
    assert [p.snapshot_id for p in open_store(url).publishes()] == [
        year_engine(2).snapshot_id
    ]  # the one still served at the start of the window stays
