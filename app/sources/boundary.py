"""Regional boundary: GeoJSON of the Flemish and Brussels-Capital regions from a configured official service.

Request: ``GET {URBAN_BOUNDARY_URL}`` exactly as configured, e.g. a WFS 2.0 ``GetFeature`` with
``outputFormat=application/json&srsName=EPSG:4326`` or an OGC API Features ``/items?f=json`` URL (candidates
in ``docs/sources.md``). The answer must pass ``geo.data.upstream.normalise_boundary`` (polygons, WGS84, plausible
area, Antwerp/Ghent/Brussels inside, Liège/Namur outside). There is no default URL: when none is set the
source is not asked and the reference file's boundary is used; when it fails, the refresher keeps the
serving snapshot's live boundary, or else the reference file's.
"""

from __future__ import annotations

from datetime import datetime

from geo.data import upstream as normalise

from .errors import UpstreamError
from .http import Upstream
from .payload import SourceData, fetch_geojson_layer
from .settings import SourceSettings

SOURCE = "boundary"
#: the recording endpoint of the configured URL (the URL itself is the whole request)
ENDPOINT = "{URBAN_BOUNDARY_URL}"


def enabled(settings: SourceSettings) -> bool:
    """Is a boundary URL configured?"""
    return bool(settings.boundary_url)


def fetch(up: Upstream, settings: SourceSettings, now: datetime | None = None) -> SourceData:
    """Fetch the regional boundary and check it normalises into the ``service_area`` layer.

    Examples
    --------
    >>> fetch(Upstream(session, settings), settings).raw["boundary"]["type"]   # doctest: +SKIP
    'FeatureCollection'
    """
    if not enabled(settings):
        raise UpstreamError(SOURCE, "regional boundary: no URL configured (set URBAN_BOUNDARY_URL)")
    return fetch_geojson_layer(
        up,
        SOURCE,
        settings.boundary_url,
        layer="service_area",
        kind="boundary",
        label="regional boundary",
        normaliser=normalise.normalise_boundary,
        expire_after=settings.expiry(SOURCE, "boundary"),
        endpoint=ENDPOINT,
    )
