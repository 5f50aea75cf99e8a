"""``urban-score --as-of``: scores against the snapshot served at the instant (rebuilt from the history store
through ``geo.load(store, as_of=…)``), with the clock at that instant; clear messages, and no output, for a
bad, future or out-of-window instant and for a missing or empty store. ``urban-score`` is the entry point
``urban_score.main`` (geo's command line with the app's history reader); geo's own refuses ``--as-of``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import geo
from app.history.simulate import SimulatedHistory
from app.history.store import open_store
from app.history.scoring import engine_at
from geo.batch import cli as geo_cli
from geo.batch.cli import run
from urban_score import main

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def history(reference_dir, demo_layers, tmp_path_factory):
    """``(store URL, [(instant, snapshot dir)])``: 42 days of the simulated history, a refresh every 2 weeks."""
    with demo_layers():
        sim = SimulatedHistory(reference_dir, days=42, cadence_min=14 * 24 * 60)
    root = tmp_path_factory.mktemp("score-as-of")
    url = str(root / "history.sqlite")
    store = open_store(url)
    dirs = []
    for k, instant in enumerate(sim.instants()):
        path = root / f"{k:02d}"
        sim.write_at(instant, path)
        assert store.record_dir(path).new
        dirs.append((instant, path))
    store.close()
    return url, dirs


_LOADED: dict = {}


def loaded(path) -> geo.Engine:
    """``geo.Engine.load(path)``, once per module (read-only: the scoring runs only read it)."""
    if path not in _LOADED:
        _LOADED[path] = geo.Engine.load(path)
    return _LOADED[path]


@pytest.fixture(scope="module", autouse=True)
def _forget_loaded():
    yield
    _LOADED.clear()


@pytest.fixture(scope="module")
def points_csv(history, tmp_path_factory):
    """Points next to the works of the first and the last snapshot (their counts differ between them)."""
    _url, dirs = history
    rng = np.random.default_rng(26)
    rows = [(51.2194, 4.4025)]
    for _instant, path in (dirs[0], dirs[-1]):
        works = loaded(path).works
        for i in rng.choice(len(works), 60, replace=False):
            p = works.geometry.iloc[i].representative_point()
            rows.append((round(p.y + rng.normal(0, 0.003), 6), round(p.x + rng.normal(0, 0.004), 6)))
    path = tmp_path_factory.mktemp("points") / "points.csv"
    pd.DataFrame(rows, columns=["lat", "lng"]).to_csv(path, index=False)
    return path


def _expected(snapshot_dir, points_csv, now, out) -> bytes:
    """The output of scoring with the engine loaded from ``snapshot_dir`` at clock ``now``."""
    run(points_csv, out, data=snapshot_dir, now=now, progress=False, engine=loaded(snapshot_dir))
    return out.read_bytes()


def test_as_of_scores_against_the_snapshot_served_then(history, points_csv, tmp_path):
    url, dirs = history
    (t1, dir1), (t2, _dir2) = dirs[1], dirs[2]
    instant = t1 + (t2 - t1) / 3  # between two publishes: the earlier one was being served
    out = tmp_path / "then.csv"
    result = CliRunner().invoke(
        main,
        [str(points_csv), "-o", str(out), "--as-of", instant.isoformat(), "--history", url, "--no-progress"],
    )
    assert result.exit_code == 0, result.output
    served = loaded(dir1)
    assert (
        f"snapshot {served.snapshot_id[:12]}" in result.output and "the snapshot served then" in result.output
    )
    assert out.read_bytes() == _expected(dir1, points_csv, instant, tmp_path / "expected.csv")
    # not the newest snapshot's answer: the history matters for these points
    assert out.read_bytes() != _expected(dirs[-1][1], points_csv, instant, tmp_path / "newest.csv")


def test_as_of_with_forked_workers_and_an_explicit_clock(history, points_csv, tmp_path):
    url, dirs = history
    instant, served = dirs[0]
    clock = instant + timedelta(days=3)
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    common = dict(history=url, now=clock.isoformat(), progress=False, chunk_size=40)
    s1 = run(points_csv, one, as_of=instant.isoformat(), engine_at=engine_at, **common)
    s2 = run(points_csv, two, as_of=instant, workers=2, engine_at=engine_at, **common)
    assert s1["snapshot"] == s2["snapshot"] == loaded(served).snapshot_id
    assert s1["now"] == clock.isoformat() and s1["as_of"] == instant.isoformat()
    assert one.read_bytes() == two.read_bytes()
    assert one.read_bytes() == _expected(served, points_csv, clock, tmp_path / "expected.csv")


@pytest.mark.parametrize(
    "as_of, message",
    [
        ("2026-11-01T08:00:00", "has no offset"),
        ("2026-11-01 08:00", "has no offset"),
        ("yesterday", "is not an ISO 8601 instant"),
        ("2026-02-30T08:00:00Z", "is not an ISO 8601 instant"),
        ("", "is not an ISO 8601 instant"),
    ],
)
def test_a_bad_instant_is_refused_with_its_reason(history, points_csv, tmp_path, as_of, message):
    url, _dirs = history
    out = tmp_path / "out.csv"
    result = CliRunner().invoke(main, [str(points_csv), "-o", str(out), "--as-of", as_of, "--history", url])
    assert result.exit_code == 2 and "--as-of" in result.output and message in result.output
    assert not out.exists()


def test_out_of_window_instants_and_missing_stores_are_refused_clearly(history, points_csv, tmp_path):
    url, dirs = history
    first = dirs[0][0]
    empty = tmp_path / "empty.sqlite"
    open_store(str(empty)).close()
    future = (datetime.now(timezone.utc) + timedelta(days=1)).isoformat()
    cases = [
        ((first - timedelta(minutes=1)).isoformat(), url, "lies before the recorded history"),
        (future, url, "lies after the current time"),
        (first.isoformat(), str(tmp_path / "nowhere.sqlite"), "no history store at"),
        (first.isoformat(), str(empty), "nothing is recorded"),
        (
            first.isoformat(),
            "postgresql://u:secret@127.0.0.1:9/none",
            "cannot open the PostgreSQL history store",
        ),
    ]
    for as_of, store, message in cases:
        out = tmp_path / "out.csv"
        result = CliRunner().invoke(
            main, [str(points_csv), "-o", str(out), "--as-of", as_of, "--history", store]
        )
        assert result.exit_code == 1 and message in result.output, (as_of, store, result.output)
        assert "secret" not in result.output and not out.exists()
    assert not (tmp_path / "nowhere.sqlite").exists()  # a reader never creates a store


def test_as_of_refuses_a_dask_cluster_and_history_needs_as_of(history, points_csv, tmp_path):
    url, dirs = history
    out = tmp_path / "out.csv"
    result = CliRunner().invoke(
        main,
        [
            str(points_csv),
            "-o",
            str(out),
            "--as-of",
            dirs[0][0].isoformat(),
            "--history",
            url,
            "--dask",
            "local",
        ],
    )
    assert result.exit_code == 1 and "a Dask cluster" in result.output
    result = CliRunner().invoke(main, [str(points_csv), "-o", str(out), "--history", url])
    assert result.exit_code == 2 and "--history is read only with --as-of" in result.output
    assert not out.exists()


def test_geo_alone_refuses_as_of_and_urban_score_is_the_wired_command(history, points_csv, tmp_path):
    url, dirs = history
    out = tmp_path / "out.csv"
    args = [str(points_csv), "-o", str(out), "--as-of", dirs[0][0].isoformat(), "--history", url]
    result = CliRunner().invoke(geo_cli.main, args)
    assert result.exit_code == 1 and "run the urban-score command" in result.output and not out.exists()
    with pytest.raises(geo_cli.InputError, match="geo alone does not read"):
        run(points_csv, out, as_of=dirs[0][0], history=url, progress=False)
    assert not out.exists()
    assert [p.name for p in main.params] == [p.name for p in geo_cli.main.params]
