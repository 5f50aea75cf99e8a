"""What an adapter hands back, and the shape checks every payload passes before it is accepted."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

from geo.data.upstream import UpstreamFormatError

from .errors import UpstreamError
from .http import PayloadError


@dataclass
class SourceData:
    """Raw payloads of one source, keyed as ``geo.data.snapshot.build_layers(raw=...)`` expects them.

    ``retrieved_at`` maps each layer this source feeds to the real retrieval time of its oldest payload.
    """

    source: str
    raw: dict[str, Any] = field(default_factory=dict)
    retrieved_at: dict[str, datetime] = field(default_factory=dict)
    requests: int = 0
    from_cache: int = 0


def object_with(*keys: str, arrays: tuple[str, ...] = ()) -> Callable[[Any], None]:
    """A check: the payload is a JSON object with ``keys``; the members in ``arrays`` are lists (or null).

    Examples
    --------
    >>> object_with("haltes", arrays=("haltes",))({"haltes": []})
    >>> object_with("haltes")({"x": 1})
    Traceback (most recent call last):
    ...
    app.sources.http.PayloadError: expected an object with 'haltes', got keys ['x']
    """

    def check(payload: Any) -> None:
        if not isinstance(payload, dict):
            raise PayloadError(f"expected a JSON object, got {type(payload).__name__}")
        missing = [k for k in keys if k not in payload]
        if missing:
            raise PayloadError(f"expected an object with {', '.join(map(repr, missing))}, "
                               f"got keys {sorted(payload)[:8]}")
        for k in arrays:
            if payload.get(k) is not None and not isinstance(payload[k], list):
                raise PayloadError(f"'{k}' must be an array")

    return check


def feature_collection(payload: Any) -> None:
    """A check: a GeoJSON FeatureCollection with a ``features`` array."""
    object_with("features", arrays=("features",))(payload)
    if payload.get("type") not in (None, "FeatureCollection"):
        raise PayloadError(f"expected a FeatureCollection, got type {payload.get('type')!r}")


def array_of_objects(payload: Any) -> None:
    """A check: a bare JSON array of objects (IRCEL SOS lists)."""
    if not isinstance(payload, list):
        raise PayloadError(f"expected a JSON array, got {type(payload).__name__}")
    if any(not isinstance(item, dict) for item in payload):
        raise PayloadError("expected an array of objects")


def fetch_geojson_layer(up, source: str, url: str, *, layer: str, kind: str, label: str,
                        normaliser: Callable[[Any], Any], expire_after, params: dict | None = None) -> SourceData:
    """GET one GeoJSON FeatureCollection, check it normalises, and wrap it as ``raw[kind]`` for ``layer``.

    A payload the normaliser refuses is an ``UpstreamError`` naming ``label``; nothing is kept from it.
    """
    got = up.get_json(source, url, params=params, headers={"Accept": "application/geo+json, application/json"},
                      expire_after=expire_after, check=feature_collection)
    try:
        normaliser(got.payload)
    except UpstreamFormatError as exc:
        raise UpstreamError(source, f"{label}: unusable payload ({exc})") from None
    return SourceData(source, raw={kind: got.payload}, retrieved_at={layer: got.retrieved_at},
                      requests=1, from_cache=int(got.from_cache))
