"""Antwerp low-emission zone: Stad Antwerpen ArcGIS REST layer queried as GeoJSON in WGS84.

Request: ``GET {URBAN_LEZ_URL}/query?where=1=1&outFields=*&outSR=4326&f=geojson``.
"""

from __future__ import annotations

from datetime import datetime

from geo.data import upstream as normalise

from .http import Upstream
from .payload import SourceData, fetch_geojson_layer
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
    return fetch_geojson_layer(
        up,
        SOURCE,
        f"{settings.lez_url}/query",
        params=QUERY,
        layer="lez",
        kind="lez",
        label="LEZ",
        normaliser=normalise.normalise_lez,
        expire_after=settings.expiry(SOURCE, "lez"),
        endpoint="/query",
    )
