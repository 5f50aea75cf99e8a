"""The alert round runs after each published refresh of ``flask snapshot refresh`` (live sources simulated by
the local fake upstream speaking their real formats): the change feed's events of the new data are mailed
once, and a webhook receiver that hangs never holds up the refresher."""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pytest

from app.store import accounts
from app import create_app
from app.dashboard import changealerts
from app.history import changes as feed
from app.history.store import open_store as open_history
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


def served_before(app, conn, snapshot_dir) -> int:
    """The demo snapshot recorded as the publish before the live ones (the feed's baseline); its head."""
    history = open_history(app.config["HISTORY_URL"])
    try:
        history.record_dir(snapshot_dir)
        feed.derive_saved(history, conn)
        return feed.head(history)
    finally:
        history.close()


def subscribe(app, conn, snapshot_dir, who) -> list:
    """Accounts with a location and its change alert (every type, mail and ``webhook``) for each ``(email,
    webhook)`` of ``who``, subscribed while the demo snapshot was served; the accounts."""
    made = []
    for email, _webhook in who:
        account, _ = accounts.create_account(conn, email, "pro")
        made.append(
            (account, add_location(conn, account["id"], name="Centrum", address="", lat=51.2194, lng=4.4025))
        )
    head = served_before(app, conn, snapshot_dir)
    with app.app_context():
        for (account, loc), (_email, webhook) in zip(made, who):
            changealerts.save(
                conn,
                account["id"],
                loc,
                types=changealerts.EVENT_TYPES,
                email=True,
                webhook_url=webhook,
                head=head,
            )
    return [account for account, _loc in made]


def deliveries(conn, account_id) -> list:
    return conn.execute(
        "SELECT d.* FROM change_deliveries d JOIN change_subscriptions s ON s.id = d.subscription_id"
        " WHERE s.account_id = ?",
        (account_id,),
    ).fetchall()


def test_cli_refresh_rounds_deliver_the_feeds_events_once(
    tmp_path, snapshot_dir, reference_dir, config, smtp_server
):
    with FakeUpstream(now=datetime.now(timezone.utc)) as fake:
        app, conn = refreshing_app(config, fake, tmp_path, reference_dir)
        # subscribed while the demo snapshot was served: the live data differs from it
        [account] = subscribe(app, conn, snapshot_dir, [("hook@stad.be", "")])
        result = app.test_cli_runner().invoke(args=["snapshot", "refresh", "--every", "1", "--rounds", "2"])
    assert result.exit_code == 0, result.output
    assert result.output.count("published snapshot") == 2
    rows = deliveries(conn, account["id"])
    assert rows, "the live data brought no change to alert about"
    assert all(r["sent_at"] and r["channel"] == "mail" for r in rows)
    assert len(smtp_server.messages) == len(rows)  # the second round sent nothing again


@pytest.mark.timeout(
    240, func_only=True
)  # before delivery had its own worker, the first round waited for the receiver
def test_a_refresh_round_completes_while_a_webhook_receiver_hangs(
    tmp_path, snapshot_dir, reference_dir, config, smtp_server, monkeypatch
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
            accounts_made = subscribe(
                app, conn, snapshot_dir, [("hanging@stad.be", hanging.url()), ("good@stad.be", good.url())]
            )
            subscribed = list(zip(accounts_made, (hanging, good)))
            result = app.test_cli_runner().invoke(
                args=["snapshot", "refresh", "--every", "1", "--rounds", "2"]
            )
    finally:
        hanging.close()
        good.close()
    assert result.exit_code == 0, result.output
    assert rounds_done == [True, True] and released_by_refresher == [True]
    for account, rcv in subscribed:
        rows = deliveries(conn, account["id"])
        assert rows and all(r["sent_at"] for r in rows)
        assert len(rcv.requests) == sum(r["channel"] == "webhook" for r in rows)
