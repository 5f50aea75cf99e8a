"""One account's alerts never hold up or break another's: every kind of hostile webhook receiver (slow, silent,
endless, compressed bombs, garbage, closing mid-way, never accepting) and every kind of bad event (header
characters in a location name, host names the IDNA codec refuses, look-ups that fail or never end, payloads a
template cannot use) fails that one delivery alone, within the webhook deadline and a few KiB read, while the
other account's mail and webhook are delivered in the same round. Failed deliveries are retried after the
retry delays and given up after the last attempt, visibly in the store; on SQLite and PostgreSQL. The
change alerts follow a recorded history (the demo, then NO2 above 40 at the point's station)."""

from __future__ import annotations

import shutil
import socket
import tracemalloc

import pytest

from app import create_app
from app.dashboard import delivery, run
from app.store.db import open_store, write

from . import receivers
from .alerting import Clock, Resolver, events_of, mails_to, recorded_history, subscriber
from .receivers import Receiver

DEADLINE = 2.0  # ALERT_WEBHOOK_TIMEOUT here: what a hostile receiver may hold a delivery, and a well-behaved
# one on a loaded machine stays far within


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def resolver():
    r = Resolver()
    yield r
    r.release.set()


@pytest.fixture(scope="module")
def recorded(snapshot_dir, engine, build_once) -> str:
    return recorded_history(snapshot_dir, engine, build_once)


@pytest.fixture
def make_app(config, clock, resolver, recorded, tmp_path):
    history = tmp_path / "history.sqlite"
    shutil.copy(recorded, history)

    def make(**overrides):
        return create_app(
            {
                **config,
                "HISTORY_URL": str(history),
                "ALERT_WEBHOOK_TIMEOUT": DEADLINE,
                "ALERT_WEBHOOK_ALLOW_PRIVATE": True,
                "WALL_CLOCK": clock,
                "WEBHOOK_RESOLVER": resolver,
                **overrides,
            }
        )

    return make


@pytest.fixture
def receiving():
    """``receiving(answer, tls=None)`` → a started :class:`Receiver`, closed after the test."""
    made = []

    def make(answer, **kwargs):
        made.append(Receiver(answer, **kwargs))
        return made[-1]

    yield make
    for rcv in made:
        rcv.close()


def evaluate(app) -> int:
    """The feed's events enqueued (:func:`tests.dashboard.alerting.record` derived them); the new rows."""
    return run.enqueue_changes(app)


def assert_delivered(app, account, receiver, smtp_server):
    """Every delivery of ``account`` was sent (mail and webhook, to ``receiver``) once, none left claimed."""
    rows = events_of(app, account["id"])
    assert rows and all(r["sent_at"] and r["claimed_at"] is None for r in rows)
    assert mails_to(smtp_server, account["email"]) == sum(r["channel"] == "mail" for r in rows)
    assert len(receiver.requests) == sum(r["channel"] == "webhook" for r in rows)


def channels(app, account) -> dict:
    """The account's one event's delivery rows by channel."""
    rows = events_of(app, account["id"])
    assert len({r["event_id"] for r in rows}) == 1
    return {r["channel"]: r for r in rows}


def assert_retrying(row, channel: str, clock: Clock):
    """``row`` failed its first attempt and waits for the first retry delay, unclaimed."""
    assert row["attempts"] == 1 and row["claimed_at"] is None and row["gave_up_at"] is None
    assert row["channel"] == channel and row["sent_at"] is None
    assert row["last_error"].startswith(f"{channel}: "), row["last_error"]
    assert row["next_attempt_at"] == clock.epoch + delivery.RETRY_DELAYS[0]


# -- every kind of hostile receiver -------------------------------------------------------------------------

HOSTILE = {
    # name: (answer, outcome of the hostile account's webhook: "sent" = a 2xx status line was enough)
    "never answers": (receivers.silent, "retry"),
    "stalls in the status line": (receivers.stalls_in_status_line, "retry"),
    "100 Continue with headers a byte at a time": (receivers.slow_interim, "retry"),
    "100 Continue without end": (receivers.endless_interim, "retry"),
    "200 with headers a byte at a time": (receivers.slow_headers, "sent"),
    "200 with a body a byte at a time": (receivers.slow_body, "sent"),
    "200 with an endless chunked body": (receivers.endless_body, "sent"),
    "200 with a gzip bomb": ("gzip", "sent"),
    "200 with a brotli bomb": ("br", "sent"),
    "garbage": (receivers.garbage, "retry"),
    "closes mid-way": (receivers.closes_mid_way, "retry"),
    "closes at once": (receivers.closes_at_once, "retry"),
    "answers 500": (receivers.status(500), "retry"),
    "redirects": (receivers.status(302), "retry"),
    "https, never speaks TLS": (receivers.silent, "retry"),
}


@pytest.mark.timeout(
    90, func_only=True
)  # before the deadline existed, the trickling receivers held the round for ever
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_receiver_fails_alone_within_the_deadline(case, make_app, receiving, smtp_server, clock):
    answer, outcome = HOSTILE[case]
    hostile = receiving(receivers.bomb(answer) if isinstance(answer, str) else answer)
    good = receiving(receivers.ok)
    url = hostile.url().replace("http://", "https://") if case.startswith("https") else hostile.url()
    app = make_app()
    bad_account, _ = subscriber(app, "hostile@stad.be", webhook=url)  # first in line
    good_account, _ = subscriber(app, "good@stad.be", webhook=good.url())
    assert evaluate(app) == 4

    tracemalloc.start()
    try:
        counts, _next = run.deliver_due(app)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert_delivered(app, good_account, good, smtp_server)
    rows = channels(app, bad_account)
    assert rows["mail"]["sent_at"] and mails_to(smtp_server, "hostile@stad.be") == 1
    hook = rows["webhook"]
    if outcome == "sent":
        assert hook["sent_at"] and hook["last_error"] is None and hook["claimed_at"] is None
        assert counts == {"mail": 2, "webhook": 2, "failed": 0, "deferred": 0}
    else:
        assert_retrying(hook, "webhook", clock)
        assert counts == {"mail": 2, "webhook": 1, "failed": 1, "deferred": 0}
    # the answer was never read whole, let alone inflated: a few KiB, not the bomb's 64 MiB
    assert peak < 16 * 1024 * 1024, f"delivery held {peak} bytes"
    if answer in (
        receivers.slow_headers,
        receivers.slow_body,
        receivers.endless_body,
        receivers.slow_interim,
    ):
        assert hostile.hung_up.wait(30), "the receiver was still being read"  # it finds the client gone


@pytest.mark.timeout(90, func_only=True)
def test_a_receiver_that_never_accepts_fails_alone(make_app, receiving, smtp_server, clock):
    """A full accept queue: the kernel drops the SYNs and the connect waits (a firewalled host)."""
    backlog = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = backlog.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    good = receiving(receivers.ok)
    app = make_app()
    try:
        bad_account, _ = subscriber(app, "hostile@stad.be", webhook=f"http://127.0.0.1:{port}/hook")
        good_account, _ = subscriber(app, "good@stad.be", webhook=good.url())
        counts = run.run_alerts(app)
    finally:
        for s in [*fillers, backlog]:
            s.close()
    assert counts["new"] == 4 and counts["failed"] == 1
    assert_delivered(app, good_account, good, smtp_server)
    assert_retrying(channels(app, bad_account)["webhook"], "webhook", clock)


# -- every kind of bad event --------------------------------------------------------------------------------

BAD_EVENTS = {
    # name: (subscriber keywords, the channel that fails; "mail?" = fails unless the mail path cleans headers)
    "U+2028 in the location name": ({"name": "Centrum\u2028Bcc: x@evil.example"}, "mail?"),
    "U+2029 in the location name": ({"name": "Centrum\u2029Bcc: x@evil.example"}, "mail?"),
    "U+0085 in the location name": ({"name": "Centrum\x85Bcc: x@evil.example"}, "mail?"),
    "a host label over 63 characters": (
        {"stored_webhook": "http://" + "a" * 64 + ".example/hook"},
        "webhook",
    ),
    "a host with an empty label": ({"stored_webhook": "http://hooks..example/hook"}, "webhook"),
    "U+2028 in the host": ({"stored_webhook": "http://hooks\u2028x.example/hook"}, "webhook"),
    "a host that does not resolve": ({"stored_webhook": "http://nx.example/hook"}, "webhook"),
    "a host whose look-up never ends": ({"stored_webhook": "http://hang.example/hook"}, "webhook"),
    "a port out of range": ({"stored_webhook": "http://127.0.0.1:70000/hook"}, "webhook"),
    "a scheme that is not http(s)": ({"stored_webhook": "gopher://127.0.0.1/hook"}, "webhook"),
}


@pytest.mark.parametrize("case", list(BAD_EVENTS))
def test_a_bad_event_fails_alone(case, make_app, receiving, smtp_server, clock):
    fields, channel = BAD_EVENTS[case]
    own, good = receiving(receivers.ok), receiving(receivers.ok)
    app = make_app()
    bad_account, _ = subscriber(app, "bad@stad.be", webhook=own.url(), **fields)
    good_account, _ = subscriber(app, "good@stad.be", webhook=good.url())
    run.run_alerts(app)

    assert_delivered(app, good_account, good, smtp_server)
    rows = channels(app, bad_account)
    if channel == "mail?" and rows["mail"]["sent_at"]:  # the mail path cleaned the header: one clean line
        [(rcpt, msg)] = [m for m in smtp_server.messages if "bad@stad.be" in m[0]]
        assert rcpt == ["bad@stad.be"] and "\n" not in str(msg["Subject"]) and msg["Bcc"] is None
        return
    assert_retrying(rows[channel.rstrip("?")], channel.rstrip("?"), clock)
    other = "webhook" if channel.startswith("mail") else "mail"
    assert rows[other]["sent_at"], "the event's other channel is still delivered"


@pytest.mark.parametrize("payload", ["not json", '{"location": {}}', "[]"])
def test_an_event_a_template_cannot_use_fails_alone(payload, make_app, receiving, smtp_server, clock):
    own, good = receiving(receivers.ok), receiving(receivers.ok)
    app = make_app()
    bad_account, _ = subscriber(app, "bad@stad.be", webhook=own.url())
    good_account, _ = subscriber(app, "good@stad.be", webhook=good.url())
    evaluate(app)
    conn = open_store(app)
    with write(conn):
        conn.execute(
            "UPDATE change_deliveries SET payload = ? WHERE subscription_id IN"
            " (SELECT id FROM change_subscriptions WHERE account_id = ?)",
            (payload, bad_account["id"]),
        )
    conn.close()
    run.deliver_due(app)
    assert_delivered(app, good_account, good, smtp_server)
    rows = channels(app, bad_account)
    assert_retrying(rows["mail"], "mail", clock)
    assert rows["webhook"]["sent_at"] and own.requests[0][1] == payload.encode()


# -- retries, giving up, taking turns -----------------------------------------------------------------------


def test_a_failing_event_is_retried_after_each_delay_then_given_up(
    make_app, store_backend, receiving, smtp_server, clock
):
    good = receiving(receivers.ok)
    app = make_app(**store_backend)
    bad_account, _ = subscriber(app, "bad@stad.be", stored_webhook="http://hooks..example/hook")
    good_account, _ = subscriber(app, "good@stad.be", webhook=good.url())
    run.run_alerts(app)
    assert_delivered(app, good_account, good, smtp_server)

    for attempt, delay in enumerate(delivery.RETRY_DELAYS, start=1):
        clock.advance(delay - 1)
        assert run.deliver_due(app)[0]["failed"] == 0, "retried before its delay"
        event = channels(app, bad_account)["webhook"]
        assert event["attempts"] == attempt
        clock.advance(1)
        counts, next_due = run.deliver_due(app)
        event = channels(app, bad_account)["webhook"]
        assert counts["failed"] == 1 and event["attempts"] == attempt + 1 and event["claimed_at"] is None
        assert "not a valid host name" in event["last_error"]
    assert event["attempts"] == delivery.MAX_ATTEMPTS and event["gave_up_at"] and next_due is None
    clock.advance(10 * delivery.RETRY_DELAYS[-1])
    assert run.deliver_due(app) == ({"mail": 0, "webhook": 0, "failed": 0, "deferred": 0}, None)
    assert channels(app, bad_account)["webhook"] == event
    # the mail went out once, at the first attempt; only the webhook was retried
    assert channels(app, bad_account)["mail"]["sent_at"] and mails_to(smtp_server, "bad@stad.be") == 1
    assert_delivered(app, good_account, good, smtp_server)


@pytest.mark.timeout(90, func_only=True)
def test_accounts_take_turns_and_a_failed_receiver_costs_one_deadline_per_round(
    make_app, receiving, smtp_server, clock
):
    hostile, good = receiving(receivers.silent), receiving(receivers.ok)
    app = make_app()
    types = ("work.started", "detour.started", "no2.above_eu")
    bad_account, _ = subscriber(app, "bad@stad.be", webhook=hostile.url(), types=types)
    good_account, _ = subscriber(app, "good@stad.be", webhook=good.url(), types=types)
    counts = run.run_alerts(app)
    per_account = counts["new"] // 4  # events per account (each goes by mail and by webhook)
    assert per_account >= 2, "the recorded history gives each account several events"

    # the failing account's other webhooks wait for the first retry delay; its mails go out
    assert counts == {
        "new": 4 * per_account,
        "mail": 2 * per_account,
        "webhook": per_account,
        "failed": 1,
        "deferred": per_account - 1,
    }
    assert hostile.connections == 1  # one deadline spent on the failing receiver, not several
    assert_delivered(app, good_account, good, smtp_server)
    hooks = [r for r in events_of(app, bad_account["id"]) if r["channel"] == "webhook"]
    assert sorted(r["attempts"] for r in hooks) == [0] * (per_account - 1) + [1]
    assert all(r["next_attempt_at"] == clock.epoch + delivery.RETRY_DELAYS[0] for r in hooks)


@pytest.mark.timeout(90, func_only=True)
def test_flask_alerts_run_enqueues_and_delivers_in_one_go(make_app, receiving, smtp_server, clock):
    """The cron form: ``flask alerts run`` over the derived feed, a silent receiver failing alone."""
    hostile, good = receiving(receivers.silent), receiving(receivers.ok)
    app = make_app()
    bad_account, _ = subscriber(app, "bad@stad.be", webhook=hostile.url())
    good_account, _ = subscriber(app, "good@stad.be", webhook=good.url())
    result = app.test_cli_runner().invoke(args=["alerts", "run"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "4 new events; sent 2 mails, 1 webhooks; 1 failed, 0 deferred"
    assert_delivered(app, good_account, good, smtp_server)
    assert_retrying(channels(app, bad_account)["webhook"], "webhook", clock)
