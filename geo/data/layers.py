"""The layers of a snapshot, declared once (data/README.md): name, columns, whether each row is located by
one point, the upstream source that feeds it and how old its live data may be before it is served.

The builder (:mod:`geo.data.snapshot`), the engine (:mod:`geo.data.engine`) and the app's sources and
freshness check (``app/sources``) all read :data:`DECLARED`. The declarations need no pandas: the two
functions that build frames import it, so the app's settings and freshness check load none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import geopandas as gpd
    import pandas as pd

CRS = "EPSG:4326"
#: the GeoParquet PROJJSON of :data:`CRS` every layer file carries (geopandas drops the ids of the
#: datum-ensemble members), written whatever CRS object the frame holds (docs/data.md, "Layer CRS")
CRS_PROJJSON: dict = {
    "$schema": "https://proj.org/schemas/v0.7/projjson.schema.json",
    "type": "GeographicCRS",
    "name": "WGS 84",
    "datum_ensemble": {
        "name": "World Geodetic System 1984 ensemble",
        "members": [
            {"name": "World Geodetic System 1984 (Transit)"},
            {"name": "World Geodetic System 1984 (G730)"},
            {"name": "World Geodetic System 1984 (G873)"},
            {"name": "World Geodetic System 1984 (G1150)"},
            {"name": "World Geodetic System 1984 (G1674)"},
            {"name": "World Geodetic System 1984 (G1762)"},
            {"name": "World Geodetic System 1984 (G2139)"},
            {"name": "World Geodetic System 1984 (G2296)"},
        ],
        "ellipsoid": {"name": "WGS 84", "semi_major_axis": 6378137, "inverse_flattening": 298.257223563},
        "accuracy": "2.0",
        "id": {"authority": "EPSG", "code": 6326},
    },
    "coordinate_system": {
        "subtype": "ellipsoidal",
        "axis": [
            {"name": "Geodetic latitude", "abbreviation": "Lat", "direction": "north", "unit": "degree"},
            {"name": "Geodetic longitude", "abbreviation": "Lon", "direction": "east", "unit": "degree"},
        ],
    },
    "scope": "Horizontal component of 3D system.",
    "area": "World.",
    "bbox": {"south_latitude": -90, "west_longitude": -180, "north_latitude": 90, "east_longitude": 180},
    "id": {"authority": "EPSG", "code": 4326},
}


@dataclass(frozen=True)
class Layer:
    """One layer of a snapshot."""

    name: str
    columns: tuple[str, ...]  # besides ``geometry``, in file order
    source: str | None = None  # the upstream source that feeds it (``app/sources/catalog.py``), if any
    freshness_s: int | None = None  # default limit on the age of its live data, in seconds (live layers)
    point: bool = False  # each row is located by one point (``point_on_surface``)
    extent: bool = False  # a polygon or line geometry is the row's extent (``geo.index.extents``)


#: every layer, in the order the engine builds them (a layer's indexes may use the layers before it)
DECLARED: tuple[Layer, ...] = (
    Layer("service_area", ("name",), source="boundary"),
    Layer("lez", ("name",), source="lez", freshness_s=30 * 86400),
    Layer("river", ("part", "name")),
    Layer(
        "stations",
        ("id", "eoi_code", "name", "station_type", "area_type", "no2"),
        source="ircel",
        freshness_s=7 * 86400,
        point=True,
    ),
    Layer(
        "stops",
        ("id", "entity", "number", "name", "municipality", "lines", "line_ids"),
        source="delijn",
        freshness_s=7 * 86400,
        point=True,
    ),
    Layer(
        "works",
        (
            "id",
            "description",
            "status",
            "type",
            "owner",
            "start",
            "end",
            "occurrences",
            "hindrance",
            "consequences",
        ),
        source="gipod",
        freshness_s=6 * 3600,
        point=True,
        extent=True,
    ),
    Layer(
        "detours",
        (
            "id",
            "title",
            "description",
            "type",
            "entity",
            "region",
            "lines",
            "line_details",
            "unserved_stops",
            "start",
            "end",
            "days",
            "delay_min",
        ),
        source="delijn",
        freshness_s=30 * 60,
        point=True,
    ),
    Layer("no2", ("station_id", "timestamp", "value", "kind"), source="ircel", freshness_s=3 * 3600),
)

#: columns per layer, besides ``geometry``, in file order
SCHEMAS: dict[str, tuple[str, ...]] = {layer.name: layer.columns for layer in DECLARED}
#: every layer of a snapshot, sorted by name (the order of the snapshot id hash)
LAYERS: tuple[str, ...] = tuple(sorted(SCHEMAS))
#: the layers located by one point each
POINT_LAYERS: tuple[str, ...] = tuple(layer.name for layer in DECLARED if layer.point)
#: the layers whose polygon or line geometry is the row's extent
EXTENT_LAYERS: tuple[str, ...] = tuple(layer.name for layer in DECLARED if layer.extent)
#: upstream source of each layer fed by one
LAYER_SOURCE: dict[str, str] = {layer.name: layer.source for layer in DECLARED if layer.source}
#: default freshness limits, in seconds, of the live layers (``URBAN_FRESHNESS`` overrides them)
FRESHNESS_S: dict[str, int] = {layer.name: layer.freshness_s for layer in DECLARED if layer.freshness_s}

TIME_COLUMNS = {"works": ("start", "end"), "detours": ("start", "end"), "no2": ("timestamp",)}
FLOAT_COLUMNS = {"no2": ("value",), "detours": ("delay_min",)}
BOOL_COLUMNS = {"stations": ("no2",)}
#: integer columns and the value an absent entry takes
INT_COLUMNS = {"works": {"occurrences": 1, "hindrance": -1}}

NO2_KINDS = ("measured", "modelled", "estimated")


def to_utc(values) -> pd.Series:
    """Timestamps (datetime, ISO strings, None) to a ``datetime64[ms, UTC]`` Series; None -> NaT.

    Examples
    --------
    >>> to_utc(["2026-11-16T07:00:00Z", None]).tolist()
    [Timestamp('2026-11-16 07:00:00+0000', tz='UTC'), NaT]
    """
    import pandas as pd

    return pd.Series(pd.to_datetime(list(values), utc=True, format="ISO8601"), dtype="datetime64[ms, UTC]")


def frame(layer: str, records: dict, geometry) -> gpd.GeoDataFrame:
    """Build a layer with exactly the schema's columns and dtypes, CRS EPSG:4326 and a RangeIndex.

    ``records`` maps column name to a sequence of equal length; absent text columns become ``""``,
    absent float columns NaN, absent time columns NaT, absent integer columns their default
    (:data:`INT_COLUMNS`).

    Examples
    --------
    >>> from shapely import Point
    >>> frame("lez", {"name": ["x"]}, [Point(4.4, 51.2)]).columns.tolist()
    ['name', 'geometry']
    """
    import geopandas as gpd
    import numpy as np
    import pandas as pd

    geometry = list(geometry)
    n = len(geometry)
    data = {}
    for col in SCHEMAS[layer]:
        values = records.get(col)
        values = [None] * n if values is None else list(values)
        if len(values) != n:
            raise ValueError(f"{layer}.{col}: {len(values)} values for {n} geometries")
        if col in TIME_COLUMNS.get(layer, ()):
            data[col] = to_utc(values)
        elif col in FLOAT_COLUMNS.get(layer, ()):
            data[col] = pd.Series([np.nan if v is None else float(v) for v in values], dtype="float64")
        elif col in INT_COLUMNS.get(layer, {}):
            default = INT_COLUMNS[layer][col]
            data[col] = pd.Series([default if v is None else int(v) for v in values], dtype="int64")
        elif col in BOOL_COLUMNS.get(layer, ()):
            data[col] = pd.Series([bool(v) for v in values], dtype="bool")
        else:
            data[col] = pd.Series(["" if v is None else str(v) for v in values], dtype="str")
    return gpd.GeoDataFrame(pd.DataFrame(data), geometry=gpd.GeoSeries(geometry, crs=CRS), crs=CRS)
