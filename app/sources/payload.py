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
            raise PayloadError(
                f"expected an object with {', '.join(map(repr, missing))}, got keys {sorted(payload)[:8]}"
            )
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


def fetch_geojson_layer(
    up,
    source: str,
    url: str,
    *,
    layer: str,
    kind: str,
    label: str,
    normaliser: Callable[[Any], Any],
    expire_after,
    params: dict | None = None,
    endpoint: str = "",
) -> SourceData:
    """GET one GeoJSON FeatureCollection, check it normalises, and wrap it as ``raw[kind]`` for ``layer``.

    A payload the normaliser refuses is an ``UpstreamError`` naming ``label``; nothing is kept from it.
    """
    got = up.get_json(
        source,
        url,
        params=params,
        headers={"Accept": "application/geo+json, application/json"},
        expire_after=expire_after,
        check=feature_collection,
        endpoint=endpoint,
    )
    try:
        normaliser(got.payload)
    except UpstreamFormatError as exc:
        raise UpstreamError(source, f"{label}: unusable payload ({exc})") from None
    return SourceData(
        source,
        raw={kind: got.payload},
        retrieved_at={layer: got.retrieved_at},
        requests=1,
        from_cache=int(got.from_cache),
    )


#: skip reasons that are filters by design, not loss of records: GIPOD events and other occupations that are
#: not road works, hindrances not (yet) validated, a stop's line directions whose public number is unknown or
#: whose line does not run yet (counted per direction), and the lines of a kept detour that no line list holds
#: (counted per line)
INFORMATIONAL = frozenset(
    {
        ("works", "event"),
        ("works", "not_a_work"),
        ("works", "hindrance_not_validated"),
        ("stops", "line_unknown"),
        ("stops", "line_not_yet_valid"),
        ("detours", "line_not_found"),
    }
)


def check_skipped(source: str, label: str, layers: dict, settings) -> None:
    """Fail the source (``UpstreamError``, like an unreachable one) when too many of its records were skipped.

    ``layers`` maps layer name to the normalised layer (its ``attrs["skipped"]`` holds ``{reason: n}``). The
    source fails when at least ``settings.skip_min`` records were skipped and they are more than
    ``settings.skip_share`` of the records read (kept + skipped); :data:`INFORMATIONAL` reasons do not count.

    Examples
    --------
    >>> import geopandas as gpd
    >>> from app.sources.settings import SourceSettings
    >>> layer = gpd.GeoDataFrame({"id": ["1"] * 5}, geometry=gpd.points_from_xy([4.4] * 5, [51.2] * 5))
    >>> layer.attrs["skipped"] = {"stop_not_found": 20}
    >>> check_skipped("delijn", "De Lijn", {"detours": layer}, SourceSettings())
    Traceback (most recent call last):
    ...
    app.sources.errors.UpstreamError: De Lijn: 20 of 25 records skipped (detours stop_not_found: 20), more than the 20 % allowed (URBAN_SKIP_SHARE); the upstream format may have changed
    """
    kept = skipped = 0
    parts = []
    for name, layer in layers.items():
        kept += len(layer)
        for reason, n in sorted((layer.attrs.get("skipped") or {}).items()):
            if (name, reason) in INFORMATIONAL:
                continue
            skipped += int(n)
            parts.append(f"{name} {reason}: {n}")
    total = kept + skipped
    if skipped >= settings.skip_min and total and skipped > settings.skip_share * total:
        raise UpstreamError(
            source,
            f"{label}: {skipped} of {total} records skipped ({', '.join(parts)}), more "
            f"than the {settings.skip_share * 100:g} % allowed (URBAN_SKIP_SHARE); the "
            f"upstream format may have changed",
        )
