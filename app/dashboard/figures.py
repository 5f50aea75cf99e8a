"""The figures of one point, computed by the same ``geo`` calls as the API, plus the map features to draw.

``point_figures`` returns exactly the bodies of ``GET /disruptions`` (without ``location``),
``GET /air-quality`` and ``GET /briefing`` for the same point, snapshot and clock (a test compares them).
"""

from __future__ import annotations

import numpy as np

RUNNING = "In uitvoering"


def point_figures(engine, lat: float, lng: float, now, settings=None, lang: str = "nl") -> dict:
    """``{"disruptions": …, "airQuality": …, "briefing": …}`` as the API computes them (with ``sources``),
    their generated texts in ``lang`` (as the API's for that ``Accept-Language``)."""
    from geo.service.air import air_quality
    from geo.service.briefing import briefing
    from geo.service.disruptions import disruptions

    from app.api.data import by_path
    from ..sources.serving import answer_sources, current_settings

    settings = settings or current_settings()
    out = {}
    for key, path, compute in (
        ("disruptions", "/disruptions", disruptions),
        ("airQuality", "/air-quality", air_quality),
        ("briefing", "/briefing", briefing),
    ):
        endpoint = by_path(path)
        body = (
            compute(engine, lat, lng, now, lang)  # type: ignore[call-arg]  # the translated ones take a language
            if endpoint.translated
            else compute(engine, lat, lng, now)
        )
        body["sources"] = answer_sources(engine, endpoint.layers, now, settings)
        out[key] = body
    return out


def daytime_window(engine, lat: float, lng: float, now):
    """The quietest daytime 2-hour window the pages propose (``{start, end, score}`` or None; docs/dashboard.md)."""
    from geo.service.briefing import daytime_window as compute

    return compute(engine, lat, lng, now)


def demo_clock(figures: dict, data_clock, wall_clock):
    """``{"when": data clock, "days": whole days it lies behind the wall clock}`` when a source of the figures
    is demo data (the banner of the pages), else None."""
    if not any(s.get("kind") == "demo" for s in all_sources(figures)):
        return None
    return {"when": data_clock, "days": max(0, (wall_clock - data_clock).days)}


def all_sources(figures: dict) -> list:
    """The sources of a point's three answers, each once, in order of first appearance (for the pages)."""
    seen: dict = {}
    for body in figures.values():
        for s in body.get("sources") or []:
            seen.setdefault(s["source"], s)
    return list(seen.values())


def _feature(lng: float, lat: float, props: dict) -> dict:
    return {
        "type": "Feature",
        "geometry": {"type": "Point", "coordinates": [round(float(lng), 6), round(float(lat), 6)]},
        "properties": props,
    }


def _rows_by_id(frame, ids) -> dict:
    if not len(frame) or "id" not in frame.columns:
        return {}
    wanted = set(ids)
    mask = frame["id"].astype(str).isin(wanted).to_numpy()
    sub = frame[mask]
    return {str(i): row for i, row in zip(sub["id"].astype(str), sub.itertuples(index=False))}


def detour_stops(engine, transit: list) -> dict:
    """detour id → its unserved stops ``[{id, name, lat, lng}]`` (from the snapshot's detour and stop layers)."""
    detours = _rows_by_id(engine.detours, [t["id"] for t in transit])
    stop_ids = {
        s for row in detours.values() for s in str(getattr(row, "unserved_stops", "") or "").split(",") if s
    }
    stops = _rows_by_id(engine.stops, stop_ids)
    out = {}
    for detour_id, row in detours.items():
        listed = [s for s in str(getattr(row, "unserved_stops", "") or "").split(",") if s in stops]
        out[detour_id] = [
            {
                "id": s,
                "name": str(stops[s].name),
                "lat": round(stops[s].geometry.y, 6),
                "lng": round(stops[s].geometry.x, 6),
            }
            for s in listed
        ]
    return out


def station_point(engine, station_id: str):
    """(lat, lng) of a measuring station, or None."""
    row = _rows_by_id(engine.stations, [station_id]).get(station_id)
    if row is None or row.geometry is None or row.geometry.is_empty:
        return None
    return round(row.geometry.y, 6), round(row.geometry.x, 6)


def map_features(engine, lat: float, lng: float, figures: dict) -> dict:
    """GeoJSON of what the map draws for the point: the point, its works, the station, the detour stops."""
    feats = [_feature(lng, lat, {"kind": "point"})]
    for w in figures["disruptions"]["construction"]:
        feats.append(
            _feature(
                w["lng"],
                w["lat"],
                {
                    "kind": "work",
                    "id": w["id"],
                    "running": w["status"] == RUNNING,
                    "status": w["status"],
                    "description": w["description"],
                    "distanceKm": w["distanceKm"],
                    "hindered": w.get("hindrance") is not None,
                    "severe": bool((w.get("hindrance") or {}).get("severe")),
                    "consequences": list((w.get("hindrance") or {}).get("consequences") or []),
                    "startDate": w.get("startDate"),
                    "endDate": w.get("endDate"),
                },
            )
        )
    reading = figures["airQuality"].get("reading") or {}
    station = reading.get("station") or {}
    where = station_point(engine, station["id"]) if station.get("id") else None
    if where is not None:
        feats.append(
            _feature(
                where[1],
                where[0],
                {
                    "kind": "station",
                    "id": station["id"],
                    "name": station.get("name"),
                    "value": reading.get("value"),
                },
            )
        )
    severity = {t["id"]: t["severity"] for t in figures["disruptions"]["transit"]}
    for detour_id, stops in detour_stops(engine, figures["disruptions"]["transit"]).items():
        for s in stops:
            feats.append(
                _feature(
                    s["lng"],
                    s["lat"],
                    {
                        "kind": "stop",
                        "id": s["id"],
                        "name": s["name"],
                        "detour": detour_id,
                        "severity": severity.get(detour_id),
                    },
                )
            )
    return {"type": "FeatureCollection", "features": feats}


def is_finite(value) -> bool:
    """True for a real number (used by templates to tell an unknown reading)."""
    return value is not None and bool(np.isfinite(value))
