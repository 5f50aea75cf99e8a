"""The alert round runs after each published refresh of ``flask snapshot refresh`` (live sources simulated by
the local fake upstream speaking their real formats): the events of the new data are mailed once, and a
webhook receiver that hangs never holds up the refresher."""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pytest

from app.store import accounts
from app import create_app
from app.dashboard import alerts
from app.store.sqlite import connect
from app.store.db import migrate
from app.store.saved_locations import add_location
from tests.sources.fakeupstream import FakeUpstream

from . import receivers
from .receivers import Receiver


def refreshing_app(config, fake, tmp_path, reference_dir, **overrides):
    """(app refreshing from ``fake`` into an empty data directory, a connection to its migrated store)."""
    app = create_app(
        {
            **config,
            "ENGINE": None,
            "DATA_DIR": str(tmp_path / "data" / "snapshot"),
            "REFERENCE_DIR": str(reference_dir),
            "CLOCK": "system",
            "HTTP_BACKOFF": "0.01",
            "HTTP_READ_TIMEOUT": "2",
            **fake.settings(),
            **overrides,
        }
    )
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    return app, conn


def test_cli_refresh_rounds_evaluate_alerts_once(tmp_path, engine, reference_dir, config, smtp_server):
    with FakeUpstream(now=datetime.now(timezone.utc)) as fake:
        app, conn = refreshing_app(config, fake, tmp_path, reference_dir)
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


@pytest.mark.timeout(240)  # before delivery had its own worker, the first round waited for the receiver
def test_a_refresh_round_completes_while_a_webhook_receiver_hangs(
    tmp_path, engine, reference_dir, config, smtp_server, monkeypatch
):
    """One account's receiver takes the first POST and holds it until the refresher has finished its
    second round; the webhook deadline (120 s) is longer than the receiver's own patience (60 s), so only a
    refresher that does not wait for delivery lets it answer. Then every event of both accounts is
    delivered, once."""
    from app.sources import cli

    rounds_done, second_round = [], threading.Event()
    real_refresh = cli.refresh

    def counting_refresh(*args, **kwargs):
        report = real_refresh(*args, **kwargs)
        rounds_done.append(report.published)
        if len(rounds_done) == 2:
            second_round.set()
        return report

    released_by_refresher = []

    def hang_until_the_second_round(rcv, conn):
        if rcv.connections == 1:
            released_by_refresher.append(second_round.wait(60))
        receivers.ok(rcv, conn)

    monkeypatch.setattr(cli, "refresh", counting_refresh)
    hanging, good = Receiver(hang_until_the_second_round), Receiver(receivers.ok)
    try:
        with FakeUpstream(now=datetime.now(timezone.utc)) as fake:
            app, conn = refreshing_app(config, fake, tmp_path, reference_dir, ALERT_WEBHOOK_TIMEOUT=120.0)
            subscribed = []
            for email, rcv in (("hanging@stad.be", hanging), ("good@stad.be", good)):
                account, _ = accounts.create_account(conn, email, "pro")
                loc = add_location(conn, account["id"], name="Centrum", address="", lat=51.2194, lng=4.4025)
                with app.app_context():
                    alerts.subscribe(
                        conn, account["id"], loc, list(alerts.KINDS), rcv.url(), engine, engine.as_of
                    )
                subscribed.append((account, rcv))
            result = app.test_cli_runner().invoke(
                args=["snapshot", "refresh", "--every", "1", "--rounds", "2"]
            )
    finally:
        hanging.close()
        good.close()
    assert result.exit_code == 0, result.output
    assert rounds_done == [True, True] and released_by_refresher == [True]
    for account, rcv in subscribed:
        events = conn.execute(
            "SELECT e.* FROM alert_events e JOIN alert_subscriptions s ON s.id = e.subscription_id"
            " WHERE s.account_id = ? AND e.kind = 'event'",
            (account["id"],),
        ).fetchall()
        assert events and all(e["mail_sent_at"] and e["webhook_sent_at"] for e in events)
        assert len(rcv.requests) == len(events)
