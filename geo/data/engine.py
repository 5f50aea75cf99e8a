"""The geo engine: a snapshot's layers as GeoDataFrames plus spatial indexes built once at load.

Every query method is ufunc-style: ``lat``/``lng`` scalar or 1-D array in (validated with
``geo.coords.validate``, raising ``InvalidCoordinates``), NumPy arrays out, one element per point.
Python ``float``/``int`` scalars take a fast path without array broadcasting; the answers are the same.
See ``docs/engine.md`` for the index design and the exactness guarantees.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import NamedTuple

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..coords import validate
from ..errors import InvalidCoordinates
from ..index.extents import ExtentIndex, Extents
from ..index.polygon_index import PolygonGrid
from ..index.point_index import PointIndex
from ..index.spherical import EARTH_RADIUS_KM, haversine_km  # noqa: F401  (re-exported)
from .layers import DECLARED, EXTENT_LAYERS, POINT_LAYERS
from .rows import Deferred, take

# river_side() codes
RIVER_NONE = 0  # outside the Antwerp river zone: no river side
RIVER_LEFT = 1  # left (west) bank: Linkeroever, Zwijndrecht, Burcht, Kruibeke, Beveren
RIVER_RIGHT = 2  # right (east) bank: city centre, Hoboken, northern port


def _scalar(lat, lng):
    """(lat, lng) as Python floats when both are valid real scalars, else None (take the array path)."""
    t1, t2 = type(lat), type(lng)
    if (t1 is float or t1 is int or t1 is np.float64) and (t2 is float or t2 is int or t2 is np.float64):
        la, ln = float(lat), float(lng)
        if -90.0 <= la <= 90.0 and -180.0 <= ln <= 180.0:  # False for NaN
            return la, ln
    return None


def _union(frame) -> shapely.Geometry:
    geoms = frame.geometry.values if len(frame) else []
    return shapely.union_all(np.asarray(geoms)) if len(geoms) else shapely.MultiPolygon()


_WGS84: list = []  # CRS objects found equal to EPSG:4326 (a comparison costs a millisecond; frames share them)


def _as_4326_crs(crs) -> bool:
    """Whether ``crs`` is EPSG:4326 (remembered per CRS object)."""
    if any(crs is known for known in _WGS84):
        return True
    if not crs.equals("EPSG:4326"):
        return False
    _WGS84[:] = [crs, *_WGS84[:7]]
    return True


def _as_4326(frame):
    crs = frame.crs
    if crs is None or _as_4326_crs(crs):
        return frame
    return frame.to_crs("EPSG:4326")


def _parse_as_of(value):
    if not value:
        return None
    ts = _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return ts if ts.tzinfo else ts.replace(tzinfo=_dt.timezone.utc)


class RadiusPairs(NamedTuple):
    """Array form of ``Engine.works_near`` / ``stops_near``: one element per (query point, layer row) pair
    within the radius, sorted by (point, distance, id). ``idx[point == i]`` and ``km[point == i]`` are the
    scalar call's ``(idx, km)`` for query ``i``, byte for byte; a query with none has no element.

    Attributes
    ----------
    point : int64 array, position of the query point in the input arrays
    idx : int64 array, row in the layer (``engine.works`` / ``engine.stops``)
    km : float64 array, haversine distance
    """

    point: np.ndarray
    idx: np.ndarray
    km: np.ndarray


def point_coords(frame):
    """(lat, lng) float64 arrays of a point layer; NaN where the geometry is missing or empty.

    Examples
    --------
    >>> import geopandas as gpd
    >>> frame = gpd.GeoDataFrame(geometry=gpd.points_from_xy([4.4, 3.7], [51.2, 51.05]), crs="EPSG:4326")
    >>> [a.tolist() for a in point_coords(frame)]
    [[51.2, 51.05], [4.4, 3.7]]
    """
    geom = np.asarray(frame.geometry.values, dtype=object) if len(frame) else np.empty(0, dtype=object)
    return geometry_coords(geom)


def geometry_coords(geom: np.ndarray):
    """:func:`point_coords` of an object array of Shapely geometries (None: missing)."""
    ok = ~(shapely.is_missing(geom) | shapely.is_empty(geom)) if geom.size else np.empty(0, dtype=bool)
    lat, lng = np.full(geom.size, np.nan), np.full(geom.size, np.nan)
    if ok.any():
        pts = shapely.point_on_surface(geom[ok])
        lng[ok], lat[ok] = shapely.get_x(pts), shapely.get_y(pts)
    return lat, lng


class Engine:
    """Layers of one snapshot plus their spatial indexes.

    Attributes
    ----------
    manifest : dict            the snapshot's manifest.json
    snapshot_id : str
    as_of : datetime.datetime  aware UTC (None when the manifest has no ``asOf``)
    service_area, lez, river, stations, stops, works, detours, no2 : geopandas.GeoDataFrame
        layers as in data/README.md (row order = the index used by the query methods)

    Examples
    --------
    >>> eng = Engine.load("data/snapshot")                       # doctest: +SKIP
    >>> eng.in_service_area([51.2194, 50.6326], [4.4025, 5.5797])  # doctest: +SKIP
    array([ True, False])
    """

    def __init__(self, layers: dict, manifest: dict, reuse=(), rows=None):
        self.manifest = dict(manifest or {})
        self.snapshot_id = str(self.manifest.get("snapshotId", ""))
        self.as_of = _parse_as_of(self.manifest.get("asOf"))
        donors: dict[str, Engine] = {}  # layer -> an engine whose very frame of that layer is given
        self._memo: dict[str, dict] = {}  # layer -> what was derived from its frame alone (per_layer)
        #: layer -> (RowSource, positions): its frame is those rows of the source (geo.data.rows)
        self._rows: dict = {}
        #: layer -> its frame made on first use (geo.data.rows.Deferred; ``engine.<layer>`` makes it)
        self._deferred: dict[str, Deferred] = {}
        #: layer -> the row-wise values derived over its own frame (per_row), by name
        self._row_wise: dict[str, dict] = {}
        for name in (layer.name for layer in DECLARED):
            frame = layers.get(name)
            donor = next((e for e in reuse if frame is not None and e.layer_object(name) is frame), None)
            if isinstance(frame, Deferred) and (donor is None and name not in (rows or {})):
                frame = frame.frame()  # deferred only with its row source
            if donor is not None:
                donors[name] = donor
                if isinstance(frame, Deferred):
                    self._deferred[name] = frame
                else:
                    setattr(self, name, frame)
                self._memo[name] = donor._memo.setdefault(name, {})
                continue
            if isinstance(frame, Deferred):
                if frame.crs is None or _as_4326_crs(frame.crs):
                    source, positions = rows[name]
                    self._rows[name] = (source, np.asarray(positions, dtype=np.int64))
                    self._deferred[name] = frame
                    continue
                frame = frame.frame()
            if frame is None:
                frame = gpd.GeoDataFrame({"geometry": gpd.GeoSeries([], crs="EPSG:4326")})
            wgs84 = _as_4326(frame)
            if name in (rows or {}) and wgs84 is frame:  # not reprojected: the source's rows as they are
                source, positions = rows[name]
                self._rows[name] = (source, np.asarray(positions, dtype=np.int64))
                if _default_index(frame):  # made for this engine (from_layers(rows=…)): kept as it is
                    setattr(self, name, frame)
                    continue
            setattr(self, name, wgs84.reset_index(drop=True))
        self._check_points(skip=donors)
        self._build_indexes(donors)

    def __getattr__(self, name: str):
        """A deferred layer's frame, made on first use (:class:`geo.data.rows.Deferred`)."""
        deferred = self.__dict__.get("_deferred")
        if deferred is None or name not in deferred:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        frame = deferred[name].frame()
        self.__dict__[name] = frame
        return frame

    def layer_object(self, name: str):
        """What layer ``name`` was given as (its frame, or its :class:`geo.data.rows.Deferred`), without making
        a deferred frame: what another engine is given to share it (None: no such layer)."""
        found = self.__dict__.get("_deferred", {}).get(name)
        return found if found is not None else self.__dict__.get(name)

    def layer_columns(self, name: str):
        """The columns of layer ``name``, without making a deferred frame."""
        found = self._deferred.get(name)
        return found.columns if found is not None else getattr(self, name).columns

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def load(cls, path) -> "Engine":
        """Load and validate a snapshot directory and build every spatial index.

        Raises ``SnapshotError`` naming the file and the fix. :func:`geo.load` also builds the rules'
        prepared data and the single-point tables (what the API does at start).

        Examples
        --------
        >>> eng = Engine.load("data/snapshot")  # doctest: +SKIP
        """
        from .snapshot import read_snapshot

        layers, manifest = read_snapshot(path)
        return cls.from_layers(layers, manifest)

    @classmethod
    def from_layers(cls, layers: dict, manifest: dict, reuse=(), rows=None) -> "Engine":
        """Build from in-memory GeoDataFrames (tests, notebooks); a missing layer is empty.

        ``reuse``: engines built before (e.g. of a neighbouring snapshot). A layer given as the very frame
        of one of them (``layers["stops"] is other.stops``) is shared with it, checks and spatial indexes
        included, instead of being built again; the answers are the same.

        ``rows``: ``{layer: (source, positions)}`` for a layer whose frame is the rows ``positions`` of a
        :class:`geo.data.rows.RowSource` (a history's versions): its points, checks and extents are taken
        from the source's, derived once per row; the answers are the same.

        Examples
        --------
        >>> import geopandas as gpd
        >>> from shapely.geometry import box
        >>> area = gpd.GeoDataFrame({"name": ["x"]}, geometry=[box(4, 51, 5, 52)], crs="EPSG:4326")
        >>> Engine.from_layers({"service_area": area}, {}).in_service_area(51.5, 4.5)
        array([ True])
        """
        return cls(layers, manifest, reuse, rows)

    def layer_points(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """:func:`point_coords` of layer ``name``, computed once per layer frame (read-only arrays).

        Examples
        --------
        >>> lat, lng = engine.layer_points("stations")  # doctest: +SKIP
        """
        return self.per_row(name, "points", _read_only_points)

    def per_row(self, name: str, what: str, factory):
        """:meth:`per_layer` of a row-wise ``factory`` (one value per row: an array, a tuple of arrays, or an
        object with ``take`` and ``concat``): for a layer taken from a :class:`geo.data.rows.RowSource`, the
        source's value at the layer's rows."""
        found = self._rows.get(name)
        if found is None:
            value = self.per_layer(name, what, factory)
            self._row_wise.setdefault(name, {})[what] = value
            return value
        source, positions = found
        memo = self._memo.setdefault(name, {})
        if what not in memo:  # the source's values at the layer's rows: the frame itself is not read
            memo[what] = take(source.derived(what, factory), positions)
        return memo[what]

    def row_values(self, name: str) -> dict:
        """The values :meth:`per_row` derived so far over layer ``name``'s own frame, by name (this engine's:
        later ones are added to it): what a :class:`geo.data.rows.RowSource` holding that very frame as a chunk
        need not derive again."""
        return self._row_wise.setdefault(name, {})

    def id_texts(self, name: str):
        """The ``id`` column of layer ``name`` as text (``astype(str)``, row-wise: once per row of a row
        source), None without one."""
        if "id" not in self.layer_columns(name):
            return None
        return self.per_row(name, "id_texts", _id_texts)

    def row_source(self, name: str):
        """``(source, positions)`` when layer ``name`` is the rows ``positions`` of a
        :class:`geo.data.rows.RowSource` (``from_layers(rows=…)``, its checks passed), else None."""
        return self._rows.get(name)

    def per_layer(self, name: str, what: str, factory):
        """``factory(frame)`` of layer ``name``, made once per layer frame under ``what``: an engine sharing
        the frame (``reuse``) shares it too. ``factory`` must read that frame alone (treat it as read-only).

        Examples
        --------
        >>> keys = engine.per_layer("stops", "my.keys", lambda stops: stops["id"].tolist())  # doctest: +SKIP
        """
        memo = self._memo.setdefault(name, {})
        if what not in memo:
            memo[what] = factory(getattr(self, name))
        return memo[what]

    def _check_points(self, skip=()):
        """Every located point of the point layers is a WGS84 (lat, lng): a projected pair (e.g. Lambert-72
        metres) raises ``InvalidCoordinates`` naming the layer, here at load and never in a request."""
        for name in POINT_LAYERS:
            if name in skip:  # shared with an engine that checked it
                continue
            found = self._rows.get(name)
            if found is not None:
                if found[0].derived(f"checked.{name}", _passes(name)).all():
                    continue  # every row of its source passes these checks
                del self._rows[name]  # some does not: this layer is derived and checked on its own
            _check_layer(name, getattr(self, name), *self.layer_points(name))

    #: the indexes built from each layer (one layer each): shared with an engine that has the same frame
    INDEXES = {
        "service_area": ("_area",),
        "lez": ("_lez",),
        "river": ("_left", "_right"),
        "works": ("_works",),
        "stops": ("_stops",),
        "stations": ("_stations",),
    }

    def _build_indexes(self, donors=None):
        donors = donors or {}
        for name, attrs in self.INDEXES.items():
            if name in donors:
                for attr in attrs:
                    setattr(self, attr, getattr(donors[name], attr))
        if "service_area" not in donors:
            self._area = PolygonGrid(_union(self.service_area))
        if "lez" not in donors:
            self._lez = PolygonGrid(_union(self.lez))
        if "river" not in donors:
            part = self.river["part"] if "part" in self.river.columns else []
            self._left = PolygonGrid(_union(self.river[np.asarray(part) == "left"]))
            self._right = PolygonGrid(_union(self.river[np.asarray(part) == "right"]))
        if "works" not in donors:
            if "works" in self._rows:  # the extents of its source's rows; the index on its first query
                ids = self.id_texts("works")
                self._works = ExtentIndex(self.per_row("works", "extents", _extents), ids, lazy=True)
            else:  # row-wise values of its own frame: a row source holding that frame takes them (row_values)
                self._works = ExtentIndex(self.per_row("works", "extents", _extents), self.id_texts("works"))
        if "stops" not in donors:
            self._stops = self._point_index(self.stops, *self.layer_points("stops"))
        if "stations" not in donors:
            lat, lng = self.layer_points("stations")
            self._stations = {}
            for col in self.stations.columns:
                if col != "geometry" and pd.api.types.is_bool_dtype(self.stations[col].dtype):
                    flag = self.stations[col].fillna(False).to_numpy(dtype=bool)
                    self._stations[col] = PointIndex(np.where(flag, lat, np.nan), lng)

    @staticmethod
    def _point_index(frame, lat, lng):
        ids = frame["id"].astype(str).to_numpy() if "id" in frame.columns else None
        return PointIndex(lat, lng, ids)

    @staticmethod
    def _extent_index(frame, lat, lng):
        ids = frame["id"].astype(str).to_numpy() if "id" in frame.columns else None
        geoms = np.asarray(frame.geometry.values, dtype=object) if len(frame) else np.empty(0, dtype=object)
        return extent_index(geoms, ids, lat, lng)

    @property
    def work_extents(self) -> Extents:
        """The works' representative points and extents (row = ``self.works`` row), as ``works_near`` measures
        them."""
        return self._works.extents

    # --- polygons -----------------------------------------------------------------------------
    def in_service_area(self, lat, lng) -> np.ndarray:
        """bool array: inside Flanders ∪ Brussels (boundary counts as inside).

        Examples
        --------
        >>> engine.in_service_area([51.2194, 50.8467, 50.6326], [4.4025, 4.3525, 5.5797])  # doctest: +SKIP
        array([ True,  True, False])
        """
        s = _scalar(lat, lng)
        if s is not None:
            return np.array([self._area.contains_one(s[1], s[0])])
        lat, lng = validate(lat, lng)
        return self._area.contains(lng, lat)

    def in_lez(self, lat, lng) -> np.ndarray:
        """bool array: inside the Antwerp LEZ (all parts, holes honoured; boundary counts as inside).

        Examples
        --------
        >>> engine.in_lez(51.2194, 4.4003)  # Groenplaats  # doctest: +SKIP
        array([ True])
        """
        s = _scalar(lat, lng)
        if s is not None:
            return np.array([self._lez.contains_one(s[1], s[0])])
        lat, lng = validate(lat, lng)
        return self._lez.contains(lng, lat)

    def river_side(self, lat, lng) -> np.ndarray:
        """int8 array of RIVER_NONE / RIVER_LEFT / RIVER_RIGHT (a point on both areas' shared edge: left).

        Examples
        --------
        >>> engine.river_side([51.2205, 51.2194], [4.3890, 4.4003])  # Linkeroever, Groenplaats  # doctest: +SKIP
        array([1, 2], dtype=int8)
        """
        s = _scalar(lat, lng)
        if s is not None:
            side = (
                RIVER_LEFT
                if self._left.contains_one(s[1], s[0])
                else (RIVER_RIGHT if self._right.contains_one(s[1], s[0]) else RIVER_NONE)
            )
            return np.array([side], dtype=np.int8)
        lat, lng = validate(lat, lng)
        out = np.zeros(lat.size, dtype=np.int8)
        out[self._right.contains(lng, lat)] = RIVER_RIGHT
        out[self._left.contains(lng, lat)] = RIVER_LEFT
        return out

    # --- nearest / radius ---------------------------------------------------------------------
    def nearest_station(self, lat, lng, pollutant: str = "no2"):
        """(idx int64 array into self.stations, haversine distance km float64 array)
        over stations measuring ``pollutant`` (column of the same name is True).

        Ties go to the lowest row; with no such station the answer is (-1, inf).
        Raises ``ValueError`` when ``stations`` has no bool column ``pollutant``.

        Examples
        --------
        >>> idx, km = engine.nearest_station(51.2194, 4.4003)  # doctest: +SKIP
        >>> engine.stations.loc[idx[0], "id"], round(float(km[0]), 2)  # doctest: +SKIP
        ('42R801', 1.2)
        """
        index = self._station_index(pollutant)
        s = _scalar(lat, lng)
        if s is not None:
            return index.nearest_one(*s)
        lat, lng = validate(lat, lng)
        return index.nearest(lat, lng)

    def _station_index(self, pollutant: str):
        index = self._stations.get(pollutant)
        if index is None:
            raise ValueError(f"unknown pollutant {pollutant!r}: stations has no bool column of that name")
        return index

    def prepare_nearest(self, pollutant: str = "no2", threads: int = 1) -> None:
        """Build the nearest-station lookup of ``pollutant`` now, its k-d tree queries on ``threads`` threads
        (-1: every core), instead of at the first array query (e.g. before forking workers that share it).
        The answers are the same either way.

        Examples
        --------
        >>> engine.prepare_nearest(threads=2)  # doctest: +SKIP
        """
        self._station_index(pollutant).nearest_grid(threads)

    def works_near(self, lat, lng, radius_km: float = 2.0):
        """Works within ``radius_km`` (inclusive) of each point: the distance to the work's extent (0 inside
        it, else to the nearest point of its boundary, never more than to its representative point;
        :mod:`geo.index.extents`), or to its point when it has no extent.

        A scalar point (``lat`` and ``lng`` 0-d: Python or NumPy numbers) gives ``(idx, km)``: int64 rows
        of ``self.works`` and float64 distances, sorted by (distance, id). Arrays of points (1-D, any
        length, also one) give a :class:`RadiusPairs` ``(point, idx, km)``: flat arrays, one element per
        pair, sorted by (point, distance, id); pairs are generated in bounded chunks, so memory beyond the
        result stays bounded.

        Examples
        --------
        >>> idx, km = engine.works_near(51.2194, 4.4003, 2.0)  # doctest: +SKIP
        >>> bool((km <= 2.0).all())  # doctest: +SKIP
        True
        >>> import geopandas as gpd
        >>> works = gpd.GeoDataFrame({"id": ["b", "a"]}, crs="EPSG:4326",
        ...                          geometry=gpd.points_from_xy([4.0, 4.0], [51.0, 51.01]))
        >>> eng = Engine.from_layers({"works": works}, {})
        >>> eng.works_near(51.0, 4.0, 2.0)[0].tolist()
        [0, 1]
        >>> point, idx, km = eng.works_near([51.0, 53.0, 51.01], [4.0, 4.0, 4.0], 2.0)
        >>> point.tolist(), idx.tolist(), km.round(3).tolist()
        ([0, 0, 2, 2], [0, 1, 1, 0], [0.0, 1.112, 0.0, 1.112])
        """
        return self._near(self._works, lat, lng, radius_km)

    def stops_near(self, lat, lng, radius_km: float):
        """Stops within ``radius_km``: ``(idx, km)`` for a scalar point, :class:`RadiusPairs`
        ``(point, idx, km)`` for arrays of points; as :meth:`works_near`.

        Examples
        --------
        >>> idx, km = engine.stops_near(51.2194, 4.4003, 0.4)  # doctest: +SKIP
        >>> point, idx, km = engine.stops_near([51.2194, 51.0543], [4.4003, 3.7174], 0.4)  # doctest: +SKIP
        """
        return self._near(self._stops, lat, lng, radius_km)

    def count_works_near(self, lat, lng, radius_km: float = 2.0, mask=None):
        """Many points, aggregated: (count int64 array, nearest_km float64 array with inf when none) over
        works where ``mask`` (bool array over self.works, default all) is True; distances as :meth:`works_near`.

        Examples
        --------
        >>> count, km = engine.count_works_near([51.2194, 51.0543], [4.4003, 3.7174])  # doctest: +SKIP
        """
        index = self._works if mask is None else self._works.subset(mask)
        radius = _radius(radius_km)
        s = _scalar(lat, lng)
        if s is not None:
            _, km = index.within(*s, radius)
            return np.array([km.size], dtype=np.int64), np.array([km.min() if km.size else np.inf])
        lat, lng = validate(lat, lng)
        return index.count_within(lat, lng, radius)

    def any_stop_near(self, lat, lng, radius_km: float) -> np.ndarray:
        """bool array: at least one stop within radius_km (haversine).

        Examples
        --------
        >>> engine.any_stop_near([51.2194], [4.4003], 0.4)  # doctest: +SKIP
        array([ True])
        """
        radius = _radius(radius_km)
        s = _scalar(lat, lng)
        if s is not None:
            return np.array([self._stops.within(*s, radius)[0].size > 0])
        lat, lng = validate(lat, lng)
        return self._stops.any_within(lat, lng, radius)

    # --- helpers ------------------------------------------------------------------------------
    @staticmethod
    def _near(index, lat, lng, radius_km):
        s = _scalar(lat, lng)
        if s is not None:
            return index.within(*s, _radius(radius_km))
        la, ln = validate(lat, lng)  # coordinates first, as before: InvalidCoordinates wins
        if np.ndim(lat) == 0 and np.ndim(lng) == 0:
            return index.within(float(la[0]), float(ln[0]), _radius(radius_km))
        return RadiusPairs(*index.within_many(la, ln, _radius(radius_km)))

    def __repr__(self):
        return (
            f"<Engine snapshot={self.snapshot_id[:12] or '?'} works={len(self.works)} "
            f"stops={len(self.stops)} stations={len(self.stations)}>"
        )


def extent_index(geoms: np.ndarray, ids=None, lat=None, lng=None) -> ExtentIndex:
    """The index :meth:`Engine.works_near` measures with, over an object array of geometries (their extents,
    located by their representative points): for callers holding extents outside a snapshot (the history's
    versions of works). ``extent_index(geoms, ids).within(lat, lng, radius_km)`` is ``works_near``'s answer.

    Examples
    --------
    >>> from shapely.geometry import Point
    >>> idx, km = extent_index(np.array([Point(4.0, 51.01), Point(4.0, 51.0)], dtype=object)).within(51.0, 4.0, 2.0)
    >>> idx.tolist(), km.round(3).tolist()
    ([1, 0], [0.0, 1.112])
    """
    if lat is None or lng is None:  # the extents' representative points, unless the caller holds them
        lat, lng = geometry_coords(geoms)
    return ExtentIndex(Extents(lat, lng, geoms if len(geoms) else None), ids)


def _check_layer(name: str, frame, lat, lng) -> None:
    """Raise ``InvalidCoordinates`` naming layer ``name`` when one of its located points or its extents'
    vertices is not a WGS84 (lat, lng)."""
    located = np.isfinite(lat) & np.isfinite(lng)
    if name in EXTENT_LAYERS and len(frame):  # every vertex of an extent too
        xy = shapely.get_coordinates(np.asarray(frame.geometry.values, dtype=object))
        lat, lng, located = (
            np.r_[lat, xy[:, 1]],
            np.r_[lng, xy[:, 0]],
            np.r_[located, np.ones(len(xy), bool)],
        )
    try:
        validate(lat[located], lng[located])
    except InvalidCoordinates as exc:
        raise InvalidCoordinates(f"layer {name}: {exc}") from None


def _passes(name: str):
    """Row-wise: whether the rows of a frame of layer ``name`` pass :func:`_check_layer` (all or none)."""

    def passes(frame) -> np.ndarray:
        try:
            _check_layer(name, frame, *point_coords(frame))
        except InvalidCoordinates:
            return np.zeros(len(frame), dtype=bool)  # a layer taken from these rows is checked on its own
        return np.ones(len(frame), dtype=bool)

    return passes


def _extents(frame) -> Extents:
    """The works' extents as :meth:`Engine.works_near` measures them (row-wise)."""
    geoms = np.asarray(frame.geometry.values, dtype=object)
    lat, lng = point_coords(frame)
    return Extents(lat, lng, geoms if len(geoms) else None)


def _id_texts(frame) -> np.ndarray:
    return frame["id"].astype(str).to_numpy()


def _read_only_points(frame):
    lat, lng = point_coords(frame)
    lat.flags.writeable = lng.flags.writeable = False
    return lat, lng


def _default_index(frame) -> bool:
    index = frame.index
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def _radius(radius_km) -> float:
    r = float(radius_km)
    if not math.isfinite(r) or r < 0:
        raise ValueError(f"radius_km must be a finite number >= 0, got {radius_km!r}")
    return r
