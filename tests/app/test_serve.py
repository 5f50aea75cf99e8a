"""`python -m app.serve` (what `make serve` runs) for a new user (issue 30): once ready it says which address
to open in the browser, and a port that is taken is one sentence naming `make serve PORT=…`, not a
traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from app.serve import browser_url, port_in_use

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_env(tmp_path) -> dict:
    env = dict(os.environ, URBAN_INSTANCE_PATH=str(tmp_path / "instance"), URBAN_ENV="development")
    env["URBAN_LOAD_ENGINE"] = "0"
    env.pop("URBAN_SECRET_KEY", None)
    return env


def test_a_taken_port_is_one_sentence_with_make_serve_port(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert "already in use" in port_in_use("127.0.0.1", port)
        proc = subprocess.run(
            [sys.executable, "-m", "app.serve", "--port", str(port)],
            cwd=ROOT,
            env=serve_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in proc.stderr
    assert f"make serve PORT={port + 1}" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert port_in_use("127.0.0.1", free_port()) is None


@pytest.mark.slow
def test_the_ready_server_says_where_to_open_the_browser(tmp_path):
    port = free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.serve", "--port", str(port), "--workers", "1"],
            cwd=ROOT,
            env=serve_env(tmp_path),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 90
        while f"open {url} in your browser" not in log_path.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        with urllib.request.urlopen(url, timeout=30) as answer:
            assert answer.status == 200
        assert f"dashboard {url}dashboard/" in log_path.read_text()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_browser_url_of_a_wildcard_bind_is_localhost():
    assert browser_url("0.0.0.0", 8000) == "http://127.0.0.1:8000/"
    assert browser_url("127.0.0.1", 8001) == "http://127.0.0.1:8001/"
