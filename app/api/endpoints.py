"""The data endpoints, declared once: path, view name, the ``geo`` function that computes the body, the
snapshot layers it reads, its OpenAPI summary and response schema.

This one table feeds the blueprint (:mod:`app.api.data`), the OpenAPI paths (:mod:`app.api.openapi`), the
freshness map (:data:`app.sources.freshness.ENDPOINT_LAYERS`) and the benchmarks
(``bench/bench_endpoints.py``); ``tests/app/test_endpoint_registry.py`` fails when an endpoint is missing
from any of them or from docs/api.md. The ``geo`` functions are imported on first call, so importing the app
does not import the engine's rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module


@dataclass(frozen=True)
class DataEndpoint:
    """One data endpoint (``GET``, authenticated, targeted by ``lat``/``lng`` or ``locationId``).

    Examples
    --------
    >>> by_path("/briefing").view, by_path("/briefing").compute
    ('briefing', 'geo.service.briefing:briefing')
    """

    path: str  # URL rule under /api/v1
    view: str  # Flask endpoint name (``data.<view>``) and freshness key
    compute: str  # "module:function", called as function(engine, lat, lng, now) -> dict
    layers: tuple[str, ...]  # snapshot layers the answer reads (their staleness makes it 503)
    summary: str  # OpenAPI summary and the view's docstring
    schema: str  # OpenAPI response schema name (app/api/data_schemas.py)
    with_location: bool = False  # the body starts with the resolved ``location``
    translated: bool = False  # generated texts follow Accept-Language: function(..., lang=...)

    def function(self):
        """The ``geo`` function that computes the body."""
        module, name = self.compute.split(":")
        return getattr(import_module(module), name)


ENDPOINTS: tuple[DataEndpoint, ...] = (
    DataEndpoint(
        "/disruptions",
        "disruptions",
        "geo.service.disruptions:disruptions",
        ("works", "stops", "detours"),
        "Road works and transit disruptions near a point",
        "Disruptions",
        with_location=True,
    ),
    DataEndpoint(
        "/air-quality",
        "air_quality",
        "geo.service.air:air_quality",
        ("stations", "no2", "lez"),
        "Latest measured NO2, thresholds, compliance and LEZ status",
        "AirQuality",
        translated=True,
    ),
    DataEndpoint(
        "/briefing",
        "briefing",
        "geo.service.briefing:briefing",
        ("works", "stops", "detours", "stations", "no2", "lez"),
        "Operations briefing for the next 24 hours",
        "Briefing",
        translated=True,
    ),
)


def by_path(path: str) -> DataEndpoint:
    """The declaration of ``path`` (``KeyError`` when there is none)."""
    for endpoint in ENDPOINTS:
        if endpoint.path == path:
            return endpoint
    raise KeyError(path)
