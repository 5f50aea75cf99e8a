"""INTERFACE STUB — the engine helper replaces the bodies; signatures and semantics are the contract.

``Engine`` holds the snapshot's layers as GeoDataFrames and spatial indexes built once at load.
Every query method is ufunc-style: ``lat``/``lng`` scalar or 1-D array in (validated with
``geo.coords.validate``, raising ``InvalidCoordinates``), NumPy arrays out, one element per point.
"""

from __future__ import annotations

import numpy as np

EARTH_RADIUS_KM = 6371.0088

# river_side() codes
RIVER_NONE = 0   # outside the Antwerp river zone: no river side
RIVER_LEFT = 1   # left (west) bank: Linkeroever, Zwijndrecht, Burcht, Kruibeke, Beveren
RIVER_RIGHT = 2  # right (east) bank: city centre, Hoboken, northern port


class Engine:
    """Layers of one snapshot plus their spatial indexes.

    Attributes
    ----------
    manifest : dict            the snapshot's manifest.json
    snapshot_id : str
    as_of : datetime.datetime  aware UTC
    service_area, lez, river, stations, stops, works, detours, no2 : geopandas.GeoDataFrame
        layers as in data/README.md (row order = the index used by the query methods)
    """

    @classmethod
    def load(cls, path) -> "Engine":
        """Load and validate a snapshot directory (raises ``SnapshotError`` naming file and fix)."""
        raise NotImplementedError

    @classmethod
    def from_layers(cls, layers: dict, manifest: dict) -> "Engine":
        """Build from in-memory GeoDataFrames (tests, notebooks)."""
        raise NotImplementedError

    # --- polygons -----------------------------------------------------------------------------
    def in_service_area(self, lat, lng) -> np.ndarray:
        """bool array: inside Flanders ∪ Brussels (boundary counts as inside)."""
        raise NotImplementedError

    def in_lez(self, lat, lng) -> np.ndarray:
        """bool array: inside the Antwerp LEZ (all parts, holes honoured)."""
        raise NotImplementedError

    def river_side(self, lat, lng) -> np.ndarray:
        """int8 array of RIVER_NONE / RIVER_LEFT / RIVER_RIGHT."""
        raise NotImplementedError

    # --- nearest / radius ---------------------------------------------------------------------
    def nearest_station(self, lat, lng, pollutant: str = "no2"):
        """(idx int64 array into self.stations, haversine distance km float64 array)
        over stations measuring ``pollutant`` (column of the same name is True)."""
        raise NotImplementedError

    def works_near(self, lat: float, lng: float, radius_km: float = 2.0):
        """Single point: (idx int64 array into self.works, dist_km float64 array),
        every work with haversine distance <= radius_km, sorted by (distance, id)."""
        raise NotImplementedError

    def stops_near(self, lat: float, lng: float, radius_km: float):
        """Single point: (idx into self.stops, dist_km), sorted by (distance, id)."""
        raise NotImplementedError

    def count_works_near(self, lat, lng, radius_km: float = 2.0, mask=None):
        """Many points, aggregated (never materialising all pairs):
        (count int64 array, nearest_km float64 array with inf when none) over works where
        ``mask`` (bool array over self.works, default all) is True."""
        raise NotImplementedError

    def any_stop_near(self, lat, lng, radius_km: float) -> np.ndarray:
        """bool array: at least one stop within radius_km."""
        raise NotImplementedError


def haversine_km(lat1, lng1, lat2, lng2):
    """Great-circle distance in km on the mean Earth radius (broadcasting)."""
    lat1, lng1, lat2, lng2 = map(np.radians, (lat1, lng1, lat2, lng2))
    a = (
        np.sin((lat2 - lat1) / 2.0) ** 2
        + np.cos(lat1) * np.cos(lat2) * np.sin((lng2 - lng1) / 2.0) ** 2
    )
    return 2.0 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.minimum(a, 1.0)))
