"""Shared by the change-alert and calendar tests: a history store with recorded publishes of snapshot
variants (the demo, then NO2 above 40, a planned work running and a new detour), the feed derived for the
saved locations as the publish hook does, and the app configured to read that store."""

from __future__ import annotations

import json
from pathlib import Path

from app.history import changes as feed
from app.history.store import open_store as open_history
from app.store import accounts
from app.store.db import open_store
from app.store.saved_locations import add_location

from .alerting import POINT, variant


def variant_dirs(snapshot_dir, engine, tmp: Path) -> dict:
    """``{"before", "after", "later"}`` snapshot directories: the demo at NO2 20; two hours later NO2 55
    (a confirmed crossing of 40), a planned work running and a new detour ``99999``; two more hours later the
    planned work's dates moved (a rescheduling), another work cancelled and the detour gone. Plus the ids
    used."""
    from app.dashboard.figures import point_figures

    figures = point_figures(engine, *POINT, engine.as_of)
    works = figures["disruptions"]["construction"]
    planned = next(w["id"] for w in works if w["status"] != "In uitvoering")
    cancelled = next(w["id"] for w in works if w["id"] != planned)
    hit = figures["disruptions"]["transit"][0]["id"]
    variant(snapshot_dir, tmp / "before", no2=20.0)
    variant(
        snapshot_dir, tmp / "after", no2=55.0, running_work=planned, new_detour=(hit, "99999"), hours_later=2
    )

    def reschedule(layers):
        import pandas as pd

        works = layers["works"]
        moved = works["id"] == planned
        works.loc[moved, "end"] = works.loc[moved, "end"] + pd.Timedelta(days=30)
        works.loc[works["id"] == cancelled, "status"] = "Geannuleerd"

    variant(snapshot_dir, tmp / "later", no2=55.0, running_work=planned, hours_later=4, edit=reschedule)
    return {
        "before": tmp / "before",
        "after": tmp / "after",
        "later": tmp / "later",
        "work": planned,
        "cancelled": cancelled,
        "detour": "99999",
    }


def shared_variant_dirs(snapshot_dir, engine, build_once) -> dict:
    """:func:`variant_dirs`, written once per run for every module and xdist worker (read-only: the tests
    load and record them, never write into them)."""

    def build(root: Path) -> None:
        dirs = variant_dirs(snapshot_dir, engine, root)
        (root / "ids.json").write_text(json.dumps({k: dirs[k] for k in ("work", "cancelled", "detour")}))

    root = build_once("change-variants", build)
    ids = json.loads((root / "ids.json").read_text())
    return {"before": root / "before", "after": root / "after", "later": root / "later", **ids}


def publish(app, path) -> list:
    """Record the snapshot at ``path`` in the app's history store and derive the feed for every saved
    location (what the refresher's hooks do after a publish); the new events."""
    history = open_history(app.config["HISTORY_URL"])
    conn = open_store(app)
    try:
        assert history.record_dir(path).seq is not None
        return [e for _p, e in feed.derive_saved(history, conn)]
    finally:
        conn.close()
        history.close()


def head(app) -> int:
    history = open_history(app.config["HISTORY_URL"])
    try:
        feed.ensure_tables(history)
        return feed.head(history)
    finally:
        history.close()


def pro_location(app, email: str, *, name: str = "Centrum", plan: str = "pro"):
    """(account, location) made through the store functions."""
    conn = open_store(app)
    try:
        account, _key = accounts.create_account(conn, email, plan)
        loc = add_location(conn, account["id"], name=name, address="", lat=POINT[0], lng=POINT[1])
        return account, loc
    finally:
        conn.close()
