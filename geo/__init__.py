"""Pure geo core of the Urban Conditions Service: NumPy / Shapely / GeoPandas / SciPy only.

``import geo`` never loads Flask, HTTP or database modules (a test checks this).

Examples
--------
>>> import geo
>>> round(float(geo.haversine_km(51.2194, 4.4025, 51.0543, 3.7174)[()]), 2)
51.2
"""

from . import coords
from .engine import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT, Engine
from .errors import GeoError, InvalidCoordinates, OutsideServiceArea, SnapshotError
from .score import score  # the function shadows the submodule name on purpose: geo.score(points, engine, now)
from .spherical import EARTH_RADIUS_KM, haversine_km

__all__ = [
    "Engine", "haversine_km", "EARTH_RADIUS_KM", "RIVER_NONE", "RIVER_LEFT", "RIVER_RIGHT",
    "GeoError", "InvalidCoordinates", "OutsideServiceArea", "SnapshotError", "coords",
    "score",
]
