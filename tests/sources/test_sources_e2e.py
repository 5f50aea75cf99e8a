"""End to end in live mode, the way ``make serve`` runs: the refresher CLI against the fake upstream, then
gunicorn (with the project's ``gunicorn.conf.py``) serving the new snapshot; a second refresh is picked up by
every worker without a restart.

The entry module below is ``wsgi.py`` plus an explicit ``app.sources.init_app(app)`` (a no-op once
``create_app`` calls it), so the test does not depend on how the platform wires the source layer."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import requests

from .conftest import create_account_key
from .fakeupstream import FakeUpstream

REPO = Path(__file__).resolve().parents[2]
POINT = "lat=51.2194&lng=4.4025"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ENTRY = """from app import create_app
from app.sources import init_app

app = create_app()
init_app(app)
"""


def run(args, env, **kw):
    """A ``flask`` command as cron would run it: no engine loaded (there may be no snapshot yet)."""
    return subprocess.run(
        [sys.executable, "-m", "flask", "--app", "wsgi_live", *args],
        cwd=REPO,
        env={**env, "URBAN_LOAD_ENGINE": "0"},
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )


@pytest.mark.slow
def test_live_mode_end_to_end(tmp_path, reference_dir):
    (tmp_path / "wsgi_live.py").write_text(ENTRY)
    with FakeUpstream(now=datetime.now(timezone.utc)) as fake:
        env = {
            **os.environ,
            **fake.settings(),
            "URBAN_ENV": "development",
            "URBAN_SECRET_KEY": "e2e-secret",
            "URBAN_INSTANCE_PATH": str(tmp_path / "instance"),
            "URBAN_CLOCK": "system",
            "URBAN_DATA_DIR": str(tmp_path / "data" / "snapshot"),
            "URBAN_REFERENCE_DIR": str(reference_dir),
            "URBAN_RELOAD_INTERVAL": "0.5",
            "URBAN_CACHE_EXPIRY": "gipod.works=1",
            "WEB_CONCURRENCY": "2",
            "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}",
        }
        out = run(["snapshot", "refresh"], env)
        # the 1 s works expiry of this run has passed by then (requests-cache rounds it to the second)
        expired_at = time.monotonic() + 2.1
        assert out.returncode == 0, out.stdout + out.stderr
        assert "published snapshot" in out.stdout
        key = create_account_key(env, "e2e@antwerpen.example")
        port = free_port()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "--config",
                str(REPO / "gunicorn.conf.py"),
                "wsgi_live:app",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "2",
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}/api/v1/disruptions?{POINT}"
            auth = {"Authorization": f"Bearer {key}"}
            deadline = time.monotonic() + 60
            while True:
                try:
                    resp = requests.get(url, headers=auth, timeout=10)
                    break
                except requests.ConnectionError:
                    assert time.monotonic() < deadline, "gunicorn did not come up"
                    time.sleep(0.2)
            assert resp.status_code == 200, resp.text
            before = {w["id"] for w in resp.json()["construction"]}
            assert before and all(i.startswith("11434") for i in before)  # works from the fake GIPOD

            # the register changes upstream; a new refresh is switched in and every worker picks it up
            fake.data["works"] = fake.data["works"][:3]
            time.sleep(max(0.0, expired_at - time.monotonic()))  # the first refresh's entries have expired
            out = run(["snapshot", "refresh"], env)
            assert out.returncode == 0, out.stdout + out.stderr
            after = {w["id"] for w in fake.data["works"][:3]}
            deadline, streak, statuses = time.monotonic() + 30, 0, set()
            while streak < 10:
                assert time.monotonic() < deadline, "workers did not pick up the new snapshot"
                resp = requests.get(url, headers=auth, timeout=10)
                statuses.add(resp.status_code)
                ids = {w["id"] for w in resp.json()["construction"]} if resp.status_code == 200 else None
                streak = streak + 1 if ids is not None and ids <= after else 0
                time.sleep(0.05)
            assert statuses == {200}  # no request failed during the switch
        finally:
            server.terminate()
            server.wait(20)
