"""Change alerts (issue 27): from a publish's stored events to the webhook POSTs of every subscribed location.

``URBAN_BENCH_DELIVERY_LOCATIONS`` (default 10,000) saved locations, 100 per account, each with a change
alert posting to one local receiver (a threaded HTTP/1.1 server on 127.0.0.1 in its own process, answering 204
and keeping connections open, as nginx does). One publish's events
(one per location, as the publish hook stores them after deriving; the derivation itself is measured by
``bench_changes``) are appended to the feed at t0; then what the refresher does: the alert hook's
:func:`app.dashboard.run.enqueue_changes` and the delivery worker's rounds (:func:`app.dashboard.run.deliver_due`)
until every POST arrived. The latency of an event is its POST's arrival at the receiver minus t0: p50, p95
and the last, target p95 <= 5 s. Baseline in the same run (``URBAN_BENCH_DELIVERY_BASELINE`` locations, the
same number by default): the old path, each POST on a connection of its own (``Connection: close``, only the
status line read; switched here only, by replacing :func:`app.dashboard.changedelivery.round_connections`).

Run alone: ``python -m bench.bench_delivery`` (no demo snapshot needed).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from bench import Row

PER_ACCOUNT = 100


_RECEIVER = """
import sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
out = open(sys.argv[1], "a", buffering=1)
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps the connection unless the client says close
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        out.write(f"{time.time()}\\n")
        self.send_response(204)
        self.end_headers()
    def log_message(self, *args):
        pass
ThreadingHTTPServer.request_queue_size = 512  # a real receiver's backlog (nginx: 511), not socketserver's 5
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_port, flush=True)
server.serve_forever()
"""


class _Receiver:
    """A local webhook receiver in its own process (204 to every POST), writing each arrival time (epoch
    seconds) to a file."""

    def __init__(self, root: Path):
        import subprocess
        import sys

        self.log = root / "arrivals.txt"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _RECEIVER, str(self.log)], stdout=subprocess.PIPE, text=True
        )
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}/hook"

    @property
    def arrivals(self) -> list[float]:
        if not self.log.exists():
            return []
        return [float(x) for x in self.log.read_text().split()]

    def close(self):
        self.proc.kill()
        self.proc.wait()


def subscribed_app(root: Path, n: int, url: str):
    """An app whose account store has ``n`` subscribed locations and whose history store holds a feed head."""
    from app import create_app
    from app.history import changes as feed
    from app.history.store import open_store
    from app.store import accounts
    from app.store.db import open_store as open_accounts, write

    history_url = str(root / "history.sqlite")
    history = open_store(history_url)
    feed.ensure_tables(history)
    history.close()
    app = create_app(
        {
            "TESTING": True,
            "INSTANCE_PATH": str(root / "instance"),
            "ENGINE": None,
            "LOAD_ENGINE": False,
            "HISTORY_URL": history_url,
            "ALERT_WEBHOOK_ALLOW_PRIVATE": True,
            "PUBLIC_URL": "http://urban.bench",
            "MAIL_BACKEND": "outbox",
        }
    )
    conn = open_accounts(app)
    ids = [f"loc_bench{i:07d}" for i in range(n)]
    for a in range(0, n, PER_ACCOUNT):
        accounts.create_account(conn, f"bench{a}@antwerpen.be", "pro")
    account_ids = [r[0] for r in conn.execute("SELECT id FROM accounts ORDER BY id")]
    with write(conn):
        for i, loc in enumerate(ids):
            owner = account_ids[i // PER_ACCOUNT]
            conn.execute(
                "INSERT INTO locations (id, account_id, name, address, label, lat, lng, is_primary, created_at)"
                " VALUES (?, ?, ?, '', '', 51.2194, 4.4025, 0, '2026-11-16T08:00:00Z')",
                (loc, owner, f"Plek {i}"),
            )
            conn.execute(
                "INSERT INTO change_subscriptions (account_id, location_id, types, email, webhook_url,"
                " webhook_secret, unsubscribe_token, digest, after_pos, created_at)"
                " VALUES (?, ?, '[\"work.appeared\"]', 0, ?, 'whsec_bench', ?, 0, 0, '2026-11-16T08:00:00Z')",
                (owner, loc, url, f"tok{i:029d}"),
            )
    conn.close()
    return app, ids


def publish(app, ids: list[str]) -> None:
    from app.history import changes as feed
    from app.history.store import open_store

    history = open_store(app.config["HISTORY_URL"])
    events = [
        feed.ChangeEvent(
            f"ev_{i:024x}",
            "work.appeared",
            loc,
            "work:1104994",
            "2026-11-16T08:00:00Z",
            None,
            "bench",
            1,
            None,
            {
                "status": "Concreet gepland",
                "startDate": "2026-12-01",
                "endDate": "2027-03-01",
                "description": "Heraanleg voetpaden",
            },
        )
        for i, loc in enumerate(ids)
    ]
    with history.transaction():
        feed.append(history, events)
    history.close()


def _run_once(n: int, senders: int, *, reuse: bool = True) -> tuple[list[float], float, int]:
    """Latencies (s) of every POST after the publish, the wall time of the enqueue and the connections
    opened (kept connections; ``reuse=False``: the old path, a connection per POST)."""
    from contextlib import nullcontext

    from app.dashboard import changedelivery, run

    root = Path(tempfile.mkdtemp(prefix="urban-bench-delivery-"))
    receiver = _Receiver(root)
    saved = changedelivery.SENDERS, changedelivery.round_connections
    changedelivery.SENDERS = senders
    made: list = []

    def connections(config):
        made.append(saved[1](config))
        return made[-1]

    changedelivery.round_connections = connections if reuse else (lambda config: nullcontext())
    try:
        app, ids = subscribed_app(root, n, receiver.url)
        t0 = time.time()
        publish(app, ids)
        run.enqueue_changes(app)
        enqueued = time.time() - t0
        while True:
            counts, _next = run.deliver_due(app)
            if not any(counts.values()):
                break
        opened = sum(c.opened for c in made) if reuse else len(receiver.arrivals)
        return [t - t0 for t in receiver.arrivals], enqueued, opened
    finally:
        changedelivery.SENDERS, changedelivery.round_connections = saved
        receiver.close()
        shutil.rmtree(root, ignore_errors=True)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(engine=None) -> list[Row]:
    n = int(os.environ.get("URBAN_BENCH_DELIVERY_LOCATIONS", "10000"))
    n_base = int(os.environ.get("URBAN_BENCH_DELIVERY_BASELINE", str(n)))
    senders = int(os.environ.get("URBAN_BENCH_DELIVERY_SENDERS", "16"))
    latencies, enqueued, opened = _run_once(n, senders=senders)
    old, _, _ = _run_once(n_base, senders=senders, reuse=False) if n_base else ([1.0], 0.0, 0)
    p95 = _pct(latencies, 0.95)
    return [
        Row(
            f"change alerts: publish to webhook POST, {n:,} locations",
            single_us=p95 * 1e6,
            batch_per_s=len(latencies) / max(latencies),
            baseline_per_s=len(old) / max(old),
            note=f"{len(latencies):,} POSTs on {opened:,} connections, {senders} senders; p50 "
            f"{_pct(latencies, 0.5):.2f} s, p95 {p95:.2f} s, last {max(latencies):.2f} s; enqueue {enqueued:.2f} s; "
            f"baseline: a connection per POST, {n_base:,} locations, p95 {_pct(old, 0.95):.2f} s",
            target="p95 <= 5 s for 10,000 locations",
            measured=f"p95 {p95:.2f} s",
            met=(p95 <= 5.0) if n == 10_000 and len(latencies) == n else None,
        )
    ]


if __name__ == "__main__":
    from bench.__main__ import run_alone

    run_alone(run)
