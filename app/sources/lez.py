"""Antwerp low-emission zone: Stad Antwerpen ArcGIS REST layer queried as GeoJSON in WGS84.

Request: ``GET {URBAN_LEZ_URL}/query?where=1=1&outFields=*&outSR=4326&f=geojson``.
"""

from __future__ import annotations

from datetime import datetime

from geo import upstream as normalise

from .errors import UpstreamError
from .http import Upstream
from .payload import SourceData, feature_collection
from .settings import SourceSettings

SOURCE = "lez"
QUERY = {"where": "1=1", "outFields": "*", "outSR": "4326", "f": "geojson"}


def fetch(up: Upstream, settings: SourceSettings, now: datetime | None = None) -> SourceData:
    """Fetch the LEZ polygons and check they normalise into the ``lez`` layer.

    Examples
    --------
    >>> fetch(Upstream(session, settings), settings).raw["lez"]["type"]   # doctest: +SKIP
    'FeatureCollection'
    """
    got = up.get_json(SOURCE, f"{settings.lez_url}/query", params=QUERY,
                      headers={"Accept": "application/geo+json, application/json"},
                      expire_after=settings.expiry(SOURCE, "lez"), check=feature_collection)
    try:
        normalise.normalise_lez(got.payload)
    except normalise.UpstreamFormatError as exc:
        raise UpstreamError(SOURCE, f"LEZ: unusable payload ({exc})") from None
    return SourceData(SOURCE, raw={"lez": got.payload}, retrieved_at={"lez": got.retrieved_at},
                      requests=1, from_cache=int(got.from_cache))
