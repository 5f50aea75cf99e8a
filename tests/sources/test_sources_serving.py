"""The real app on live snapshots: freshness limits → 502 upstream_error naming the source; snapshot reload
without restart; a swap under a concurrent request loop loses and mixes no request."""

from __future__ import annotations

import json
import shutil
import threading
import time
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
import requests
from werkzeug.serving import make_server

from app.store import accounts
from app import create_app
from app.store.db import open_store
from app.sources import init_app, store
from app.sources.http import Upstream, build_session
from app.sources.refresher import refresh
from app.sources.settings import SourceSettings

from .fakeupstream import FakeUpstream

POINT = "lat=51.2194&lng=4.4025"  # Antwerpen, Groenplaats area


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture(scope="module")
def live(tmp_path_factory, reference_dir):
    """A live snapshot refreshed from the fake upstream, behind the pointer ``data_dir``."""
    root = tmp_path_factory.mktemp("live")
    with FakeUpstream() as fake:
        s = SourceSettings.from_mapping(fake.settings(), {}, http_cache=str(root / "cache.sqlite"))
        session = build_session(s.http_cache, s)
        report = refresh(root / "data" / "snapshot", reference_dir, Upstream(session, s), s, now=fake.now)
        session.close()
    assert report.published, report.lines()
    data_dir = root / "data" / "snapshot"
    manifest = json.loads((data_dir / "manifest.json").read_text())
    detours_at = datetime.fromisoformat(manifest["layers"]["detours"]["retrievedAt"].replace("Z", "+00:00"))
    return SimpleNamespace(
        root=root, data_dir=data_dir, version=report.path, manifest=manifest, retrieved=detours_at
    )


def make(tmp_path, data_dir, clock, **config):
    app = create_app(
        {
            "TESTING": True,
            "INSTANCE_PATH": str(tmp_path / "instance"),
            "DATA_DIR": str(data_dir),
            "WALL_CLOCK": clock,
            **config,
        }
    )
    init_app(app)  # a no-op once create_app calls it
    conn = open_store(app)
    _, key = accounts.create_account(conn, "ops@antwerpen.example", "enterprise")
    conn.close()
    return app, {"Authorization": f"Bearer {key}"}


def get(client, headers, path):
    resp = client.get(f"/api/v1/{path}", headers=headers)
    return resp.status_code, resp.get_json()


def test_fresh_live_layers_are_served(tmp_path, live):
    app, auth = make(tmp_path, live.data_dir, Clock(live.retrieved + timedelta(minutes=1)))
    c = app.test_client()
    for path in ("disruptions", "air-quality", "briefing"):
        status, body = get(c, auth, f"{path}?{POINT}")
        assert status == 200, body
    status, body = get(c, auth, f"disruptions?{POINT}")
    ids = {w["id"] for w in body["construction"]}
    assert ids and all(i.startswith("11434") for i in ids)  # the fake upstream's works, not the demo's


def test_stale_detours_give_502_naming_de_lijn_on_the_endpoints_that_need_them(tmp_path, live):
    app, auth = make(tmp_path, live.data_dir, Clock(live.retrieved + timedelta(minutes=45)))
    c = app.test_client()
    resp = c.get(f"/api/v1/disruptions?{POINT}", headers=auth)
    assert resp.status_code == 502
    body = resp.get_json()
    assert set(body) == {"error", "message", "requestId"} and body["error"] == "upstream_error"
    assert "De Lijn" in body["message"] and "'detours'" in body["message"] and "30 min" in body["message"]
    assert resp.headers["Retry-After"] == "60" and resp.headers["Cache-Control"] == "no-store"
    assert get(c, auth, f"briefing?{POINT}")[0] == 502
    assert get(c, auth, f"air-quality?{POINT}")[0] == 200  # NO2 (3 h) and the LEZ are still fresh


def test_stale_no2_gives_502_naming_ircel_but_client_errors_keep_precedence(tmp_path, live):
    app, auth = make(tmp_path, live.data_dir, Clock(live.retrieved + timedelta(hours=4)))
    c = app.test_client()
    status, body = get(c, auth, f"air-quality?{POINT}")
    assert status == 502 and "IRCEL" in body["message"] and "'no2'" in body["message"]
    assert get(c, auth, "air-quality?lat=abc&lng=4.4")[0] == 400
    assert get(c, auth, "air-quality?lat=52.37&lng=4.90")[0] == 422  # Amsterdam
    assert c.get(f"/api/v1/air-quality?{POINT}").status_code == 401
    assert get(c, auth, "locations")[0] == 200  # needs no upstream layer


def test_freshness_limits_are_configurable(tmp_path, live):
    app, auth = make(
        tmp_path, live.data_dir, Clock(live.retrieved + timedelta(minutes=45)), FRESHNESS="detours=7200"
    )
    assert get(app.test_client(), auth, f"disruptions?{POINT}")[0] == 200


def test_demo_and_reference_layers_never_go_stale(tmp_path, snapshot_dir):
    app, auth = make(tmp_path, snapshot_dir, Clock(datetime(2030, 1, 1, tzinfo=timezone.utc)))
    assert get(app.test_client(), auth, f"briefing?{POINT}")[0] == 200


@pytest.fixture
def two_versions(tmp_path, live, snapshot_dir):
    """A pointer switchable between version A (live) and version B (demo)."""
    data_dir = tmp_path / "serve" / "snapshot"
    vdir = store.versions_dir(data_dir)
    vdir.mkdir(parents=True)
    a, b = vdir / "a-live", vdir / "b-demo"
    shutil.copytree(live.version, a)
    shutil.copytree(snapshot_dir, b)
    store.switch(data_dir, a)
    return data_dir, a, b


def test_a_new_snapshot_is_picked_up_without_restart(tmp_path, live, two_versions):
    data_dir, a, b = two_versions
    app, auth = make(
        tmp_path,
        data_dir,
        Clock(live.retrieved + timedelta(minutes=1)),
        RELOAD_INTERVAL="0.01",
        RELOAD_BACKGROUND=False,
    )
    holder, c = app.extensions["urban"], app.test_client()
    live_id = holder.engine.snapshot_id
    status, body_a = get(c, auth, f"disruptions?{POINT}")
    assert status == 200
    store.switch(data_dir, b)
    time.sleep(0.02)
    status, body_b = get(c, auth, f"disruptions?{POINT}")
    assert status == 200 and holder.engine.snapshot_id != live_id
    assert body_a != body_b  # the request after the switch was answered from the new snapshot
    # a broken version is refused: the worker keeps serving the current engine
    broken = a.parent / "c-broken"
    broken.mkdir()
    (broken / "manifest.json").write_text(
        '{"formatVersion": 1, "snapshotId": "x", "asOf": "y", "layers": {}}'
    )
    store.switch(data_dir, broken)
    time.sleep(0.02)
    assert get(c, auth, f"disruptions?{POINT}") == (200, body_b)
    assert app.extensions["urban_sources"]["watcher"].failures == 1


@pytest.mark.slow
def test_snapshot_swap_under_a_concurrent_request_loop_loses_and_mixes_no_request(
    tmp_path, live, two_versions
):
    data_dir, a, b = two_versions
    clock = Clock(live.retrieved + timedelta(minutes=1))
    # the only two correct answers: from A alone and from B alone
    expected = {}
    for name, version in (("a", a), ("b", b)):
        ref_app, ref_auth = make(tmp_path / name, version, clock)
        c = ref_app.test_client()
        expected[name] = {
            p: c.get(f"/api/v1/{p}?{POINT}", headers=ref_auth).data for p in ("disruptions", "air-quality")
        }
    assert expected["a"] != expected["b"]
    app, auth = make(tmp_path / "served", data_dir, clock, RELOAD_INTERVAL="0.05")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}/api/v1"
    stop = threading.Event()
    results, errors = [], []

    def loop(path):
        with requests.Session() as s:
            while not stop.is_set():
                try:
                    r = s.get(f"{base}/{path}?{POINT}", headers=auth, timeout=30)
                    results.append((path, r.status_code, r.content))
                except Exception as exc:  # a lost request is a failure of the test
                    errors.append(repr(exc))

    threads = [threading.Thread(target=loop, args=(p,)) for p in ("disruptions", "air-quality") * 2]
    for t in threads:
        t.start()

    def wait_for(name):
        """Until the newest answers of both endpoints come from snapshot ``name`` (or 60 s passed)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            latest = {}
            for path, _, content in results[-8:]:
                latest[path] = content
            if len(latest) == 2 and all(expected[name][p] == c for p, c in latest.items()):
                return True
            time.sleep(0.05)
        return False

    switched = []
    try:
        for name, version in (("b", b), ("a", a), ("b", b), ("a", a)):
            store.switch(data_dir, version)
            switched.append(wait_for(name))
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        server.shutdown()
    assert switched == [True] * 4, "the workers did not pick up every switch"
    assert not errors
    assert len(results) > 20
    assert all(status == 200 for _, status, _ in results), {s for _, s, _ in results}
    seen = set()
    for path, _, content in results:
        origin = [name for name in ("a", "b") if expected[name][path] == content]
        assert origin, f"a {path} answer matches neither snapshot (mixed)"
        seen.add(origin[0])
    assert seen == {"a", "b"}
    assert app.extensions["urban_sources"]["watcher"].reloads >= 4


def test_a_stale_502_is_not_counted_against_the_quota(tmp_path, live):
    from app.store.usage import used

    clock = Clock(live.retrieved + timedelta(hours=4))
    app, auth = make(tmp_path, live.data_dir, clock)
    c = app.test_client()
    assert get(c, auth, f"air-quality?{POINT}")[0] == 502
    assert get(c, auth, "locations")[0] == 200
    conn = open_store(app)
    account_id = conn.execute("SELECT id FROM accounts").fetchone()[0]
    assert used(conn, account_id, clock.now.strftime("%Y-%m-%d")) == 1  # only /locations counted
    conn.close()


def _republished(live, data_dir, minutes):
    """A new version of the live snapshot whose layers were retrieved ``minutes`` after the first one's."""
    version = store.versions_dir(data_dir) / f"fresh-{minutes}"
    shutil.copytree(live.version, version)
    m = json.loads((version / "manifest.json").read_text())
    at = (live.retrieved + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    for entry in m["layers"].values():
        if entry["kind"] == "live":
            entry["retrievedAt"] = at
    m["asOf"] = at
    (version / "manifest.json").write_text(json.dumps(m))
    return version


@pytest.mark.parametrize("interval", ["3600", "0.01"])
def test_an_idle_worker_serves_a_fresh_published_snapshot_instead_of_a_false_502(
    tmp_path, live, two_versions, interval
):
    """Audit repro: the worker slept while the refresher kept publishing; its own engine is past the detours
    limit, the pointer holds detours retrieved shortly before. The first request must get 200 from the new
    snapshot, whether or not the periodic check is due, with the production (background) loader."""
    data_dir, a, _ = two_versions
    clock = Clock(live.retrieved + timedelta(minutes=45))  # A's detours: 45 min old, limit 30 min
    app, auth = make(tmp_path, data_dir, clock, RELOAD_INTERVAL=interval, RELOAD_BACKGROUND=True)
    c = app.test_client()
    fresh = _republished(live, data_dir, minutes=44)
    store.switch(data_dir, fresh)
    time.sleep(0.02)
    status, body = get(c, auth, f"disruptions?{POINT}")
    assert status == 200, body
    assert (
        app.extensions["urban"].engine.manifest["asOf"]
        == json.loads((fresh / "manifest.json").read_text())["asOf"]
    )


def test_an_idle_worker_without_a_fresher_snapshot_still_answers_502(tmp_path, live, two_versions):
    data_dir, a, _ = two_versions
    app, auth = make(
        tmp_path, data_dir, Clock(live.retrieved + timedelta(minutes=45)), RELOAD_INTERVAL="3600"
    )
    stale = _republished(live, data_dir, minutes=1)  # published, but its detours are just as old
    store.switch(data_dir, stale)
    status, body = get(app.test_client(), auth, f"disruptions?{POINT}")
    assert status == 502 and "'detours'" in body["message"]
