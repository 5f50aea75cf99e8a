"""Pure geo core of the Urban Conditions Service: NumPy / Shapely / GeoPandas / SciPy only.

``import geo`` never loads Flask, HTTP, database or command-line modules (tests check this). This module only
re-exports the public names; the layers are ``geo.index`` → ``geo.data`` → ``geo.rules`` → ``geo.service``
→ ``geo.batch`` (see docs/architecture.md).

Examples
--------
>>> import geo
>>> round(float(geo.haversine_km(51.2194, 4.4025, 51.0543, 3.7174)[()]), 2)
51.2
"""

from . import coords
from .batch.score import score  # geo.score(points, engine, now): the batch scorer
from .data.engine import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT, Engine
from .errors import GeoError, InvalidCoordinates, OutsideServiceArea, SnapshotError
from .index.spherical import EARTH_RADIUS_KM, haversine_km
from .service.loaded import load

__all__ = [
    "Engine",
    "load",
    "haversine_km",
    "EARTH_RADIUS_KM",
    "RIVER_NONE",
    "RIVER_LEFT",
    "RIVER_RIGHT",
    "GeoError",
    "InvalidCoordinates",
    "OutsideServiceArea",
    "SnapshotError",
    "coords",
    "score",
]
