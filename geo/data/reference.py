"""Readers for the published reference files (``--reference DIR``, normally ``../shared/data``).

The files are read in their published formats (GeoJSON, CSV) and never copied into the project.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import geopandas as gpd
import shapely
from shapely.geometry import shape

from ..errors import SnapshotError
from .layers import CRS, frame

SERVICE_AREA = "boundaries/flanders_brussels_union.geojson"
LEZ = "lez/antwerp_lez_official_simplified.geojson"
STATIONS = "air/irceline_stations.csv"
CENTERLINE = "river/scheldt_antwerp_centerline_approx.geojson"
AREA_MUNICIPALITIES = "river/antwerp_area_municipalities_bank.geojson"
MUNICIPALITIES = "boundaries/be_municipalities_2019.geojson"

GADM_LICENCE = (
    "GADM-derived geometry: non-commercial use only, no redistribution without permission "
    "(development and tests only; replace with Statbel/NGI or OSM ODbL boundaries in production)"
)

#: manifest source and licence of each reference file
META = {
    SERVICE_AREA: {
        "source": f"arneh61/Belgium-Map Gewesten.json (GADM), dissolve of BE-VLG and BE-BRU ({SERVICE_AREA})",
        "licence": GADM_LICENCE,
    },
    LEZ: {
        "source": "Stad Antwerpen ArcGIS P_Portal/portal_publiek4/MapServer/283 via "
        f"ristoword/MilieuAlert, simplified, holes dropped ({LEZ})",
        "licence": "Modellicentie Gratis Hergebruik v1.0 (Stad Antwerpen open data), attribution required",
    },
    STATIONS: {
        "source": f"IRCEL-CELINE stations via jorisvandenbossche/ircelsos (2020), NO2 flags from 2015 "
        f"SOS capabilities ({STATIONS})",
        "licence": "CC BY 4.0, IRCEL-CELINE",
    },
    CENTERLINE: {
        "source": f"hand-digitised approximate Scheldt centreline, ~150 m accuracy ({CENTERLINE}); "
        f"zone clipped to {AREA_MUNICIPALITIES}",
        "licence": "centreline: own work; municipalities: " + GADM_LICENCE,
    },
    MUNICIPALITIES: {
        "source": f"bmesuere/belgium-topojson municipalities 2019, population 2020 ({MUNICIPALITIES})",
        "licence": GADM_LICENCE + "; attributes Statbel, CC0",
    },
}


def path_of(reference_dir, relpath: str) -> Path:
    """Absolute path of a reference file; raises ``SnapshotError`` naming it when absent.

    Examples
    --------
    >>> path_of("/nonexistent", LEZ)
    Traceback (most recent call last):
    ...
    geo.errors.SnapshotError: reference file /nonexistent/lez/antwerp_lez_official_simplified.geojson ...
    """
    p = Path(reference_dir) / relpath
    if not p.is_file():
        raise SnapshotError(
            f"reference file {p} is missing: pass --reference pointing at the shared data directory "
            f"(e.g. `python -m geo.data build --reference ../shared/data --out data/snapshot`)"
        )
    return p


def read_geojson(reference_dir, relpath: str) -> dict:
    """Parse a reference GeoJSON file into a dict."""
    p = path_of(reference_dir, relpath)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SnapshotError(
            f"reference file {p} is not valid JSON ({exc}); restore it from the shared data set"
        ) from None


def union_geometry(feature_collection: dict):
    """Union of every feature's geometry, made valid, as a (Multi)Polygon or LineString."""
    geoms = [
        shapely.make_valid(shape(f["geometry"]))
        for f in feature_collection.get("features", [])
        if f.get("geometry")
    ]
    if not geoms:
        raise ValueError("FeatureCollection without geometries")
    return shapely.union_all(geoms)


def as_multipolygon(geom) -> shapely.MultiPolygon:
    """Polygonal parts of ``geom`` as one MultiPolygon (lines and points dropped)."""
    parts = [g for g in shapely.get_parts(geom) if g.geom_type in ("Polygon", "MultiPolygon")]
    polys: list[shapely.Polygon] = []
    for p in parts:
        polys.extend(shapely.get_parts(p) if p.geom_type == "MultiPolygon" else [p])
    return shapely.MultiPolygon(polys)


def service_area(reference_dir) -> gpd.GeoDataFrame:
    """``service_area`` layer: Flanders ∪ Brussels as one MultiPolygon."""
    geom = as_multipolygon(union_geometry(read_geojson(reference_dir, SERVICE_AREA)))
    return frame("service_area", {"name": ["Vlaams Gewest + Brussels Hoofdstedelijk Gewest"]}, [geom])


def lez(reference_dir) -> gpd.GeoDataFrame:
    """``lez`` layer from the official (simplified) Antwerp LEZ, through the live normaliser."""
    from .upstream import normalise_lez

    return normalise_lez(read_geojson(reference_dir, LEZ))


def repair_text(text: str) -> str:
    """Undo UTF-8 read as Latin-1 (``"LiÃ¨ge"`` -> ``"Liège"``), as found in the published station list.

    Examples
    --------
    >>> repair_text("LiÃ¨ge"), repair_text("Liège")
    ('Liège', 'Liège')
    """
    if "Ã" not in text and "Â" not in text:
        return text
    try:
        return text.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return text


def stations(reference_dir) -> gpd.GeoDataFrame:
    """``stations`` layer from the IRCEL station CSV; ``no2`` is the 2015 NO2 flag.

    All 128 published stations (Brussels, Flanders and Wallonia networks) are kept; names garbled by a
    double UTF-8 encoding in the published file are repaired.
    """
    p = path_of(reference_dir, STATIONS)
    with p.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    need = {"station_code", "eoi_code", "location", "station_type", "area_type", "lon", "lat", "no2_2015"}
    if not rows or not need <= set(rows[0]):
        raise SnapshotError(
            f"reference file {p} lacks the columns {sorted(need)}; restore it from the shared data set"
        )
    rows.sort(key=lambda r: r["station_code"])
    return frame(
        "stations",
        {
            "id": [r["station_code"] for r in rows],
            "eoi_code": [r["eoi_code"] for r in rows],
            "name": [repair_text(r["location"]) for r in rows],
            "station_type": [r["station_type"] for r in rows],
            "area_type": [r["area_type"] for r in rows],
            "no2": [r["no2_2015"].strip() == "1" for r in rows],
        },
        shapely.points([float(r["lon"]) for r in rows], [float(r["lat"]) for r in rows]),
    )


def centerline(reference_dir) -> shapely.LineString:
    """The approximate Scheldt centreline (north-west/downstream first)."""
    geom = union_geometry(read_geojson(reference_dir, CENTERLINE))
    if geom.geom_type != "LineString":
        geom = shapely.line_merge(geom)
    return geom


def municipalities(reference_dir, relpath: str = MUNICIPALITIES) -> gpd.GeoDataFrame:
    """Municipalities with ``nis``, ``name_nl``, ``reg_nis``, ``prov_nis``, ``population`` (+ extra props)."""
    fc = read_geojson(reference_dir, relpath)
    props = [f["properties"] for f in fc["features"]]
    geoms = [shapely.make_valid(shape(f["geometry"])) for f in fc["features"]]
    gdf = gpd.GeoDataFrame(props, geometry=geoms, crs=CRS)
    return gdf.sort_values("nis", kind="stable").reset_index(drop=True)
