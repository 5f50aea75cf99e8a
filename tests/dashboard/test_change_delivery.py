"""Change alerts follow the change feed: a real SMTP server (aiosmtpd) and a local webhook receiver get each
event once, across a restart of the sender; the webhook body is a CloudEvent valid against the published JSON
Schema, signed as before; per-type filters, quiet hours (Europe/Brussels), the daily digest, retries, dead
letters and the dashboard's failed deliveries with retry and dismiss."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime

import jsonschema
import pytest

from app import create_app
from app.api.changes_schemas import schemas as api_schemas
from app.dashboard import changealerts, changedelivery, run
from app.dashboard.delivery import MAX_ATTEMPTS, RETRY_DELAYS, sign
from app.history.store import open_store as open_history
from app.store.db import open_store
from geo.rules.changes import EVENT_TYPES

from . import receivers
from .alerting import Clock
from .changefeed import head, pro_location, publish, shared_variant_dirs
from .conftest import CSRF, signed_in
from .receivers import Receiver, header

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def dirs(snapshot_dir, engine, build_once):
    """The variant snapshots, and ``recorded``: a history store holding the "before" publish, recorded once
    per run (read-only: :func:`publish_before` copies it)."""
    variants = shared_variant_dirs(snapshot_dir, engine, build_once)

    def build(root):
        history = open_history(str(root / "history.sqlite"))
        try:
            assert history.record_dir(variants["before"]).seq is not None
        finally:
            history.close()

    return {**variants, "recorded": build_once("change-delivery-before", build) / "history.sqlite"}


def publish_before(app, dirs) -> list:
    """``publish(app, dirs["before"])`` as the app's first publish, its records copied from ``dirs["recorded"]``
    instead of encoded again: the same derivation for the saved locations (record_dir finds it recorded)."""
    shutil.copyfile(dirs["recorded"], _fresh(app.config["HISTORY_URL"]))
    return publish(app, dirs["before"])


def _fresh(path: str) -> str:
    assert not any(os.path.exists(path + suffix) for suffix in ("", "-wal", "-shm")), path
    return path


@pytest.fixture
def clock():
    return Clock()  # 2026-11-16 08:00 UTC = 09:00 in Brussels


@pytest.fixture
def feed_config(config, tmp_path, clock):
    return {**config, "WALL_CLOCK": clock}


@pytest.fixture
def good():
    receiver = Receiver(receivers.ok)
    yield receiver
    receiver.close()


def subscribe(app, account, loc, **options):
    """A change alert made through the store function (starting at the feed's head)."""
    options = {"types": EVENT_TYPES, "email": True, "webhook_url": "", **options}
    conn = open_store(app)
    try:
        with app.app_context():
            return changealerts.save(conn, account["id"], loc, head=head(app), **options)
    finally:
        conn.close()


def round_(app) -> dict:
    """What the refresher's hook and delivery worker do after a publish: enqueue, then one round."""
    new = run.enqueue_changes(app)
    counts, _next = run.deliver_due(app)
    return {"new": new, **counts}


def validator():
    schema = changealerts.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def test_the_published_schema_carries_the_apis_change_event_and_is_served(feed_config):
    schema = changealerts.schema()
    assert schema["$defs"]["ChangeEvent"] == api_schemas()["ChangeEvent"]  # one shape, the API's
    assert schema["properties"]["type"]["enum"] == [changealerts.TYPE_PREFIX + t for t in EVENT_TYPES]
    resp = create_app(feed_config).test_client().get("/schemas/change-webhook/v1.json")
    assert resp.status_code == 200 and resp.mimetype == "application/schema+json"
    assert json.loads(resp.data) == schema
    validator()


def test_each_event_is_mailed_and_posted_once_across_a_restart_of_the_sender(
    feed_config, dirs, smtp_server, good
):
    app = create_app(feed_config)
    account, loc = pro_location(app, "ops@stad.be")
    publish_before(app, dirs)  # the location's stream starts here: what holds now is no event
    assert publish(app, dirs["before"]) == []  # the same publish again: nothing new
    client = signed_in(app, account["id"])
    resp = client.post(
        f"/dashboard/locations/{loc['id']}/change-alert",
        data={"csrf_token": CSRF, "type": list(EVENT_TYPES), "email": "on", "webhook_url": good.url()},
    )
    assert resp.status_code == 200  # the webhook secret, shown this once
    secret = re.search(r'data-testid="webhook-secret">([^<]+)<', resp.get_data(as_text=True)).group(1)
    assert secret.startswith("whsec_")
    assert round_(app) == {"new": 0, "mail": 0, "webhook": 0, "failed": 0, "deferred": 0}

    # the first publish after subscribing: its events (a new detour, a work running, NO2 over 40) go out
    events = publish(app, dirs["after"])
    mine = [e for e in events if e.location_id == loc["id"]]
    assert {"work.started", "detour.started", "no2.above_eu"} <= {e.type for e in mine}
    counts = round_(app)
    assert counts == {
        "new": 2 * len(mine),
        "mail": len(mine),
        "webhook": len(mine),
        "failed": 0,
        "deferred": 0,
    }
    assert smtp_server.wait_for(len(mine)) and len(smtp_server.messages) == len(mine)
    check = validator()
    posted = {}
    for head_lines, body in good.requests:
        ts = int(header(head_lines, "X-Urban-Timestamp"))
        assert header(head_lines, "X-Urban-Signature") == sign(secret, ts, body)
        assert header(head_lines, "Content-Type") == "application/cloudevents+json; charset=utf-8"
        envelope = json.loads(body)
        check.validate(envelope)
        assert envelope["source"] == f"http://urban.test/api/v1/locations/{loc['id']}"
        assert envelope["dataschema"] == "http://urban.test/schemas/change-webhook/v1.json"
        posted[envelope["id"]] = envelope
    assert sorted(posted) == sorted(e.id for e in mine)  # each event once, with its stable id
    for e in mine:
        assert (
            posted[e.id]["data"] == e.body and posted[e.id]["type"] == f"be.urban-conditions.change.{e.type}"
        )
    subjects = [str(m["Subject"]) for _rcpt, m in smtp_server.messages]
    assert all(s.startswith("Change at Centrum: ") for s in subjects)
    assert any(f"work {dirs['work']}" in s for s in subjects) and any("detour 99999" in s for s in subjects)
    assert all(rcpt == ["ops@stad.be"] for rcpt, _m in smtp_server.messages)

    # a restart of the sender (a new app on the same stores), the same publish recorded again: nothing twice
    restarted = create_app(feed_config)
    publish(restarted, dirs["after"])
    assert round_(restarted) == {"new": 0, "mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    # the next publish: only its own events
    later = [e for e in publish(restarted, dirs["later"]) if e.location_id == loc["id"]]
    assert later and round_(restarted)["webhook"] == len(later)
    assert len(good.requests) == len(mine) + len(later) and len(smtp_server.messages) == len(mine) + len(
        later
    )
    assert len({json.loads(b)["id"] for _h, b in good.requests}) == len(good.requests)


def test_a_sender_that_died_mid_round_is_taken_over_without_sending_twice(
    feed_config, dirs, smtp_server, good, clock
):
    """A sender claims rows and dies before settling: the claim blocks a second sender until its lease ends;
    then the rows go out once. Rows it had settled are never sent again."""
    app = create_app(feed_config)
    account, loc = pro_location(app, "crash@stad.be")
    publish_before(app, dirs)
    subscribe(app, account, loc, email=False, webhook_url=good.url())
    publish(app, dirs["after"])
    assert run.enqueue_changes(app) > 1
    conn = open_store(app)
    keys = [changedelivery._key(r) for r in changedelivery.due(conn, clock.epoch)]
    changedelivery.claim(conn, keys[:1], clock.epoch)  # the dead sender's claim
    assert round_(app)["webhook"] == len(keys) - 1
    assert round_(app)["webhook"] == 0  # the claimed row waits for the lease
    clock.advance(changedelivery.LEASE_SECONDS + 1)
    assert round_(app)["webhook"] == 1 and round_(app)["webhook"] == 0
    assert len(good.requests) == len(keys) == len({json.loads(b)["id"] for _h, b in good.requests})
    conn.close()


def test_only_the_chosen_event_types_are_sent(feed_config, dirs, smtp_server, good):
    app = create_app(feed_config)
    account, loc = pro_location(app, "filter@stad.be")
    other, other_loc = pro_location(app, "nothing@stad.be", name="Elders")
    publish_before(app, dirs)
    subscribe(app, account, loc, types=["detour.started"], webhook_url=good.url())
    subscribe(app, other, other_loc, types=["source.stale"])
    publish(app, dirs["after"])
    assert round_(app) == {"new": 2, "mail": 1, "webhook": 1, "failed": 0, "deferred": 0}
    ((_h, body),) = good.requests
    assert json.loads(body)["type"] == "be.urban-conditions.change.detour.started"
    assert smtp_server.messages[0][0] == ["filter@stad.be"]


@pytest.mark.parametrize(
    ("utc_hour", "held_until_utc_hour"),
    [(22, 6), (5, 6), (21, 21)],  # 23:00 and 06:00 in Brussels (UTC+1) are quiet hours; 22:00 is not
)
def test_quiet_hours_hold_mail_until_they_end_in_brussels_time(
    feed_config, dirs, smtp_server, good, clock, utc_hour, held_until_utc_hour
):
    """Quiet 23:00–07:00 Brussels time (UTC+1 in November): a mail due then waits until 06:00 UTC; the webhook
    goes at once."""
    clock.now = datetime(2026, 11, 16, utc_hour, 30, tzinfo=UTC)
    app = create_app(feed_config)
    account, loc = pro_location(app, "quiet@stad.be")
    publish_before(app, dirs)
    subscribe(app, account, loc, types=["work.started"], webhook_url=good.url(), quiet_start=23, quiet_end=7)
    publish(app, dirs["after"])
    counts = round_(app)
    quiet = held_until_utc_hour != utc_hour
    assert (
        counts["webhook"] == 1 and counts["mail"] == (0 if quiet else 1) and counts["deferred"] == int(quiet)
    )
    if quiet:
        until = datetime(2026, 11, 16 + (utc_hour > 6), held_until_utc_hour, tzinfo=UTC)
        clock.now = until
        clock.advance(-1)
        assert round_(app)["mail"] == 0
        clock.advance(1)
        assert round_(app)["mail"] == 1
    assert round_(app)["mail"] == 0 and len(smtp_server.messages) == 1 and len(good.requests) == 1


def test_the_daily_digest_folds_the_days_mails_into_one(feed_config, dirs, smtp_server, good, clock):
    app = create_app(feed_config)
    account, loc = pro_location(app, "digest@stad.be")
    publish_before(app, dirs)
    subscribe(app, account, loc, digest=True, webhook_url=good.url())
    events = [e for e in publish(app, dirs["after"]) if e.location_id == loc["id"]]
    assert round_(app)["mail"] == 0 and len(good.requests) == len(events)  # webhooks at once
    later = [e for e in publish(app, dirs["later"]) if e.location_id == loc["id"]]
    assert round_(app)["mail"] == 0
    clock.now = datetime(2026, 11, 17, 5, 59, 59, tzinfo=UTC)  # 06:59:59 in Brussels
    assert round_(app)["mail"] == 0
    clock.now = datetime(2026, 11, 17, 6, 0, tzinfo=UTC)  # 07:00
    assert round_(app)["mail"] == 1 and round_(app)["mail"] == 0
    ((_rcpt, msg),) = smtp_server.messages
    total = len(events) + len(later)
    assert str(msg["Subject"]) == f"Daily digest for Centrum: {total} changes"
    text = msg.get_body(("plain",)).get_content()
    assert all(e.id in text for e in events + later)


def test_a_failing_webhook_is_retried_given_up_and_shown_with_retry_and_dismiss(
    feed_config, dirs, smtp_server, clock
):
    failing = Receiver(receivers.status(500))
    try:
        app = create_app(feed_config)
        account, loc = pro_location(app, "dead@stad.be")
        publish_before(app, dirs)
        subscribe(
            app,
            account,
            loc,
            types=["work.started", "detour.started"],
            email=False,
            webhook_url=failing.url(),
        )
        publish(app, dirs["after"])
        counts = round_(app)
        assert counts["failed"] == 1 and counts["deferred"] == 1  # the account's second webhook waits
        # the second row waits while the first fails (the account's turn), then fails on its own
        for _round in range(2 * MAX_ATTEMPTS):
            clock.advance(RETRY_DELAYS[-1])
            round_(app)
        conn = open_store(app)
        rows = conn.execute("SELECT * FROM change_deliveries ORDER BY event_id").fetchall()
        assert [r["attempts"] for r in rows] == [MAX_ATTEMPTS] * 2 and all(r["gave_up_at"] for r in rows)
        assert all("answered 500" in r["last_error"] for r in rows)
        attempts = len(failing.requests)
        assert attempts == 2 * MAX_ATTEMPTS
        clock.advance(3600)
        assert round_(app)["failed"] == 0 and len(failing.requests) == attempts  # given up: never again

        client = signed_in(app, account["id"])
        page = client.get("/dashboard/deliveries").get_data(as_text=True)
        assert page.count('data-testid="failed-delivery"') == 2 and "given up" in page
        assert "Deliveries" in page
        stranger = signed_in(app, pro_location(app, "stranger@stad.be")[0]["id"])
        key = {
            "csrf_token": CSRF,
            "subscription_id": rows[0]["subscription_id"],
            "event_id": rows[0]["event_id"],
            "channel": "webhook",
        }
        assert stranger.post("/dashboard/deliveries/retry", data=key).status_code == 302
        assert (
            conn.execute(
                "SELECT attempts FROM change_deliveries WHERE event_id = ?", (key["event_id"],)
            ).fetchone()[0]
            == MAX_ATTEMPTS
        )
        assert client.post("/dashboard/deliveries/retry", data=key).status_code == 302
        failing.answer = receivers.ok
        assert round_(app)["webhook"] == 1
        assert (
            client.post(
                "/dashboard/deliveries/dismiss", data={**key, "event_id": rows[1]["event_id"]}
            ).status_code
            == 302
        )
        page = client.get("/dashboard/deliveries").get_data(as_text=True)
        assert 'data-testid="no-failed"' in page
        clock.advance(3600)
        assert round_(app)["webhook"] == 0  # dismissed: never sent
        conn.close()
    finally:
        failing.close()


def test_an_account_without_alerts_moves_past_events_without_sending(feed_config, dirs, smtp_server, good):
    app = create_app(feed_config)
    account, loc = pro_location(app, "down@stad.be")
    publish_before(app, dirs)
    subscribe(app, account, loc, webhook_url=good.url())
    conn = open_store(app)
    conn.execute("UPDATE accounts SET plan = 'developer' WHERE id = ?", (account["id"],))
    publish(app, dirs["after"])
    assert round_(app) == {"new": 0, "mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    conn.execute("UPDATE accounts SET plan = 'pro' WHERE id = ?", (account["id"],))
    assert round_(app)["new"] == 0 and smtp_server.messages == [] and good.requests == []
    conn.close()


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"type": ["work.nope"], "email": "on"}, "unknown event type"),
        ({"email": "on"}, "choose at least one kind of change"),
        ({"type": ["work.started"]}, "choose e-mail, a webhook or both"),
        (
            {"type": ["work.started"], "email": "on", "quiet": "on", "quiet_start": "25", "quiet_end": "7"},
            "hour",
        ),
        (
            {"type": ["work.started"], "email": "on", "quiet": "on", "quiet_start": "7", "quiet_end": "7"},
            "different",
        ),
        ({"type": ["work.started"], "webhook_url": "http://user:pw@127.0.0.1/x"}, "without user name"),
    ],
)
def test_a_bad_change_alert_is_refused_without_a_write(feed_config, form, message):
    app = create_app(feed_config)
    account, loc = pro_location(app, "bad@stad.be")
    client = signed_in(app, account["id"])
    resp = client.post(f"/dashboard/locations/{loc['id']}/change-alert", data={"csrf_token": CSRF, **form})
    assert resp.status_code == 302
    page = client.get(resp.headers["Location"]).get_data(as_text=True)
    assert "Change alert not changed" in page and message in page
    conn = open_store(app)
    assert conn.execute("SELECT COUNT(*) FROM change_subscriptions").fetchone()[0] == 0
    conn.close()


def test_the_mail_unsubscribe_link_stops_the_mails_and_keeps_the_webhook(
    feed_config, dirs, smtp_server, good
):
    app = create_app(feed_config)
    account, loc = pro_location(app, "unsub@stad.be")
    publish_before(app, dirs)
    subscribe(app, account, loc, types=["work.started"], webhook_url=good.url())
    publish(app, dirs["after"])
    round_(app)
    msg = smtp_server.messages[0][1]
    link = re.search(r"http://urban.test(/dashboard/unsubscribe/\S+)", msg.get_body(("plain",)).get_content())
    assert str(msg["List-Unsubscribe"]).strip() == f"<http://urban.test{link.group(1)}>"
    anon = app.test_client()
    assert anon.get(link.group(1)).status_code == 200
    assert anon.post(link.group(1), data={"List-Unsubscribe": "One-Click"}).status_code == 200
    conn = open_store(app)
    row = conn.execute("SELECT email, webhook_url FROM change_subscriptions").fetchone()
    assert row["email"] == 0 and row["webhook_url"] == good.url()
    conn.close()
