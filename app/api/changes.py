"""The change feeds: ``GET /locations/{id}/changes`` and ``GET /changes`` (every location of the caller).

Events in feed order with the next cursor (docs/changes.md). Any API plan may poll. A poll that returns no
event, and a poll answered ``304 Not Modified`` (``If-None-Match`` with the feed's ``ETag``), do not count
against the daily quota: admission counts the call, the view gives it back. Errors: 400 ``invalid_cursor``,
400 ``foreign_cursor``, 410 ``cursor_expired``, 400 ``invalid_request`` (``limit``), 404
``location_not_found``, 503 ``history_unavailable``.
"""

from __future__ import annotations

import hashlib

from flask import Blueprint, current_app, g, request
from werkzeug.http import parse_etags

from app.history import changes as feed
from app.history.asof import _discard_store, store
from app.history.errors import CursorExpired, ForeignCursor, HistoryUnavailable, InvalidCursor
from app.store import usage
from app.store.saved_locations import get_location, list_locations
from app.web.db import get_db
from app.web.errors import InvalidRequest, LocationNotFound

from .auth import require_api_access, settle
from .negotiation import data_response, negotiate

bp = Blueprint("changes", __name__)
bp.before_request(require_api_access)
bp.after_request(settle)

DEFAULT_LIMIT, MAX_LIMIT = 100, 500
_ready: set[str] = set()  # stores whose feed tables this process has made sure of
_ERRORS = {"malformed": InvalidCursor, "foreign": ForeignCursor, "expired": CursorExpired}


def _limit() -> int:
    raw = request.args.get("limit")
    if raw is None:
        return DEFAULT_LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return int(raw)


def _answer(scope: str, location_ids: list[str]):
    negotiate("changes")
    unknown = sorted(set(request.args) - {"since", "limit"})
    if unknown:  # a misspelt parameter (``sinse``) would otherwise replay the whole feed
        raise InvalidRequest(f"unknown query parameter {unknown[0]!r}: the feed takes since and limit")
    limit = _limit()
    since = request.args.get("since")
    try:
        history = store()
        if history.identity not in _ready:
            feed.ensure_tables(history)
            _ready.add(history.identity)
        info = feed.meta(history)
        newest = int(info["head"])
        after = 0
        if since:
            try:
                after = feed.decode_cursor(
                    since, scope, info["feed"], pruned_below=int(info["pruned_below"]), newest=newest
                )
            except feed.CursorError as exc:
                raise _ERRORS[exc.reason](str(exc)) from None
        found = feed.events_after(history, location_ids, after, limit + 1)
    except (InvalidCursor, ForeignCursor, CursorExpired):
        raise
    except Exception as exc:  # the store cannot be read now
        _discard_store()
        current_app.logger.error("changes: history store error: %s", exc)
        raise HistoryUnavailable() from None
    more = len(found) > limit
    found = found[:limit]
    position = found[-1][0] if more else max([newest, after] + [p for p, _e in found])
    body = {
        "events": [e.body for _p, e in found],
        "nextCursor": feed.encode_cursor(scope, position, info["feed"]),
        "hasMore": more,
    }
    response = data_response(body)
    response.headers["Cache-Control"] = "private, no-cache"  # revalidate each poll (a 304 is free)
    if not found or _not_modified(response):
        _give_back()
    return response


def _not_modified(response) -> bool:
    """Whether the app's conditional check will answer 304 (the same tag as it computes)."""
    header = request.environ.get("HTTP_IF_NONE_MATCH")
    if not header:
        return False
    tag = hashlib.sha256(response.get_data()).hexdigest()[:32]
    inm = parse_etags(header)
    return inm.star_tag or inm.contains_weak(tag)


def _give_back() -> None:
    """An empty or unchanged poll costs nothing: give back the call admission counted."""
    admitted = g.pop("admitted", None)
    if admitted is None:
        return
    usage.refund(get_db(), *admitted)
    rate = g.get("rate")
    if rate is not None and rate.remaining is not None:
        rate.remaining += 1


def derive_after_publish(app, report) -> int:
    """The publish hook (:func:`app.sources.on_publish`): derive the change events of what was recorded
    for every saved location; how many are new (0 when it failed: logged, never stops the refresher)."""
    from app.history.recorder import history_url
    from app.history.store import open_store
    from app.store.db import open_store as open_accounts

    try:
        history = open_store(
            history_url(app.config.get("DATA_DIR", "data/snapshot"), app.config.get("HISTORY_URL"))
        )
        try:
            with app.app_context():
                conn = open_accounts(app)
                try:
                    return len(feed.derive_saved(history, conn, limits=_freshness(app)))
                finally:
                    conn.close()
        finally:
            history.close()
    except Exception:
        app.logger.exception(
            "change feed: deriving after the refresh of %s failed", getattr(report, "path", "?")
        )
        return 0


def _freshness(app) -> dict | None:
    """The app's freshness limits per layer (``URBAN_FRESHNESS``), what its 502s use; None: the defaults."""
    settings = (app.extensions.get("urban_sources") or {}).get("settings")
    return None if settings is None else dict(settings.freshness)


@bp.get("/locations/<location_id>/changes")
def location_changes(location_id: str):
    """Change events of one saved location after a cursor"""
    if get_location(get_db(), g.account["id"], location_id) is None:
        raise LocationNotFound(f"no location {location_id!r} in your account")
    return _answer(location_id, [location_id])


@bp.get("/changes")
def all_changes():
    """Change events of every saved location of the caller after a cursor"""
    ids = [row["id"] for row in list_locations(get_db(), g.account["id"])]
    return _answer(f"acct:{g.account['id']}", ids)
