"""The real deployment: ``gunicorn -c gunicorn.conf.py`` (production mode, preloaded engine) on 127.0.0.1.

/healthz, security headers and no server version, no SQLite file open in the master, JSON access log
without secrets, graceful reload on SIGHUP, kill -9 of a worker under load (service keeps answering,
every acknowledged call counted, integrity_check ok), and refusal to start on a missing or corrupt snapshot.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.deploy import ROOT, Gunicorn, free_port, get, prepare, run_until_exit

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def deployment(snapshot_dir, tmp_path_factory):
    fx = prepare(tmp_path_factory.mktemp("deploy") / "instance", snapshot_dir, accounts=6, points=20)
    server = Gunicorn(
        fx.instance, workers=2, data_dir=snapshot_dir, env={"URBAN_AUTH_FAILURE_LIMIT": "10000 per minute"}
    )
    with server:
        yield server, fx


def test_healthz_reports_engine_snapshot_and_database(deployment, snapshot_dir):
    server, _fx = deployment
    status, headers, body = get(server.port, "/healthz")
    manifest = json.loads((snapshot_dir / "manifest.json").read_text())
    assert status == 200
    doc = json.loads(body)
    assert doc["status"] == "ok" and doc["database"] == "ok"
    assert doc["snapshot"]["snapshotId"] == manifest["snapshotId"]
    assert doc["snapshot"]["asOf"][:19] == manifest["asOf"][:19]
    assert {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} <= set(headers)
    assert headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    "path", ["/healthz", "/api/v1/briefing?lat=51.2&lng=4.4", "/nope", "/api/v1/openapi.json"]
)
def test_security_headers_and_no_server_version(deployment, path):
    server, _fx = deployment
    _status, headers, _body = get(server.port, path)
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Server"] == "urban"
    assert "gunicorn" not in json.dumps(headers).lower()


def test_master_holds_no_sqlite_file(deployment):
    server, fx = deployment
    assert get(server.port, f"/api/v1/locations", {"Authorization": f"Bearer {fx.keys[0]}"})[0] == 200

    def sqlite_fds(pid):
        fd_dir = Path(f"/proc/{pid}/fd")
        names = []
        for fd in fd_dir.iterdir():
            try:
                names.append(os.readlink(fd))
            except OSError:
                pass
        return [n for n in names if ".sqlite" in n]

    assert sqlite_fds(server.proc.pid) == []
    assert any(sqlite_fds(pid) for pid in server.worker_pids())  # opened after fork, kept by the workers


def _logged_get(port: int, target: str, logs: tuple[Path, ...], headers=None) -> tuple[Path, dict]:
    """GET ``target`` once with a fresh ``X-Request-Id`` and wait for that request's own access-log line:
    (the file of ``logs`` holding it, its entry). gunicorn writes the line after sending the answer, so the
    answer alone says nothing about the log; each request is waited for before the test goes on."""
    request_id = os.urandom(16).hex()
    get(port, target, {**(headers or {}), "X-Request-Id": request_id})
    deadline = time.monotonic() + 60  # a guard against a hang, not a timing assumption
    while True:
        for path in logs:
            text = path.read_text() if path.exists() else ""
            if request_id in text:
                entry = next(json.loads(line) for line in text.splitlines() if request_id in line)
                return path, entry
        if time.monotonic() > deadline:
            raise AssertionError(f"no access-log line for {target} in {logs}")
        time.sleep(0.02)


def test_access_log_is_json_without_secrets(deployment):
    server, fx = deployment
    key = fx.keys[1]
    logs = (server.log_path,)
    _logged_get(server.port, "/api/v1/locations", logs, {"Authorization": f"Bearer {key}"})
    _logged_get(server.port, f"/api/v1/locations?api_key={key}", logs)
    _path, entry = _logged_get(server.port, "/portal/link/" + "T" * 43, logs)
    text = server.log_path.read_text()
    assert key not in text and "T" * 43 not in text and "Bearer" not in text
    assert entry["path"] == "/portal/link/[redacted]"
    assert {"time", "pid", "remote", "method", "path", "query", "status", "duration_us", "request_id"} <= set(
        entry
    )


def _wait_until_reopened(pid: int, path: Path) -> None:
    """Wait until process ``pid`` holds ``path`` open (after a rename, its old descriptor names the new
    name): the worker's SIGUSR1 handler has reopened the access log, and it runs to its end before the
    worker takes the next request."""
    deadline = time.monotonic() + 60  # a guard against a hang, not a timing assumption
    while True:
        held = set()
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                held.add(os.readlink(fd))
            except OSError:  # closed meanwhile
                pass
        if str(path) in held:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"worker {pid} never reopened {path} after SIGUSR1")
        time.sleep(0.02)


@pytest.fixture(scope="module")
def one_worker(snapshot_dir, tmp_path_factory):
    """gunicorn with one worker writing its access log to ``dir/access.log`` (its error log:
    ``dir/gunicorn.log``), shared by the two log tests: (server, the worker's pid, dir). Either order leaves
    the other's checks as they are: the rotation test reads only lines written after its own rename, the
    signal test only its own ``n=`` lines."""
    where = tmp_path_factory.mktemp("one-worker")
    fx = prepare(where / "instance", snapshot_dir, accounts=1, points=5)
    with Gunicorn(
        fx.instance,
        workers=1,
        data_dir=snapshot_dir,
        env={"GUNICORN_ACCESSLOG": str(where / "access.log")},
        log=where / "gunicorn.log",
    ) as server:
        (worker,) = server.worker_pids()
        yield server, worker, where


def test_access_log_file_follows_rotation_on_usr1(one_worker):
    server, worker, where = one_worker
    log, rotated = where / "access.log", where / "access.log.1"
    # one worker, one request at a time: once this line is written, every earlier one is too
    assert _logged_get(server.port, "/healthz?before=rotation", (log,))[0] == log
    log.rename(rotated)  # what logrotate does, then it signals the master
    server.proc.send_signal(signal.SIGUSR1)
    _wait_until_reopened(worker, log)
    got, _entry = _logged_get(server.port, "/healthz?after=rotation", (log, rotated))
    assert got == log
    assert "before=rotation" in rotated.read_text() and "after=rotation" not in rotated.read_text()
    after = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["path"], e["query"], e["status"]) for e in after] == [("/healthz", "after=rotation", 200)]


def test_reopen_signals_never_interrupt_a_log_write(one_worker):
    """SIGUSR1 arriving while the worker writes its access log (a rotation under traffic) loses no line and
    raises nothing: the reopen waits for the end of the request."""
    server, worker, where = one_worker
    log = where / "access.log"
    stop, sent = threading.Event(), []

    def traffic():
        while not stop.is_set():
            get(server.port, f"/healthz?n={len(sent)}")
            sent.append(len(sent))

    client = threading.Thread(target=traffic)
    client.start()
    try:
        for _ in range(2000):  # signals land anywhere in the worker's requests, log writes included
            os.kill(worker, signal.SIGUSR1)
            time.sleep(0.001)
    finally:
        stop.set()
        client.join()
    _logged_get(server.port, "/healthz?n=last", (log,))  # one worker: every earlier line is written
    assert server.worker_pids() == [worker]
    queries = [json.loads(line)["query"] for line in log.read_text().splitlines()]
    assert [q for q in queries if q.startswith("n=") and q != "n=last"] == [f"n={i}" for i in sent]
    errors = (where / "gunicorn.log").read_text()
    assert "Logging error" not in errors and "reentrant call" not in errors and "Traceback" not in errors


def test_sighup_reloads_workers_gracefully(deployment):
    server, fx = deployment
    before = set(server.worker_pids())
    stop = threading.Event()
    statuses = []

    def load():
        while not stop.is_set():
            statuses.append(
                get(
                    server.port,
                    "/api/v1/air-quality?lat=51.2194&lng=4.4025",
                    {"Authorization": f"Bearer {fx.keys[2]}"},
                )[0]
            )

    threads = [threading.Thread(target=load) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    os.kill(server.proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
        set(server.worker_pids()) & before or len(server.worker_pids()) < 2
    ):
        time.sleep(0.2)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join()
    assert not (set(server.worker_pids()) & before), "old workers still running"
    assert statuses and set(statuses) == {200}


def test_kill_9_of_a_worker_under_load(deployment):
    server, fx = deployment
    keys = fx.keys[3:6]
    results = []  # (key, status or None for a dropped connection)
    lock = threading.Lock()

    def call(i):
        key = keys[i % len(keys)]
        try:
            status = get(
                server.port,
                "/api/v1/disruptions?lat=51.2194&lng=4.4025",
                {"Authorization": f"Bearer {key}"},
                timeout=20,
            )[0]
        except (
            OSError,
            http.client.HTTPException,
        ):  # refused/reset, or cut off mid-response (IncompleteRead)
            status = None
        with lock:
            results.append((key, status))

    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = [pool.submit(call, i) for i in range(150)]
        time.sleep(0.4)
        os.kill(server.worker_pids()[0], signal.SIGKILL)
        for f in futures:
            f.result()
    after = [get(server.port, "/healthz")[0] for _ in range(10)]
    assert set(after) == {200}
    conn = sqlite3.connect(fx.instance / "urban.sqlite")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = conn.execute(
            "SELECT COALESCE(SUM(count), 0) FROM usage u JOIN accounts a ON a.id = u.account_id"
            " WHERE a.email IN ('load3@stad.antwerpen.be', 'load4@stad.antwerpen.be',"
            " 'load5@stad.antwerpen.be')"
        ).fetchone()[0]
    finally:
        conn.close()
    ok = sum(1 for _k, s in results if s == 200)
    dropped = sum(1 for _k, s in results if s is None)
    assert {s for _k, s in results} <= {200, None}
    assert ok >= 100
    # every acknowledged call is counted; a call cut off by the kill may have been counted before the cut
    assert ok <= stored <= ok + dropped


def raw(port: int, data: bytes):
    """Send ``data`` as-is on a fresh connection; (status, headers, body) of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(data)
        except OSError:  # the server may answer and close before reading all of an oversized request
            pass
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


KEY_LIKE = "uc_live_" + "Zq81Kd0aLm29Xc7BvN4pQr5StUvWxYz1" + "AbC123"


@pytest.mark.parametrize(
    "data, status, code",
    [
        (
            b"GET /api/v1/briefing?lat=" + b"1" * 5000 + b"&lng=4.4 HTTP/1.1\r\nHost: x\r\n\r\n",
            414,
            "uri_too_long",
        ),
        (
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",
            431,
            "headers_too_large",
        ),
        (
            b"GET /healthz HTTP/1.1\r\n" + b"".join(b"X-H%d: 1\r\n" % i for i in range(60)) + b"\r\n",
            431,
            "headers_too_large",
        ),
        (b"POST /api/v1/signup HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "invalid_request"),
        (b"GARBAGE\r\n\r\n", 400, "invalid_request"),
        (f"GET /api/v1/locations?k={KEY_LIKE} HTTP/9.9\r\nHost: x\r\n\r\n".encode(), 400, "invalid_request"),
    ],
)
def test_requests_gunicorn_rejects_get_the_json_error_and_headers(deployment, data, status, code):
    """gunicorn's own answers (before Flask): JSON in the one shape, rate-limit, nosniff and CORS headers."""
    server, _fx = deployment
    got, headers, body = raw(server.port, data)
    assert got == status
    assert headers["Content-Type"] == "application/json"
    doc = json.loads(body)
    assert set(doc) == {"error", "message"} and doc["error"] == code
    assert b"<html" not in body.lower()
    assert headers["X-RateLimit-Limit"] == "10000"  # the per-IP failed-authentication budget of this server
    assert 0 <= int(headers["X-RateLimit-Remaining"]) <= 10000
    assert int(headers["X-RateLimit-Reset"]) > time.time()
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Cache-Control"] == "no-store"
    assert (
        headers["Access-Control-Allow-Origin"] == "*"
        and "X-RateLimit-Remaining" in headers["Access-Control-Expose-Headers"]
    )
    assert headers["Server"] == "urban" and headers["X-Request-Id"]
    assert KEY_LIKE[8:30] not in body.decode()
    # raw() read up to the server's close, which comes after the request's log lines
    assert KEY_LIKE[8:30] not in server.log_path.read_text(errors="replace")


def test_chunked_body_over_the_limit_is_413(deployment):
    """No Content-Length (chunked): the size limit still gives 413, not a 400 for a truncated body."""
    server, _fx = deployment
    body = b'{"email": "' + b"a" * 20000 + b'@stad.be"}'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = (
        b"POST /api/v1/signup HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    status, headers, answer = raw(server.port, head + chunked)
    assert status == 413 and json.loads(answer)["error"] == "payload_too_large"
    assert "X-RateLimit-Limit" in headers


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_bad_snapshot_refuses_to_start(snapshot_dir, tmp_path, damage):
    data = tmp_path / "snapshot"
    if damage == "corrupt":
        shutil.copytree(snapshot_dir, data)
        target = data / "stations.parquet"
        target.write_bytes(target.read_bytes()[:100])
        named = str(target)
    else:
        named = str(data)
    env = dict(
        os.environ,
        URBAN_ENV="production",
        URBAN_SECRET_KEY="x",
        URBAN_PUBLIC_URL="https://api.example.be",
        URBAN_INSTANCE_PATH=str(tmp_path / "i"),
        URBAN_DATA_DIR=str(data),
        PORT=str(free_port()),
    )
    out = run_until_exit(env)
    assert out.returncode != 0
    assert "refuses to start" in out.stderr and named in out.stderr, out.stderr[-2000:]


@pytest.mark.parametrize(
    "worker, threads, expected",
    [
        (None, None, "app.server.worker.SyncWorker"),
        ("sync", "2", "app.server.worker.ThreadWorker"),  # gunicorn would switch to its own (HTML) gthread
        ("gthread", "4", "app.server.worker.ThreadWorker"),
    ],
)
def test_every_worker_choice_keeps_json_errors(monkeypatch, worker, threads, expected):
    import runpy

    for name, value in (("GUNICORN_WORKER_CLASS", worker), ("GUNICORN_THREADS", threads)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert runpy.run_path(str(ROOT / "gunicorn.conf.py"))["worker_class"] == expected
