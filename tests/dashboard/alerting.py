"""Shared by the alert delivery tests: snapshot variants that make events, an injected wall clock and
resolver, counting mails."""

from __future__ import annotations

import socket
import threading
from datetime import UTC, datetime, timedelta

import pandas as pd

from app.store import accounts
from app.store.db import open_store, write
from app.store.saved_locations import add_location

POINT = (51.2194, 4.4025)  # Antwerp centre: station 42R801 nearest, running and planned works, detours
STATION = "42R801"
START = datetime(2026, 11, 16, 8, 0, tzinfo=UTC)


def variant(
    snapshot_dir,
    out,
    *,
    no2: float,
    running_work: str | None = None,
    new_detour: str | None = None,
    hours_later: int = 0,
    edit=None,
):
    """A copy of the demo snapshot with the station's last readings set to ``no2``, optionally one planned
    work switched to running, one detour duplicated under a new id, the readings and ``asOf`` moved
    ``hours_later``, and ``edit(layers)`` applied last; returns the loaded engine."""
    from geo.data.engine import Engine
    from geo.data.snapshot import read_snapshot, write_snapshot

    layers, manifest = read_snapshot(snapshot_dir)
    no2_layer = layers["no2"].copy()
    no2_layer.loc[no2_layer["station_id"] == STATION, "value"] = no2
    layers["no2"] = no2_layer
    if running_work:
        works = layers["works"].copy()
        works.loc[works["id"] == running_work, "status"] = "In uitvoering"
        layers["works"] = works
    if new_detour:
        detours = layers["detours"]
        copy = detours[detours["id"] == new_detour[0]].copy()
        copy["id"] = new_detour[1]
        layers["detours"] = pd.concat([detours, copy]).sort_values("id").reset_index(drop=True)
    as_of = pd.Timestamp(manifest["asOf"]) + pd.Timedelta(hours=hours_later)
    layers["no2"]["timestamp"] = layers["no2"]["timestamp"] + pd.Timedelta(hours=hours_later)
    if edit is not None:
        edit(layers)
    metas = {name: entry for name, entry in manifest["layers"].items()}
    write_snapshot(layers, metas, as_of.to_pydatetime(), out)
    return Engine.load(out)


class Clock:
    """The injected wall clock (``WALL_CLOCK``): delivery rounds and retry times run on it."""

    def __init__(self):
        self.now = START

    def __call__(self):
        return self.now

    def advance(self, seconds: float):
        self.now += timedelta(seconds=seconds)

    @property
    def epoch(self) -> int:
        return int(self.now.timestamp())


class Resolver:
    """``WEBHOOK_RESOLVER``: names under ``.example`` from a table; ``hang.example`` answers when released."""

    def __init__(self, table: dict[str, list[str]] | None = None):
        self.table = table or {}
        self.release = threading.Event()
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host == "hang.example":
            self.release.wait()
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.table[host]


def mails_to(smtp_server, address) -> int:
    return sum(address in rcpt for rcpt, _msg in smtp_server.messages)


# -- change alerts over a recorded history (the delivery tests) ---------------------------------------------


def record(history_url: str, *dirs) -> None:
    """Record snapshot directories, in order, in the history store at ``history_url``, and derive the feed of
    the :data:`POOL` locations (the first publish is their baseline)."""
    from app.history import changes as feed
    from app.history.store import open_store as open_history

    history = open_history(history_url)
    try:
        for path in dirs:
            assert history.record_dir(path).seq is not None
        feed.derive(history, [(i, *POINT) for i in POOL], start=1)
    finally:
        history.close()


#: location ids whose feed :func:`record` derives in advance (the n-th :func:`subscriber` of a store gets the
#: n-th), so that each test need not derive it again
POOL = [f"loc_isolat{k:06d}" for k in range(4)]


def subscriber(app, email, *, name="Centrum", webhook="", types=("no2.above_eu",), stored_webhook=None):
    """An account with one location at ``POINT`` (the next id of :data:`POOL`) and its change alert (mail on,
    ``types``), starting at the feed's beginning; ``stored_webhook`` is written to the store as it is, past
    the check made when saving (a row saved before that check existed). Returns (account, location)."""
    from app.dashboard import changealerts

    conn = open_store(app)
    try:
        account, _key = accounts.create_account(conn, email, "pro")
        loc = add_location(conn, account["id"], name="placeholder", address="", lat=POINT[0], lng=POINT[1])
        taken = conn.execute("SELECT COUNT(*) FROM locations").fetchone()[0]
        with write(conn):  # stored as is: a name saved before today's checks reaches the mail path unchanged
            conn.execute(
                "UPDATE locations SET name = ?, id = ? WHERE id = ?", (name, POOL[taken - 1], loc["id"])
            )
        loc = {**loc, "id": POOL[taken - 1], "name": name}
        with app.app_context():
            changealerts.save(conn, account["id"], loc, types=types, email=True, webhook_url=webhook, head=0)
        if stored_webhook is not None:
            with write(conn):
                conn.execute(
                    "UPDATE change_subscriptions SET webhook_url = ?, webhook_secret = 'whsec_x'"
                    " WHERE account_id = ?",
                    (stored_webhook, account["id"]),
                )
        return account, loc
    finally:
        conn.close()


def events_of(app, account_id) -> list[dict]:
    """The delivery rows of an account's change alerts, by event and channel."""
    conn = open_store(app)
    try:
        return [
            {k: r[k] for k in r.keys()}
            for r in conn.execute(
                "SELECT d.* FROM change_deliveries d JOIN change_subscriptions s ON s.id = d.subscription_id"
                " WHERE s.account_id = ? ORDER BY d.feed_pos, d.channel",
                (account_id,),
            )
        ]
    finally:
        conn.close()


def recorded_history(snapshot_dir, engine, build_once) -> str:
    """A history store (its URL) holding two publishes (:func:`tests.dashboard.changefeed.variant_dirs`): the
    demo at NO2 20, then two hours later NO2 55 (``no2.above_eu`` at ``POINT``), a planned work running and a
    new detour; the feed of the :data:`POOL` locations derived. Built once per run for every module and xdist
    worker (``build_once``): read-only, a test copies the file to write."""
    from .changefeed import shared_variant_dirs

    dirs = shared_variant_dirs(snapshot_dir, engine, build_once)
    root = build_once(
        "recorded-history", lambda root: record(str(root / "history.sqlite"), dirs["before"], dirs["after"])
    )
    return str(root / "history.sqlite")
