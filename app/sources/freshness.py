"""Freshness limits: a live layer older than its limit means its source keeps failing → 502 ``upstream_error``.

Only layers of kind ``live`` are checked (reference files and the demo scenario have no upstream to fail).
The age is the wall clock minus the layer's ``retrievedAt`` in the manifest; limits are per layer, in seconds,
configurable with ``URBAN_FRESHNESS`` (defaults in the layer declaration,
:data:`geo.data.layers.FRESHNESS_S`, documented in
``docs/sources.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Iterable, Mapping

from geo.data.layers import LAYER_SOURCE

from .catalog import SOURCES
from .errors import UpstreamError


@dataclass(frozen=True)
class Stale:
    """One live layer past its freshness limit."""

    layer: str
    source: str
    retrieved_at: datetime
    age_s: float
    limit_s: float


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(str(ts).replace("Z", "+00:00"))


def stale_layers(
    manifest: Mapping, layers: Iterable[str], now: datetime, limits: Mapping[str, float]
) -> list[Stale]:
    """The live layers among ``layers`` whose ``retrievedAt`` is more than their limit before ``now``.

    Examples
    --------
    >>> m = {"layers": {"no2": {"kind": "live", "retrievedAt": "2026-11-16T07:00:00.000Z"}}}
    >>> now = datetime.fromisoformat("2026-11-16T11:00:00+00:00")
    >>> [(s.layer, s.source, s.age_s) for s in stale_layers(m, ["no2"], now, {"no2": 3 * 3600})]
    [('no2', 'ircel', 14400.0)]
    """
    out = []
    entries = manifest.get("layers") or {}
    for layer in layers:
        entry = entries.get(layer) or {}
        if entry.get("kind") != "live" or layer not in limits:
            continue
        retrieved = _parse(entry["retrievedAt"])
        age = (now - retrieved).total_seconds()
        if age > limits[layer]:
            out.append(Stale(layer, LAYER_SOURCE.get(layer, "?"), retrieved, age, float(limits[layer])))
    return out


def fresh_until(manifest: Mapping, layers: Iterable[str], limits: Mapping[str, float]) -> datetime | None:
    """The instant after which :func:`stale_layers` may report one of ``layers`` (None: never).

    A per-engine constant, so the per-request check is one comparison; the exact check runs only near
    or past it.

    Examples
    --------
    >>> m = {"layers": {"no2": {"kind": "live", "retrievedAt": "2026-11-16T07:00:00.000Z"}}}
    >>> fresh_until(m, ["no2", "lez"], {"no2": 3 * 3600}).isoformat()
    '2026-11-16T10:00:00+00:00'
    """
    out = None
    entries = manifest.get("layers") or {}
    for layer in layers:
        entry = entries.get(layer) or {}
        if entry.get("kind") != "live" or layer not in limits:
            continue
        until = _parse(entry["retrievedAt"]) + timedelta(seconds=limits[layer])
        out = until if out is None else min(out, until)
    return out


def stale_error(stale: list[Stale]) -> UpstreamError:
    """The ``UpstreamError`` naming every failing source and how old its data is."""
    parts = []
    for s in stale:
        label = SOURCES[s.source].label if s.source in SOURCES else s.source
        parts.append(
            f"{label}: layer '{s.layer}' last retrieved {s.retrieved_at:%Y-%m-%dT%H:%M:%SZ} "
            f"({_human(s.age_s)} ago, freshness limit {_human(s.limit_s)})"
        )
    return UpstreamError(
        stale[0].source,
        "upstream source failing, data too old to serve: " + "; ".join(parts) + ". Retry shortly.",
        retry_after=60,
    )


def check(manifest: Mapping, layers: Iterable[str], now: datetime, limits: Mapping[str, float]) -> None:
    """Raise ``UpstreamError`` when any of ``layers`` is stale (see :func:`stale_layers`)."""
    stale = stale_layers(manifest, layers, now, limits)
    if stale:
        raise stale_error(stale)


def _human(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} d"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
