"""The documented live-mode recipe (docs/sources.md, "Live mode, end to end"), run as written: the fake
upstream as a process writing its exports, then ``python -m app.sources live`` (what ``make serve-live``
runs) with neither ``URBAN_ENV`` nor ``URBAN_SECRET_KEY`` set and no snapshot present, an account from the
Flask CLI, and a 200 from live data over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parents[2]
POINT = "lat=51.2194&lng=4.4025"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def source(env_file: Path) -> dict:
    """What ``. fake.env`` does: the ``export K='V'`` lines as a dict."""
    out = {}
    for line in env_file.read_text().splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        out[key] = shlex.split(value)[0]
    return out


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.2)
    pytest.fail(f"{what} within {seconds} s")


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.mark.slow
def test_documented_live_recipe_serves_live_data(tmp_path, reference_dir):
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("URBAN_") and k not in ("WEB_CONCURRENCY", "PORT", "HOST")
    }
    base.update(
        {
            "URBAN_DATA_DIR": str(tmp_path / "data" / "snapshot"),  # nothing there yet
            "URBAN_INSTANCE_PATH": str(tmp_path / "instance"),
            "URBAN_REFERENCE_DIR": str(reference_dir),
        }
    )
    env_file, fake_port, api_port = tmp_path / "fake.env", free_port(), free_port()
    py = sys.executable
    fake = subprocess.Popen(
        [py, "-m", "tests.sources.fakeupstream", "--port", str(fake_port), "--env-file", str(env_file)],
        cwd=REPO,
        env=base,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    live = None
    try:
        wait_for(env_file.exists, 30, "the fake upstream did not write its exports")
        env = {**base, **source(env_file)}
        assert env["URBAN_BOUNDARY_URL"].startswith(f"http://127.0.0.1:{fake_port}/")
        live = subprocess.Popen(
            [py, "-m", "app.sources", "live", "--port", str(api_port), "--workers", "1", "--every", "30"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "live.log", "w"),
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{api_port}"

        def up():
            assert live.poll() is None, (tmp_path / "live.log").read_text()
            try:
                return requests.get(f"{url}/healthz", timeout=5).status_code == 200
            except requests.ConnectionError:
                return False

        wait_for(up, 120, "the live API did not come up")
        created = subprocess.run(
            [
                py,
                "-m",
                "flask",
                "--app",
                "wsgi",
                "accounts",
                "create",
                "--email",
                "ops@antwerpen.example",
                "--plan",
                "enterprise",
            ],
            cwd=REPO,
            env={**env, "URBAN_ENV": "development", "URBAN_LOAD_ENGINE": "0"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert created.returncode == 0, created.stderr
        key = created.stdout.strip().splitlines()[-1]
        resp = requests.get(
            f"{url}/api/v1/disruptions?{POINT}", headers={"Authorization": f"Bearer {key}"}, timeout=30
        )
        assert resp.status_code == 200, resp.text
        ids = {w["id"] for w in resp.json()["construction"]}
        assert ids and all(i.startswith("11434") for i in ids)  # the fake GIPOD's works, not the demo's
        manifest = json.loads((tmp_path / "data" / "snapshot" / "manifest.json").read_text())
        assert {n: e["kind"] for n, e in manifest["layers"].items() if n != "river"} == dict.fromkeys(
            ("service_area", "lez", "stations", "stops", "works", "detours", "no2"), "live"
        )
    finally:
        if live is not None:
            stop(live)
        stop(fake)
    assert live.returncode == 0, (tmp_path / "live.log").read_text()
