"""The base map: our own vector layers as GeoJSON (no tiles needed, no internet).

Service-area boundary, LEZ and river come from the engine's snapshot; municipality borders (Flanders and
Brussels only) from the reference file ``MUNICIPALITIES_FILE`` (optional: left out when absent).
Geometries are simplified for drawing (about 20 m) and built once per snapshot, never per request.
"""

from __future__ import annotations

import json
import logging
import os

import shapely
from shapely.ops import polylabel

log = logging.getLogger(__name__)

TOLERANCE = 0.0002  # degrees (~20 m): drawing precision, not used for any computation
REGIONS = {"02000", "04000"}  # Flemish Region, Brussels-Capital Region


def _geojson(geom) -> dict:
    geom = shapely.set_precision(shapely.simplify(geom, TOLERANCE, preserve_topology=True), 1e-5)
    return json.loads(shapely.to_geojson(geom))


def _frame_features(frame, layer: str, name_col: str = "name", extra=None) -> list:
    out = []
    for row in frame.itertuples(index=False):
        if row.geometry is None or row.geometry.is_empty:
            continue
        props = {"layer": layer, "name": str(getattr(row, name_col, "") or "")}
        props.update(extra(row) if extra else {})
        out.append({"type": "Feature", "geometry": _geojson(row.geometry), "properties": props})
    return out


def municipalities(path) -> list:
    """Municipality borders of Flanders and Brussels from the reference GeoJSON ([] when unavailable)."""
    if not path or not os.path.isfile(path):
        log.info("no municipalities file at %s: the base map goes without municipality borders", path)
        return []
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    out = []
    for feat in data.get("features", []):
        props = feat.get("properties") or {}
        if props.get("reg_nis") not in REGIONS or not feat.get("geometry"):
            continue
        geom = shapely.from_geojson(json.dumps(feat["geometry"]))
        out.append(
            {
                "type": "Feature",
                "geometry": _geojson(geom),
                "properties": {
                    "layer": "municipality",
                    "name": official_name(props),
                    "population": int(props.get("population") or 0),
                    "labelAt": _label_at(geom),
                },
            }
        )
    return out


def official_name(props: dict) -> str:
    """A municipality's official name(s): Dutch in Flanders, ``nl / fr`` in bilingual Brussels.

    Examples
    --------
    >>> official_name({"name_nl": "Elsene", "name_fr": "Ixelles", "reg_nis": "04000"})
    'Elsene / Ixelles'
    >>> official_name({"name_nl": "Antwerpen", "name_fr": "Anvers", "reg_nis": "02000"})
    'Antwerpen'
    """
    nl, fr = props.get("name_nl") or "", props.get("name_fr") or ""
    return f"{nl} / {fr}" if props.get("reg_nis") == "04000" and fr and fr != nl else nl


def _label_at(geom) -> list:
    """[lng, lat] inside the municipality where its name is written (its largest part's pole)."""
    part = max(getattr(geom, "geoms", [geom]), key=lambda p: p.area)
    at = polylabel(part, tolerance=0.001) if part.geom_type == "Polygon" else part.representative_point()
    return [round(at.x, 5), round(at.y, 5)]


def build(engine, municipalities_path) -> dict:
    """The FeatureCollection drawn under every map (layers: boundary, municipality, lez, river)."""
    feats = _frame_features(engine.service_area, "boundary")
    feats += municipalities(municipalities_path)
    feats += _frame_features(engine.lez, "lez")
    if "part" in engine.river.columns:
        feats += _frame_features(engine.river, "river", extra=_river_props)
    return {"type": "FeatureCollection", "features": feats}


def _river_props(row) -> dict:
    """The river part; the centerline also says where the river's name is written (its middle)."""
    props: dict = {"part": str(row.part)}
    if props["part"] == "centerline":
        mid = row.geometry.interpolate(0.5, normalized=True)
        props["labelAt"] = [round(mid.x, 5), round(mid.y, 5)]
    return props


def default_municipalities_path(config) -> str:
    """``MUNICIPALITIES_FILE``, else the reference copy under ``URBAN_REFERENCE_DIR``."""
    if config.get("MUNICIPALITIES_FILE"):
        return config["MUNICIPALITIES_FILE"]
    from app.sources.settings import SourceSettings

    reference = SourceSettings.from_config(config).reference_dir
    return os.path.join(reference, "boundaries", "be_municipalities_2019.geojson")


def for_engine(app, engine) -> bytes:
    """The base map of ``engine`` as JSON bytes, built once per snapshot and cached on the app."""
    cache = app.extensions.setdefault("dashboard", {"basemap": {}})["basemap"]
    key = getattr(engine, "snapshot_id", None) or id(engine)
    if key not in cache:
        body = build(engine, default_municipalities_path(app.config))
        cache.clear()  # keep only the current snapshot's
        cache[key] = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    return cache[key]
