"""Regional boundary: GeoJSON of the Flemish and Brussels-Capital regions from a configured official service.

Request: ``GET {URBAN_BOUNDARY_URL}`` exactly as configured, e.g. a WFS 2.0 ``GetFeature`` with
``outputFormat=application/json&srsName=EPSG:4326`` or an OGC API Features ``/items?f=json`` URL (candidates
in ``docs/sources.md``). The answer must pass ``geo.upstream.normalise_boundary`` (polygons, WGS84, plausible
area, Antwerp/Ghent/Brussels inside, Liège/Namur outside). There is no default URL: when none is set the
source is not asked and the reference file's boundary is used; when it fails, the refresher keeps the
serving snapshot's live boundary, or else the reference file's.
"""

from __future__ import annotations

from datetime import datetime

from geo import upstream as normalise

from .errors import UpstreamError
from .http import Upstream
from .payload import SourceData, feature_collection
from .settings import SourceSettings

SOURCE = "boundary"


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
    got = up.get_json(SOURCE, settings.boundary_url,
                      headers={"Accept": "application/geo+json, application/json"},
                      expire_after=settings.expiry(SOURCE, "boundary"), check=feature_collection)
    try:
        normalise.normalise_boundary(got.payload)
    except normalise.UpstreamFormatError as exc:
        raise UpstreamError(SOURCE, f"regional boundary: unusable payload ({exc})") from None
    return SourceData(SOURCE, raw={"boundary": got.payload}, retrieved_at={"service_area": got.retrieved_at},
                      requests=1, from_cache=int(got.from_cache))
