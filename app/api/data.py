"""Data endpoints: ``/locations``, ``/disruptions``, ``/air-quality``, ``/briefing``.

Each targeted endpoint is declared once, here (:class:`DataEndpoint`: path, view name, the snapshot layers
it reads, its OpenAPI summary and schema), right above its view, which calls its ``geo`` function by name.
The declarations feed the OpenAPI paths (:mod:`app.api.openapi`) and the benchmarks
(``bench/bench_endpoints.py``); ``tests/app/test_endpoint_registry.py`` fails when a declared endpoint is
missing from docs/api.md, the URL map or the OpenAPI document.

Order of one call: authentication, plan and quota (:func:`app.api.auth.require_api_access`, before the
view), the representation (406), the pinned engine and its freshness decision, the target (400, 404, 422),
then 502 when a layer the answer reads is stale, and only then the computation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

from flask import Blueprint, g, request

from app.history.asof import resolve as history_as_of
from app.sources.provenance import answer_sources, sources_text
from app.sources.serving import served_engine
from app.web.db import get_db
from app.store.saved_locations import as_json, list_locations
from app.web.clock import data_now
from geo.service.air import air_quality_for
from geo.service.briefing import briefing_for
from geo.service.disruptions import disruptions_for

from .answers import answer_text
from .auth import require_api_access, settle
from .negotiation import data_response, data_text_response, negotiate, representation
from .targeting import resolve_target

bp = Blueprint("data", __name__)
bp.before_request(require_api_access)
bp.after_request(settle)  # a call that ended in a 5xx is refunded


@dataclass(frozen=True)
class DataEndpoint:
    """One data endpoint (``GET``, authenticated, targeted by ``lat``/``lng`` or ``locationId``).

    Examples
    --------
    >>> BRIEFING.view, BRIEFING.layers[:3]
    ('briefing', ('works', 'stops', 'detours'))
    """

    path: str  # URL rule under /api/v1
    view: str  # Flask endpoint name (``data.<view>``)
    layers: tuple[str, ...]  # snapshot layers the answer reads (their staleness makes it 502)
    summary: str  # OpenAPI summary and the view's docstring
    schema: str  # OpenAPI response schema name (app/api/data_schemas.py)
    translated: bool = False  # generated texts follow Accept-Language

    @property
    def resource(self) -> str:
        """The last path segment, as content negotiation names the resource."""
        return self.path.lstrip("/")


def _unchanged(response):
    return response


def _pinned(layers):
    """The request's ``(engine, stale error or None, data clock, finish(response))``: with ``asOf`` the
    recorded snapshot and clock of that instant, stamped, with no freshness decision of today; else the
    served engine, its freshness for ``layers`` and the data clock."""
    as_of = history_as_of() if "asOf" in request.args else None
    if as_of is not None:
        return as_of.engine, None, as_of.now, as_of.stamp
    engine, stale = served_engine(layers)
    return engine, stale, data_now(engine), _unchanged


def data_view(endpoint: DataEndpoint):
    """Register ``answer(engine, target, now) -> body`` as the view of ``endpoint``: negotiate (406),
    pin the engine (that of ``asOf`` when given) and decide freshness, resolve the target (400, 404, 422),
    answer 502 when stale, then compute at the data clock, add the answer's sources and serialise."""

    def register(answer):
        @wraps(answer)
        def view():
            negotiate(endpoint.resource, endpoint.translated)
            engine, stale, now, finish = _pinned(endpoint.layers)
            target = resolve_target(engine)
            if stale is not None:
                raise stale
            body = answer(engine, target, now)
            if representation() is None:  # JSON: the snapshot's parts of the text are encoded once
                sources = sources_text(engine, endpoint.layers, now)
                return finish(data_text_response(answer_text(engine, body, sources)))
            body["sources"] = answer_sources(engine, endpoint.layers, now)
            return finish(data_response(body))

        view.__doc__ = endpoint.summary
        bp.add_url_rule(endpoint.path, endpoint.view, view, methods=["GET"])
        return view

    return register


@bp.get("/locations")
def locations():
    """The caller's saved locations: ``{"locations": [...]}``."""
    negotiate("locations")
    rows = list_locations(get_db(), g.account["id"])
    return data_response({"locations": [as_json(r) for r in rows]})


DISRUPTIONS = DataEndpoint(
    "/disruptions",
    "disruptions",
    ("works", "stops", "detours"),
    "Road works and transit disruptions near a point",
    "Disruptions",
)


@data_view(DISRUPTIONS)
def disruptions(engine, target, now) -> dict:
    return {"location": target.location_json(), **disruptions_for(engine, target.point, now, target.around)}


AIR_QUALITY = DataEndpoint(
    "/air-quality",
    "air_quality",
    ("stations", "no2", "lez"),
    "Latest measured NO2, thresholds, compliance and LEZ status",
    "AirQuality",
    translated=True,
)


@data_view(AIR_QUALITY)
def air_quality(engine, target, now) -> dict:
    return air_quality_for(engine, target.point, now, g.language, target.around)


BRIEFING = DataEndpoint(
    "/briefing",
    "briefing",
    ("works", "stops", "detours", "stations", "no2", "lez"),
    "Operations briefing for the next 24 hours",
    "Briefing",
    translated=True,
)


@data_view(BRIEFING)
def briefing(engine, target, now) -> dict:
    return briefing_for(engine, target.point, now, g.language, target.around)


ENDPOINTS: tuple[DataEndpoint, ...] = (DISRUPTIONS, AIR_QUALITY, BRIEFING)


def by_path(path: str) -> DataEndpoint:
    """The declaration of ``path`` (``KeyError`` when there is none)."""
    for endpoint in ENDPOINTS:
        if endpoint.path == path:
            return endpoint
    raise KeyError(path)
