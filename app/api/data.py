"""Data endpoints: ``/locations``, ``/disruptions``, ``/air-quality``, ``/briefing``.

Each view only parses (targeting), calls ``geo`` and serialises; authentication, plan and quota run first
in :func:`app.api.auth.require_api_access`. The three targeted views are made from their declarations in
:mod:`app.api.endpoints` (the ``geo`` computations are imported on first call).
"""

from __future__ import annotations

from flask import Blueprint, g

from .auth import require_api_access
from app.web.clock import data_now
from app.store.db import get_db
from app.web.conventions import data_response
from .negotiation import negotiate
from app.store.saved_locations import as_json, list_locations
from .endpoints import ENDPOINTS, DataEndpoint
from .targeting import current_engine, resolve_target

bp = Blueprint("data", __name__)
bp.before_request(require_api_access)
bp.before_request(negotiate)  # after authentication, plan and quota: 406 comes before any 400


@bp.get("/locations")
def locations():
    """The caller's saved locations: ``{"locations": [...]}``."""
    rows = list_locations(get_db(), g.account["id"])
    return data_response({"locations": [as_json(r) for r in rows]})


def data_view(endpoint: DataEndpoint):
    """The view of a targeted data endpoint: resolve the target, compute, serialise."""

    def view():
        compute = endpoint.function()
        engine = current_engine()
        target = resolve_target(engine)
        now = data_now(engine)
        if endpoint.translated:
            body = compute(engine, target.lat, target.lng, now, lang=g.language)
        else:
            body = compute(engine, target.lat, target.lng, now)
        if endpoint.with_location:
            body = {"location": target.location_json(), **body}
        return data_response(body)

    view.__name__, view.__doc__ = endpoint.view, endpoint.summary
    return view


for _endpoint in ENDPOINTS:
    bp.add_url_rule(_endpoint.path, _endpoint.view, data_view(_endpoint), methods=["GET"])
