"""Data endpoints: ``/locations``, ``/disruptions``, ``/air-quality``, ``/briefing``.

Each view only parses (targeting), calls ``geo`` and serialises; authentication, plan and quota run first
in :func:`app.auth.require_api_access`. The ``geo`` computations are imported inside the views.
"""

from __future__ import annotations

from flask import Blueprint, g

from ..auth import require_api_access
from ..clock import data_now
from ..db import get_db
from ..http import data_response
from ..saved_locations import as_json, list_locations
from .targeting import current_engine, resolve_target

bp = Blueprint("data", __name__)
bp.before_request(require_api_access)


@bp.get("/locations")
def locations():
    """The caller's saved locations: ``{"locations": [...]}``."""
    rows = list_locations(get_db(), g.account["id"])
    return data_response({"locations": [as_json(r) for r in rows]})


@bp.get("/disruptions")
def disruptions():
    """Road works and transit detours near the target."""
    from geo.service.disruptions import disruptions as compute

    engine = current_engine()
    target = resolve_target(engine)
    body = compute(engine, target.lat, target.lng, data_now(engine))
    return data_response({"location": target.location_json(), **body})


@bp.get("/air-quality")
def air_quality():
    """Latest measured NO2 at the nearest station, thresholds, compliance and LEZ status."""
    from geo.service.air import air_quality as compute

    engine = current_engine()
    target = resolve_target(engine)
    return data_response(compute(engine, target.lat, target.lng, data_now(engine)))


@bp.get("/briefing")
def briefing():
    """Risk, headline, key facts and the next 24 hours' windows for the target."""
    from geo.service.briefing import briefing as compute

    engine = current_engine()
    target = resolve_target(engine)
    return data_response(compute(engine, target.lat, target.lng, data_now(engine)))
