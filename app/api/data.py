"""Data endpoints: ``/locations``, ``/disruptions``, ``/air-quality``, ``/briefing``.

Each targeted endpoint is declared once, here (:class:`DataEndpoint`: path, view name, the snapshot layers
it reads, its OpenAPI summary and schema), right above its view, which calls its ``geo`` function by name.
The declarations feed the OpenAPI paths (:mod:`app.api.openapi`) and the benchmarks
(``bench/bench_endpoints.py``); ``tests/app/test_endpoint_registry.py`` fails when a declared endpoint is
missing from docs/api.md, the URL map or the OpenAPI document.

Order of one call: authentication, plan and quota (:func:`app.api.auth.require_api_access`, before the
view), the representation (406), the pinned engine and its freshness decision, the target (400, 404, 422),
then 502 when a layer the answer reads is stale, and only then the computation.

The JSON text of a data answer, with what depends only on the snapshot encoded once per snapshot
(:func:`answer_text`; byte for byte :func:`app.web.conventions.json_text` of the answer's dict,
``tests/app/test_answer_text.py`` compares them):

- a ``construction`` item (:class:`geo.service.disruptions.WorkItem`) is its cluster's template with its own
  ``distanceKm``: the text before and after that number is encoded once per snapshot and cluster, the
  number per request (``float.__repr__``, what the JSON encoder writes for a float);
- a ``transit`` item (:class:`geo.service.disruptions.DetourItem`) is its detour's template: its whole text
  is encoded once per snapshot and detour;
- the ``sources`` member is given as text (:func:`app.sources.serving.sources_text`);
- every other member is encoded per request, consecutive members in one encoder call.

The texts of a snapshot live as long as its loaded snapshot (``LoadedSnapshot.derived``): a new snapshot, a
reload or an ``asOf`` engine has its own, made on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

from flask import Blueprint, g, request

from app.history.asof import PARAMETER as AS_OF, resolve as history_as_of
from app.sources.serving import answer_sources, served_engine, sources_text
from app.web.db import get_db
from app.store.saved_locations import as_json, list_locations
from app.web.clock import data_now
from app.web.conventions import encode_json as json_dumps
from geo.service.air import air_quality_for
from geo.service.briefing import briefing_for
from geo.service.disruptions import DetourItem, WorkItem, disruptions_for
from geo.service.loaded import loaded
from geo.rules.works import hindrance_json

from .auth import require_api_access, settle
from .negotiation import data_response, data_text_response, negotiate
from .targeting import parse_decimal, resolve_target

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


# --- the JSON text of an answer ---------------------------------------------------------------------
_float_text = float.__repr__


class SnapshotTexts:
    """The encoded item texts of one loaded snapshot, each made on first use (a list slot written once:
    threads that race write the same text)."""

    def __init__(self, engine):
        lk = loaded(engine).lookups
        self._works, self._detours = lk.work_items, lk.detour_items
        self._work_halves: list = [None] * len(self._works)
        self._detour_texts: list = [None] * len(self._detours)

    def work(self, item: WorkItem) -> str:
        """The text of a construction item: its template's halves around its own ``distanceKm``."""
        halves = self._work_halves[item.cluster]
        if halves is None:
            halves = self._work_halves[item.cluster] = _halves(self._works[item.cluster])
        km = item["distanceKm"]
        return halves[0] + (_float_text(km) if type(km) is float else json_dumps(km)) + halves[1]

    def detour(self, item: DetourItem) -> str:
        """The text of a transit item (its template's)."""
        text = self._detour_texts[item.detour]
        if text is None:
            text = self._detour_texts[item.detour] = json_dumps(self._detours[item.detour])
        return text


def _halves(template: dict) -> tuple[str, str]:
    """The item's text before its ``distanceKm`` value (``{…,"distanceKm":``) and after it (``,…}``)."""
    parts: list[str] = []
    head = None
    for name, value in template.items():
        if name == "hindrance":
            value = hindrance_json(value)
        if name == "distanceKm":
            head = "{" + ",".join(parts) + ("," if parts else "") + json_dumps(name) + ":"
            parts = []
            continue
        parts.append(json_dumps(name) + ":" + json_dumps(value))
    if head is None:
        raise ValueError("a construction item template without distanceKm")
    return head, "".join("," + p for p in parts) + "}"


def texts(engine) -> SnapshotTexts:
    """The :class:`SnapshotTexts` of ``engine``'s loaded snapshot."""
    return loaded(engine).derived("app.api.data", SnapshotTexts)


def _member_value(engine, value) -> str | None:
    """The text of a list of snapshot items, or None for any other value (encoded with its neighbours)."""
    if type(value) is not list or not value:
        return None
    kind = type(value[0])
    if kind is WorkItem:
        t = texts(engine)
        return "[" + ",".join(t.work(x) if type(x) is WorkItem else json_dumps(x) for x in value) + "]"
    if kind is DetourItem:
        t = texts(engine)
        return "[" + ",".join(t.detour(x) if type(x) is DetourItem else json_dumps(x) for x in value) + "]"
    return None


def answer_text(engine, body: dict, sources: str) -> str:
    """``json_text({**body, "sources": <the list whose text is sources>})`` of an answer computed by
    ``engine``'s snapshot (its items are that snapshot's)."""
    out: list[str] = []
    plain: dict = {}
    for name, value in body.items():
        text = _member_value(engine, value)
        if text is None:
            plain[name] = value
            continue
        if plain:
            out.append(json_dumps(plain)[1:-1])
            plain = {}
        out.append(json_dumps(name) + ":" + text)
    if plain:
        out.append(json_dumps(plain)[1:-1])
    out.append('"sources":' + sources)
    return "{" + ",".join(out) + "}\n"


# --- the views -------------------------------------------------------------------------------------


def _unchanged(response):
    return response


def _pinned(layers, near_ok: bool):
    """The request's ``(engine, stale error or None, data clock, finish(response))``: with ``asOf`` the
    recorded snapshot and clock of that instant, stamped, with no freshness decision of today (for a JSON
    answer, an engine built from the rows near the point the request names may answer: :func:`_named_point`);
    else the served engine, its freshness for ``layers`` and the data clock."""
    as_of = history_as_of(_named_point() if near_ok else None) if AS_OF in request.args else None
    if as_of is not None:
        return as_of.engine, None, as_of.now, as_of.stamp
    engine, stale = served_engine(layers)
    return engine, stale, data_now(engine), _unchanged


def _named_point() -> tuple[float, float] | None:
    """The point the request names before it is checked: its ``lat``/``lng`` as the target parser reads
    them, or its saved location's (read at admission), else None."""
    args = request.args
    lat, lng, location_id = args.getlist("lat"), args.getlist("lng"), args.getlist("locationId")
    if not location_id and len(lat) == 1 and len(lng) == 1:
        la, ln = parse_decimal(lat[0]), parse_decimal(lng[0])
        return None if la is None or ln is None else (la, ln)
    prefetched = g.get("saved_location")
    if len(location_id) == 1 and not lat and not lng and prefetched is not None and prefetched[1] is not None:
        if prefetched[0] == location_id[0]:
            return float(prefetched[1]["lat"]), float(prefetched[1]["lng"])
    return None


def _for_target(engine, target):
    """``(engine, target)``: an ``asOf`` engine built near another point than the target's is replaced by
    the whole publish's, the target resolved on it."""
    as_of = g.get("as_of")
    if as_of is None or as_of.near is None or as_of.near == (target.lat, target.lng):
        return engine, target
    engine = as_of.whole().engine
    return engine, resolve_target(engine)


def data_view(endpoint: DataEndpoint):
    """Register ``answer(engine, target, now) -> body`` as the view of ``endpoint``: negotiate (406),
    pin the engine (that of ``asOf`` when given) and decide freshness, resolve the target (400, 404, 422),
    answer 502 when stale, then compute at the data clock, add the answer's sources and serialise."""

    def register(answer):
        @wraps(answer)
        def view():
            chosen = negotiate(endpoint.resource, endpoint.translated)
            engine, stale, now, finish = _pinned(endpoint.layers, chosen is None)
            engine, target = _for_target(engine, resolve_target(engine))
            if stale is not None:
                raise stale
            body = answer(engine, target, now)
            if chosen is None:  # JSON: the snapshot's parts of the text are encoded once
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
