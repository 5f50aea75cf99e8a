"""The examples of the OpenAPI document: real answers of the demo, recorded into ``app/api/openapi_examples.json``.

Each example is one request declared below (:data:`OPERATIONS`: per ``operationId``, the calls whose answers
show its responses; :data:`ERRORS`: per error code, one call that gets it) sent to the app over the demo
snapshot (``make snapshot``: ``DEMO_AS_OF``, ``DEFAULT_SEED``) with its clock, a few demo accounts and their
saved locations. :func:`record` returns what :mod:`app.api.openapi` attaches to the document: each answer's
status, media type and body, and the request that got it. A few errors no request to the in-process app can
provoke (gunicorn's 414 and 431, an unexpected 500, a stale upstream's 502) are the app's own error response to
the exception the server raises then (:func:`app.server.worker.answer`, as gunicorn answers them).

Regenerate after a change of an answer, or after declaring the examples of a new operation::

    .venv/bin/python -m app.docs_ui.examples --write

``tests/app/test_openapi_examples.py`` records them again and fails when the committed file differs, when an
operation's response has no example, or when an example does not match its schema (docs/api.md → Examples).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qsl, urlsplit

from app.api.openapi import EXAMPLES_FILE

#: the ``requestId`` of every 5xx example (a live one is a fresh id per request)
REQUEST_ID = "5f0c1e2d3b4a49e8a7c6d5e4f3a2b1c0"
#: the demo's point: Antwerp, Meir (in the low-emission zone, near works and detours)
LAT, LNG = "51.2194", "4.4025"
POINT = f"lat={LAT}&lng={LNG}"
GEOJSON = (("Accept", "application/geo+json"),)
#: wall clock of the recording: one hour after the demo snapshot's time (the data clock is the snapshot's)
WALL_AFTER_SNAPSHOT = timedelta(hours=1)


@dataclass(frozen=True)
class Call:
    """One request to the demo app; its answer becomes an example.

    ``key`` names a demo account (:data:`ACCOUNTS`) whose key is sent as ``Authorization: Bearer``, or None;
    ``settings`` run it on an app of its own with these settings on top of the demo's; ``times`` sends it
    that often and keeps the last answer; ``members`` keeps only these members of the answer (one too long to
    show); ``fault`` instead renders the error the server raises in a case no
    request can provoke in process.
    """

    summary: str
    path: str  # under /api/v1, with its query string
    method: str = "GET"
    key: str | None = "pro"
    headers: tuple[tuple[str, str], ...] = ()
    json: object = None
    data: bytes | None = None
    settings: tuple[tuple[str, object], ...] = ()
    times: int = 1
    members: tuple[str, ...] = ()
    fault: Callable[[], BaseException] | None = field(default=None, compare=False)

    def request(self) -> dict:
        """What the example shows of the request."""
        url = urlsplit(self.path)
        out: dict = {"method": self.method, "path": "/api/v1" + url.path}
        if url.query:
            out["query"] = dict(parse_qsl(url.query, keep_blank_values=True))
        headers = dict(self.headers)
        if self.key is not None:
            headers["Authorization"] = "Bearer uc_live_…"
        if headers:
            out["headers"] = headers
        if self.json is not None:
            out["body"] = self.json
        return out


#: demo accounts by name: (plan, saved locations as (id, name, address, lat, lng, label, primary))
ACCOUNTS = {
    "pro": (
        "pro",
        (
            ("loc_stadhuis", "Stadhuis", "Grote Markt 1, 2000 Antwerpen", 51.2213, 4.3997, "kantoor", True),
            ("loc_meir", "Meir", "Meir 78, 2000 Antwerpen", 51.2194, 4.4025, "winkelstraat", False),
        ),
    ),
    "enterprise": ("enterprise", ()),
    "dashboard": ("dashboard", ()),
    "spent": ("developer", ()),  # today's quota used up
}

#: the examples of each operation (by ``operationId``): its requests and answers. A new operation adds its
#: entry here, then ``python -m app.docs_ui.examples --write``.
OPERATIONS: dict[str, dict[str, Call]] = {
    "listLocations": {
        "locations": Call("The caller's two saved locations", "/locations"),
        "geojson": Call("The same as GeoJSON", "/locations", headers=GEOJSON),
    },
    "disruptions": {
        "point": Call("A point in Antwerp (Meir)", f"/disruptions?{POINT}"),
        "savedLocation": Call("A saved location", "/disruptions?locationId=loc_stadhuis"),
        "geojson": Call("The point as GeoJSON", f"/disruptions?{POINT}", headers=GEOJSON),
        "asOf": Call(
            "The answer as it was at a past instant (Enterprise)",
            f"/disruptions?{POINT}&asOf=2026-11-16T07:30:00Z",
            key="enterprise",
        ),
    },
    "airQuality": {
        "point": Call("A point in Antwerp (Meir), Dutch texts", f"/air-quality?{POINT}"),
        "english": Call(
            "The same point, English texts", f"/air-quality?{POINT}", headers=(("Accept-Language", "en"),)
        ),
        "geojson": Call("The point as GeoJSON", f"/air-quality?{POINT}", headers=GEOJSON),
    },
    "briefing": {
        "point": Call("A point in Antwerp (Meir), Dutch texts", f"/briefing?{POINT}"),
        "french": Call(
            "A saved location, French texts",
            "/briefing?locationId=loc_stadhuis",
            headers=(("Accept-Language", "fr-BE, fr;q=0.9"),),
        ),
    },
    "listLocationChanges": {
        "events": Call(
            "The first events of a saved location (the next page: since=nextCursor)",
            "/locations/loc_meir/changes?limit=2",
        ),
        "nothingNew": Call(
            "A poll with nothing new: no event, not counted against the quota",
            "/locations/loc_meir/changes?since={head:loc_meir}",
        ),
    },
    "listChanges": {
        "events": Call("The first events of all the caller's saved locations", "/changes?limit=3"),
    },
    "historyAirQuality": {
        "point": Call(
            "Hourly NO2 at a point over six hours (Enterprise)",
            f"/history/air-quality?{POINT}&from=2026-11-16T00:00:00Z&to=2026-11-16T06:00:00Z",
            key="enterprise",
        ),
        "csv": Call(
            "The same as CSV",
            f"/history/air-quality?{POINT}&from=2026-11-16T00:00:00Z&to=2026-11-16T06:00:00Z",
            key="enterprise",
            headers=(("Accept", "text/csv"),),
        ),
    },
    "historyWorks": {
        "point": Call(
            "The first page of two works near a point, with their change logs (Enterprise)",
            f"/history/works?{POINT}&from=2026-11-16T00:00:00Z&limit=2",
            key="enterprise",
        ),
        "geojson": Call(
            "One work as GeoJSON",
            f"/history/works?{POINT}&from=2026-11-16T00:00:00Z&limit=1",
            key="enterprise",
            headers=GEOJSON,
        ),
        "csv": Call(
            "Two works as CSV (a row per change)",
            f"/history/works?{POINT}&from=2026-11-16T00:00:00Z&limit=2",
            key="enterprise",
            headers=(("Accept", "text/csv"),),
        ),
    },
    "historyDetours": {
        "point": Call(
            "The detours that hit a point (Enterprise)",
            f"/history/detours?{POINT}&from=2026-11-16T00:00:00Z&limit=2",
            key="enterprise",
        ),
        "csv": Call(
            "The same as CSV",
            f"/history/detours?{POINT}&from=2026-11-16T00:00:00Z&limit=2",
            key="enterprise",
            headers=(("Accept", "text/csv"),),
        ),
    },
    "signup": {
        "signup": Call("A new address", "/signup", "POST", key=None, json={"email": "you@example.be"}),
    },
    "openapi": {
        "document": Call(
            "This document (its first members)", "/openapi.json", key=None, members=("openapi", "servers")
        ),
    },
}


def _mail_down() -> tuple:
    return (("MAIL_BACKEND", "smtp"), ("MAIL_HOST", "127.0.0.1"), ("MAIL_PORT", 9), ("MAIL_SECURITY", "none"))


def _uri_too_long():
    from gunicorn.http import errors

    return errors.LimitRequestLine(5000, 4094)


def _headers_too_large():
    from gunicorn.http import errors

    return errors.LimitRequestHeaders("limit request headers fields")


def _stale_upstream():
    from datetime import datetime, timezone

    from app.sources.freshness import Stale, stale_error

    retrieved = datetime(2026, 11, 16, 5, 40, tzinfo=timezone.utc)
    return stale_error([Stale("works", "gipod", retrieved, 4800.0, 3600.0)])


def _unexpected():
    return RuntimeError("an unexpected failure")


AS_OF = f"/briefing?{POINT}&asOf="
#: one example per error code: the request that gets it (shown on every response of its status)
ERRORS: dict[str, Call] = {
    "missing_target": Call("No locationId and no lat/lng", "/disruptions"),
    "invalid_coordinates": Call("lat is not a number", "/air-quality?lat=51,2194&lng=4.4025"),
    "ambiguous_target": Call("Both locationId and lat/lng", f"/briefing?locationId=loc_stadhuis&{POINT}"),
    "invalid_request": Call(
        "A body that is not JSON", "/signup", "POST", key=None, data=b"email=you@example.be"
    ),
    "invalid_email": Call("Not an e-mail address", "/signup", "POST", key=None, json={"email": "you@"}),
    "invalid_as_of": Call("asOf without an offset", AS_OF + "2026-11-10T08:00:00", key="enterprise"),
    "missing_key": Call("No Authorization header", f"/disruptions?{POINT}", key=None),
    "invalid_key": Call(
        "An unknown key",
        f"/disruptions?{POINT}",
        key=None,
        headers=(("Authorization", "Bearer uc_live_0000000000000000000000000000000000000000"),),
    ),
    "plan_required": Call("A plan without API access", f"/disruptions?{POINT}", key="dashboard"),
    "location_not_found": Call("Not a location of this account", "/briefing?locationId=loc_elsewhere"),
    "not_found": Call("No such resource", "/weather?lat=51.2194&lng=4.4025"),
    "method_not_allowed": Call("DELETE on a read-only resource", "/locations", "DELETE"),
    "not_acceptable": Call(
        "A media type the resource does not offer", f"/briefing?{POINT}", headers=(("Accept", "text/csv"),)
    ),
    "payload_too_large": Call(
        "A body over 16 KiB", "/signup", "POST", key=None, json={"email": "a" * 17000 + "@example.be"}
    ),
    "uri_too_long": Call("A request line over 4094 bytes", f"/disruptions?{POINT}", fault=_uri_too_long),
    "outside_service_area": Call("A point in Paris", "/air-quality?lat=48.8566&lng=2.3522"),
    "as_of_in_future": Call("asOf after now", AS_OF + "2026-11-17T08:00:00Z", key="enterprise"),
    "as_of_out_of_window": Call(
        "asOf before the first recorded snapshot", AS_OF + "2026-11-01T08:00:00Z", key="enterprise"
    ),
    "quota_exceeded": Call("The 101st call of a Developer key today", f"/disruptions?{POINT}", key="spent"),
    "rate_limited": Call(
        "A second sign-up request within the per-IP limit's window (here 1 per hour)",
        "/signup",
        "POST",
        key=None,
        json={"email": "you@example.be"},
        settings=(("SIGNUP_LIMIT_PER_IP", "1 per hour"),),
        times=2,
    ),
    "headers_too_large": Call(
        "Over 50 header fields, or one over 8190 bytes", f"/disruptions?{POINT}", fault=_headers_too_large
    ),
    "internal_error": Call(
        "An unexpected failure (logged under requestId)", f"/disruptions?{POINT}", fault=_unexpected
    ),
    "upstream_error": Call(
        "GIPOD failing past its freshness limit", f"/disruptions?{POINT}", fault=_stale_upstream
    ),
    "service_unavailable": Call(
        "The mail server cannot be reached",
        "/signup",
        "POST",
        key=None,
        json={"email": "you@example.be"},
        settings=_mail_down(),
    ),
    "foreign_cursor": Call(
        "The cursor of another location's feed", "/locations/loc_meir/changes?since={cursor:loc_stadhuis}"
    ),
    "cursor_expired": Call(
        "A cursor of events no longer kept (here: of another history store)",
        "/locations/loc_meir/changes?since={stale:loc_meir}",
    ),
    "invalid_window": Call(
        "A history window without a time", f"/history/works?{POINT}&from=2026-11-10", key="enterprise"
    ),
    "invalid_cursor": Call(
        "A cursor this API did not give",
        f"/history/works?{POINT}&from=2026-11-10T00:00:00Z&cursor=page2",
        key="enterprise",
    ),
    "window_too_long": Call(
        "More than 366 days in one call (on a service keeping 800 days)",
        f"/history/air-quality?{POINT}&from=2025-11-01T00:00:00Z&to=2026-11-16T00:00:00Z",
        key="enterprise",
        settings=(("HISTORY_DAYS", 800),),
    ),
    "window_out_of_range": Call(
        "A window starting more than 365 days back",
        f"/history/works?{POINT}&from=2025-01-01T00:00:00Z",
        key="enterprise",
    ),
    "history_unavailable": Call(
        "The history store cannot be read",
        AS_OF + "2026-11-16T07:30:00Z",
        key="enterprise",
        settings=(("HISTORY_URL", "postgresql://127.0.0.1:9/history?connect_timeout=2"),),
    ),
}


#: the change feed's id in the examples' history store (a live store's is random)
FEED_ID = "examples"


def reference_dir() -> str:
    """The published reference files: ``URBAN_REFERENCE_DIR``, else ``shared/data`` beside the project."""
    return os.environ.get("URBAN_REFERENCE_DIR") or str(
        Path(__file__).resolve().parents[2].parent / "shared" / "data"
    )


def _with_cursors(path: str, client, headers: dict) -> str:
    """``path`` with its cursor placeholders filled: ``{head:<location>}`` the location feed's newest
    cursor (asked of the app), ``{cursor:<location>}`` a cursor of that location's feed,
    ``{stale:<location>}`` one made by another store."""
    import re

    from app.history.changes import encode_cursor

    def fill(match):
        kind, location = match.group(1), match.group(2)
        if kind == "head":
            url = f"/api/v1/locations/{location}/changes?limit=500"
            while True:
                page = client.get(url, headers=headers).get_json()
                if not page["hasMore"]:
                    return page["nextCursor"]
                url = f"/api/v1/locations/{location}/changes?limit=500&since={page['nextCursor']}"
        return encode_cursor(location, 0, FEED_ID if kind == "cursor" else "another-store")

    return re.sub(r"\{(head|cursor|stale):(\w+)\}", fill, path)


class Demo:
    """Apps over the demo engine on instance folders under ``workdir``, one per set of settings, each with
    the demo accounts (keys by account name) and the snapshot recorded in its history store."""

    def __init__(self, engine, snapshot_dir, workdir):
        self.engine, self.snapshot_dir, self.workdir = engine, Path(snapshot_dir), Path(workdir)
        self.apps: dict[tuple, tuple] = {}

    def app(self, settings: tuple):
        if settings not in self.apps:
            self.apps[settings] = self._build(dict(settings), self.workdir / f"app{len(self.apps)}")
        return self.apps[settings]

    def _build(self, settings: dict, folder: Path):
        from app import create_app
        from app.history.store import open_store as open_history
        from app.store import accounts, usage
        from app.store.db import open_store
        from app.store.plans import PLANS
        from app.store.saved_locations import add_location

        wall = self.engine.as_of + WALL_AFTER_SNAPSHOT
        history = str(folder / "history.sqlite")
        config = {
            "TESTING": True,
            "ENGINE": self.engine,
            "INSTANCE_PATH": str(folder / "instance"),
            "SECRET_KEY": "examples",
            "CLOCK": "snapshot",
            "WALL_CLOCK": lambda: wall,
            "DATA_DIR": str(self.snapshot_dir),
            "HISTORY_URL": history,
            "MAIL_BACKEND": "outbox",
            "MAIL_TIMEOUT": 2.0,
            **settings,
        }
        app = create_app(config)
        store = open_history(history)
        if not settings:
            self._day_before(store, folder)
        store.record_dir(self.snapshot_dir)
        store.close()
        keys = {}
        conn = open_store(app)
        for name, (plan, places) in ACCOUNTS.items():
            row, keys[name] = accounts.create_account(conn, f"{name}@example.be", plan)
            for place_id, place, address, lat, lng, label, primary in places:
                add_location(
                    conn,
                    row["id"],
                    name=place,
                    address=address,
                    lat=lat,
                    lng=lng,
                    label=label,
                    is_primary=primary,
                    location_id=place_id,
                )
            quota = PLANS[plan].daily_quota
            if name == "spent" and quota:
                for _ in range(quota):
                    usage.admit(conn, row["id"], usage.day_of(wall), quota)
        conn.close()
        if not settings:
            self._changes(history)
        return app, keys

    def _day_before(self, store, folder: Path) -> None:
        """Record the simulated refresh one day before the demo snapshot (docs/history.md: the demo's
        simulated history), so that history and change-feed examples have a past."""
        from app.history.simulate import SimulatedHistory

        sim = SimulatedHistory(reference_dir(), end=self.engine.as_of, days=1, cadence_min=24 * 60)
        sim.write_at(sim.instants()[0], folder / "day-before")
        store.record_dir(folder / "day-before")

    def _changes(self, history: str) -> None:
        """Derive the change feed of the demo accounts' locations over the two recorded publishes (a fixed
        feed id, so that the cursors shown are the same at every recording)."""
        from app.history import changes as feed
        from app.history.store import open_store as open_history

        places = [(p[0], p[3], p[4]) for _plan, ps in ACCOUNTS.values() for p in ps]
        store = open_history(history)
        try:
            feed.ensure_tables(store, feed_id=FEED_ID)
            feed.derive(store, places, start=1)
        finally:
            store.close()

    def answer(self, call: Call) -> dict:
        """The example of ``call``: its request, the answer's status, media type and body."""
        app, keys = self.app(call.settings)
        path = call.path
        if call.fault is not None:
            from app.server.worker import answer, error_for
            from app.web.errors import ApiError

            fault = call.fault()
            response = answer(app, fault if isinstance(fault, ApiError) else error_for(fault), "127.0.0.1")
        else:
            headers = dict(call.headers)
            if call.key is not None:
                headers["Authorization"] = f"Bearer {keys[call.key]}"
            client = app.test_client()
            path = _with_cursors(call.path, client, headers)
            for _ in range(call.times):
                response = client.open(
                    "/api/v1" + path,
                    method=call.method,
                    headers=headers,
                    json=call.json,
                    data=call.data,
                    content_type="text/plain" if call.data is not None else None,
                )
        if response.mimetype == "text/csv":
            body = response.get_data(as_text=True)
        else:
            body = json.loads(response.get_data())
        if call.members:
            body = {name: body[name] for name in call.members}
        if isinstance(body, dict) and "requestId" in body:
            body["requestId"] = REQUEST_ID
        request = call.request()
        if path != call.path:
            request["query"] = dict(parse_qsl(urlsplit(path).query, keep_blank_values=True))
        return {
            "summary": call.summary,
            "request": request,
            "status": response.status_code,
            "mediaType": response.mimetype,
            "value": body,
        }


def record(engine, snapshot_dir, workdir) -> dict:
    """Every example: ``{"operations": {operationId: {name: example}}, "errors": {code: example}}``."""
    demo = Demo(engine, snapshot_dir, workdir)
    return {
        "operations": {
            op: {name: demo.answer(call) for name, call in calls.items()} for op, calls in OPERATIONS.items()
        },
        "errors": {code: demo.answer(call) for code, call in ERRORS.items()},
    }


def dumps(examples: dict) -> str:
    """The file's text: declared order (the interactive docs show each response's first example), the answers'
    members in their order, two-space indent, UTF-8, final newline."""
    return json.dumps(examples, ensure_ascii=False, indent=2) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m app.docs_ui.examples", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--write", action="store_true", help=f"write {EXAMPLES_FILE.name} (default: check it)"
    )
    parser.add_argument(
        "--reference",
        default=os.environ.get("URBAN_REFERENCE_DIR", "../shared/data"),
        help="the published reference files (default: $URBAN_REFERENCE_DIR or ../shared/data)",
    )
    args = parser.parse_args(argv)
    import geo
    from geo.data.publish import build_snapshot

    with tempfile.TemporaryDirectory(prefix="urban-examples-") as tmp:
        snapshot = Path(tmp) / "snapshot"
        build_snapshot(snapshot, args.reference)
        text = dumps(record(geo.load(snapshot), snapshot, Path(tmp) / "apps"))
    if args.write:
        EXAMPLES_FILE.write_text(text, encoding="utf-8")
        print(f"wrote {EXAMPLES_FILE}")
        return 0
    same = EXAMPLES_FILE.is_file() and EXAMPLES_FILE.read_text(encoding="utf-8") == text
    print(f"{EXAMPLES_FILE} is {'up to date' if same else 'out of date: run with --write'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
