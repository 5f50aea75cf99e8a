"""The alert round runs after each published refresh of ``flask snapshot refresh`` (live sources simulated by
the local fake upstream speaking their real formats): the events of the new data are mailed once."""

from __future__ import annotations

from datetime import datetime, timezone

from app.store import accounts
from app import create_app
from app.dashboard import alerts
from app.store.sqlite import connect
from app.store.db import migrate
from app.store.saved_locations import add_location
from tests.sources.fakeupstream import FakeUpstream


def test_cli_refresh_rounds_evaluate_alerts_once(tmp_path, engine, reference_dir, config, smtp_server):
    data_dir = tmp_path / "data" / "snapshot"
    with FakeUpstream(now=datetime.now(timezone.utc)) as fake:
        app = create_app(
            {
                **config,
                "ENGINE": None,
                "DATA_DIR": str(data_dir),
                "REFERENCE_DIR": str(reference_dir),
                "CLOCK": "system",
                "HTTP_BACKOFF": "0.01",
                "HTTP_READ_TIMEOUT": "2",
                **fake.settings(),
            }
        )
        conn = connect(app.config["DATABASE"])
        migrate(conn)
        account, _ = accounts.create_account(conn, "hook@stad.be", "pro")
        loc = add_location(conn, account["id"], name="Centrum", address="", lat=51.2194, lng=4.4025)
        # subscribed while the demo snapshot was served: the live data differs from that baseline
        alerts.subscribe(conn, account["id"], loc, list(alerts.KINDS), "", engine, engine.as_of)
        baseline = conn.execute("SELECT COUNT(*) FROM alert_events").fetchone()[0]
        result = app.test_cli_runner().invoke(args=["snapshot", "refresh", "--every", "1", "--rounds", "2"])
    assert result.exit_code == 0, result.output
    assert result.output.count("published snapshot") == 2
    events = conn.execute("SELECT * FROM alert_events WHERE kind = 'event'").fetchall()
    assert events, "the live data brought no change to alert about"
    assert conn.execute("SELECT COUNT(*) FROM alert_events").fetchone()[0] == baseline + len(events)
    assert all(e["mail_sent_at"] for e in events)
    assert len(smtp_server.messages) == len(events)  # the second round sent nothing again
