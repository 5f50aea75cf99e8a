"""Pure geo core of the Urban Conditions Service: NumPy / Shapely / GeoPandas / SciPy only.

``import geo`` never loads Flask, HTTP, database or command-line modules (tests check this). This module only
re-exports the public names; the layers are ``geo.index`` → ``geo.data`` → ``geo.rules`` → ``geo.service``
→ ``geo.batch`` (see docs/architecture.md). The errors are imported here; every other name is
imported on first use (PEP 562), so ``geo.errors`` costs no pandas or SciPy (``from geo import Engine``,
``geo.load``, ``geo.score`` work as before).

Examples
--------
>>> import geo
>>> round(float(geo.haversine_km(51.2194, 4.4025, 51.0543, 3.7174)[()]), 2)
51.2
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from .errors import GeoError, InvalidCoordinates, OutsideServiceArea, SnapshotError

if TYPE_CHECKING:
    from . import coords
    from .batch.score import score
    from .data.engine import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT, Engine
    from .index.spherical import EARTH_RADIUS_KM, haversine_km
    from .service.loaded import load

#: public name → the module that defines it (imported when the name is first asked for)
_LAZY = {
    "coords": ".coords",
    "score": ".batch.score",  # geo.score(points, engine, now): the batch scorer
    "Engine": ".data.engine",
    "RIVER_NONE": ".data.engine",
    "RIVER_LEFT": ".data.engine",
    "RIVER_RIGHT": ".data.engine",
    "EARTH_RADIUS_KM": ".index.spherical",
    "haversine_km": ".index.spherical",
    "load": ".service.loaded",
}

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


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'geo' has no attribute {name!r}")
    module = import_module(_LAZY[name], __name__)
    value = module if name == "coords" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
