"""Change alerts (issue 27): from a publish's stored events to the webhook POSTs of every subscribed location.

``URBAN_BENCH_DELIVERY_LOCATIONS`` (default 10,000) saved locations, 100 per account, each with a change
alert posting to one local receiver (a threaded HTTP/1.1 server on 127.0.0.1 in its own process, answering 204
and keeping connections open, as nginx does). One publish's events
(one per location, as the publish hook stores them after deriving; the derivation itself is measured by
``bench_changes``) are appended to the feed at t0; then what the refresher does: the alert hook's
:func:`app.dashboard.run.enqueue_changes` and the delivery worker's rounds (:func:`app.dashboard.run.deliver_due`)
until every POST arrived, as the hook runs them: a :class:`app.dashboard.run.DeliveryWorker` woken after each
committed page of rows (with code whose enqueue has no pages, such as main's before issue 27's overlap, after
the enqueue). The latency of an event is its POST's arrival at the receiver minus t0: p50, p95
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
#: seconds a run waits for its POSTs at most
WAIT_SECONDS = 300


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

    def count(self) -> int:
        """POSTs arrived so far."""
        return self.log.read_bytes().count(b"\n") if self.log.exists() else 0

    def cpu_seconds(self) -> float:
        """User and system CPU time the receiver process has used (Linux ``/proc``)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

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


def _run_once(n: int, senders: int, *, reuse: bool = True) -> dict:
    """``latencies`` (s) of every POST after the publish, the wall time of the publish and enqueue
    (``enqueued``; the delivery worker starts on each committed page meanwhile), the ``connections`` opened
    (``reuse=False``: the old path, a connection per POST), when the first POST arrived (``first``) and the
    CPU time per POST from the publish to the last POST (``cpu_ms``: this process, publish, enqueue and
    delivery) and of the receiver (``receiver_ms``): what the POSTs cost whatever the machine's load."""
    import inspect
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
    paged = "on_rows" in inspect.signature(run.enqueue_changes).parameters
    try:
        app, ids = subscribed_app(root, n, receiver.url)
        worker = run.DeliveryWorker(app)  # what the alert hook starts on the first publish
        try:
            cpu, receiver_cpu = time.process_time(), receiver.cpu_seconds()
            t0 = time.time()
            publish(app, ids)
            if paged:  # the hook: the worker starts on each committed page
                run.enqueue_changes(app, on_rows=worker.wake)
            else:
                run.enqueue_changes(app)
            enqueued = time.time() - t0
            worker.wake()
            while receiver.count() < n and time.time() - t0 < WAIT_SECONDS:
                time.sleep(0.02)
            cpu, receiver_cpu = time.process_time() - cpu, receiver.cpu_seconds() - receiver_cpu
        finally:
            worker.close()
        arrivals = receiver.arrivals
        return {
            "latencies": [t - t0 for t in arrivals],
            "enqueued": enqueued,
            "first": min(arrivals) - t0 if arrivals else None,
            "connections": sum(c.opened for c in made) if reuse else len(arrivals),
            "cpu_ms": cpu * 1e3 / max(1, len(arrivals)),
            "receiver_ms": receiver_cpu * 1e3 / max(1, len(arrivals)),
        }
    finally:
        changedelivery.SENDERS, changedelivery.round_connections = saved
        receiver.close()
        shutil.rmtree(root, ignore_errors=True)


def _rate(result: dict) -> float:
    """POSTs per second from the first arrival to the last."""
    return len(result["latencies"]) / max(1e-9, max(result["latencies"]) - result["first"])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(engine=None) -> list[Row]:
    n = int(os.environ.get("URBAN_BENCH_DELIVERY_LOCATIONS", "10000"))
    n_base = int(os.environ.get("URBAN_BENCH_DELIVERY_BASELINE", str(n)))
    senders = int(os.environ.get("URBAN_BENCH_DELIVERY_SENDERS", "16"))
    new = _run_once(n, senders=senders)
    old = _run_once(n_base, senders=senders, reuse=False) if n_base else None
    latencies, p95 = new["latencies"], _pct(new["latencies"], 0.95)
    base = "no baseline"
    if old is not None:
        base = (
            f"baseline: a connection per POST, {n_base:,} locations: p95 {_pct(old['latencies'], 0.95):.2f} s, "
            f"{_rate(old):.0f} POSTs/s, CPU per POST {old['cpu_ms']:.2f} ms (receiver "
            f"{old['receiver_ms']:.2f} ms)"
        )
    return [
        Row(
            f"change alerts: publish to webhook POST, {n:,} locations",
            single_us=p95 * 1e6,
            batch_per_s=len(latencies) / max(latencies),
            baseline_per_s=len(old["latencies"]) / max(old["latencies"]) if old else None,
            note=f"{len(latencies):,} POSTs on {new['connections']:,} connections, {senders} senders; p50 "
            f"{_pct(latencies, 0.5):.2f} s, p95 {p95:.2f} s, last {max(latencies):.2f} s; publish and enqueue "
            f"{new['enqueued']:.2f} s, first POST {new['first']:.2f} s; {_rate(new):.0f} POSTs/s from the first "
            f"to the last, CPU per POST from the publish "
            f"{new['cpu_ms']:.2f} ms (receiver {new['receiver_ms']:.2f} ms); {base}",
            target="p95 <= 5 s for 10,000 locations",
            measured=f"p95 {p95:.2f} s",
            met=(p95 <= 5.0) if n == 10_000 and len(latencies) == n else None,
        )
    ]


if __name__ == "__main__":
    from bench.__main__ import run_alone

    run_alone(run)
