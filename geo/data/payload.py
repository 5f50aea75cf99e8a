"""Shared pieces of the upstream readers (:mod:`geo.data.upstream`, :mod:`geo.data.upstream_delijn`,
:mod:`geo.data.upstream_gipod`): the format error, the items of a payload, De Lijn's coordinate field."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import GeoError


class UpstreamFormatError(GeoError, ValueError):
    """An upstream payload is not in the expected format (the message says what was expected)."""


def items(payload, key: str, what: str) -> list:
    """Items of ``payload[key]``; ``payload`` may be the container dict, a list of containers (pages) or
    a bare list of items."""
    if isinstance(payload, Mapping):
        if key not in payload:
            raise UpstreamFormatError(
                f"{what}: expected an object with a '{key}' array, got keys {sorted(payload)[:8]}"
            )
        found = payload[key]
        if found is None:
            return []
        if not isinstance(found, list):
            raise UpstreamFormatError(f"{what}: '{key}' must be an array")
        return found
    if isinstance(payload, list):
        if all(isinstance(p, Mapping) and key in p for p in payload) and payload:
            return [item for page in payload for item in items(page, key, what)]
        return payload
    raise UpstreamFormatError(f"{what}: expected a JSON object or array, got {type(payload).__name__}")


def parse_geo_coordinaat(value):
    """De Lijn ``geoCoordinaat`` -> (lat, lon) floats, or None when unusable.

    Accepts the schema's object ``{"latitude": .., "longitude": ..}`` and the examples' string ``"lat,lon"``.

    Examples
    --------
    >>> parse_geo_coordinaat("50.98145261213046,4.823559183763914")
    (50.98145261213046, 4.823559183763914)
    >>> parse_geo_coordinaat({"latitude": 51.221, "longitude": 4.421})
    (51.221, 4.421)
    """
    try:
        if isinstance(value, Mapping):
            lat, lon = float(value["latitude"]), float(value["longitude"])
        elif isinstance(value, str):
            lat_s, lon_s = value.split(",")
            lat, lon = float(lat_s), float(lon_s)
        else:
            return None
    except (KeyError, ValueError, TypeError):
        return None
    if not (np.isfinite(lat) and np.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
        return None
    return lat, lon
