"""Layer names and column schemas of a snapshot (data/README.md), shared by the builder and the reader."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd

CRS = "EPSG:4326"

#: columns per layer, besides ``geometry``, in file order
SCHEMAS: dict[str, tuple[str, ...]] = {
    "service_area": ("name",),
    "lez": ("name",),
    "river": ("part", "name"),
    "stations": ("id", "eoi_code", "name", "station_type", "area_type", "no2"),
    "stops": ("id", "entity", "number", "name", "municipality", "lines", "line_ids"),
    "works": (
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
    "detours": (
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
    "no2": ("station_id", "timestamp", "value", "kind"),
}

#: every layer of a snapshot, sorted by name (the order of the snapshot id hash)
LAYERS: tuple[str, ...] = tuple(sorted(SCHEMAS))

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
