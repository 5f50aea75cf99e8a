"""Change alerts start going out while the enqueue still makes rows (issue 27, speed): the enqueue commits its
rows page by page and wakes the delivery worker after each; a round claims its next rows while others are being
sent. Each event still goes once: across pages, across a crash between pages and a restart, with a receiver
that fails alone.

The locations, subscriptions and events are the delivery bench's (:mod:`bench.bench_delivery`: no engine, one
``work.appeared`` event per location), posted to a real local receiver."""

from __future__ import annotations

import json
import threading

import pytest

from app.dashboard import changealerts, changedelivery, run
from app.store import accounts
from app.store.db import open_store, write
from bench.bench_delivery import publish, subscribed_app

from . import receivers
from .receivers import Receiver

pytestmark = pytest.mark.timeout(120)

LOCATIONS = 7
PAGE = 2  # events per page: 4 pages for 7 locations
#: seconds the enqueue waits for the worker's first POST before reading its next page (never reached when the
#: worker starts on the first page; a bound, not a measurement)
WAIT = 30


@pytest.fixture
def good():
    receiver = Receiver(receivers.ok)
    yield receiver
    receiver.close()


@pytest.fixture
def paged(monkeypatch):
    monkeypatch.setattr(changealerts, "PAGE", PAGE)
    monkeypatch.setattr(changedelivery, "BATCH", 2)  # several claims in a round, made while POSTs are out
    monkeypatch.setattr(changedelivery, "SENDERS", 2)


def posted_ids(receiver: Receiver) -> list[str]:
    return sorted(json.loads(body)["id"] for _head, body in receiver.requests)


def rows(app) -> list:
    conn = open_store(app)
    try:
        return conn.execute(
            "SELECT event_id, sent_at, attempts FROM change_deliveries ORDER BY event_id"
        ).fetchall()
    finally:
        conn.close()


def positions(app) -> set[int]:
    conn = open_store(app)
    try:
        return {r[0] for r in conn.execute("SELECT after_pos FROM change_subscriptions")}
    finally:
        conn.close()


def test_the_first_post_leaves_before_the_enqueue_reads_its_second_page(tmp_path, good, paged, monkeypatch):
    app, ids = subscribed_app(tmp_path, LOCATIONS, good.url())
    publish(app, ids)
    events = [f"ev_{i:024x}" for i in range(LOCATIONS)]
    reads, posted_before = [], []
    events_since = changealerts._events_since

    def next_page(history, after, limit):
        if reads:  # a later page: the worker has the committed pages already
            posted_before.append(good.arrived.wait(WAIT))
        reads.append(after)
        return events_since(history, after, limit)

    monkeypatch.setattr(changealerts, "_events_since", next_page)
    hook = run.AlertHook()
    try:
        hook(app, None)  # what the refresher runs after a publish
    finally:
        hook.close()  # the worker delivers what is due, then stops

    assert len(reads) == 4 and posted_before == [True, True, True]
    assert posted_ids(good) == events  # each event once
    assert [r["event_id"] for r in rows(app)] == events
    assert all(r["sent_at"] is not None and r["attempts"] == 1 for r in rows(app))
    assert positions(app) == {LOCATIONS}  # through the feed's head


def test_a_crash_between_pages_repeats_nothing_and_loses_nothing(tmp_path, good, paged):
    app, ids = subscribed_app(tmp_path, LOCATIONS, good.url())
    publish(app, ids)
    events = [f"ev_{i:024x}" for i in range(LOCATIONS)]
    pages = []

    def crash_after_two_pages():
        pages.append(len(pages))
        if len(pages) == 2:
            raise RuntimeError("the refresher died")

    with pytest.raises(RuntimeError):
        run.enqueue_changes(app, on_rows=crash_after_two_pages)
    assert [r["event_id"] for r in rows(app)] == events[:4]  # the two committed pages
    assert positions(app) == {0}  # no subscription moved past the events

    counts, _next = run.deliver_due(app)  # the worker had been woken on those pages
    assert counts["webhook"] == 4 and posted_ids(good) == events[:4]

    assert run.enqueue_changes(app) == 3  # the restarted refresher: only the rows not made before
    counts, _next = run.deliver_due(app)
    assert counts["webhook"] == 3
    assert posted_ids(good) == events  # each event once
    assert all(r["sent_at"] is not None and r["attempts"] == 1 for r in rows(app))
    assert positions(app) == {LOCATIONS}
    assert run.enqueue_changes(app) == 0 and run.deliver_due(app)[0]["webhook"] == 0


def test_a_failing_receiver_gets_one_post_while_the_others_stream(tmp_path, good, paged):
    """Claims made while POSTs are out: a receiver that has not answered yet has one POST out at a time, so
    a failing one is met once in the round, and its other events wait for the first retry delay."""
    failing = Receiver(receivers.status(500))
    try:
        app, ids = subscribed_app(tmp_path, 2 * LOCATIONS, good.url())
        conn = open_store(app)
        try:  # the first LOCATIONS locations post to the failing receiver; the others are another account's
            other = accounts.create_account(conn, "other@antwerpen.be", "pro")[0]["id"]
            with write(conn):
                for table, column in (("locations", "id"), ("change_subscriptions", "location_id")):
                    conn.execute(
                        f"UPDATE {table} SET account_id = ? WHERE {column} > ?", (other, ids[LOCATIONS - 1])
                    )
                conn.execute(
                    "UPDATE change_subscriptions SET webhook_url = ? WHERE account_id <> ?",
                    (failing.url(), other),
                )
        finally:
            conn.close()
        publish(app, ids)
        run.enqueue_changes(app)
        counts, _next = run.deliver_due(app)
        assert counts == {"mail": 0, "webhook": LOCATIONS, "failed": 1, "deferred": LOCATIONS - 1}
        assert len(failing.requests) == 1
        assert posted_ids(good) == [f"ev_{i:024x}" for i in range(LOCATIONS, 2 * LOCATIONS)]
    finally:
        failing.close()
