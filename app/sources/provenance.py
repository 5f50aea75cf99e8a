"""Whose data an answer is and how fresh it is: the ``sources`` member of every data answer.

For each upstream source behind an answer (the sources of the layers its endpoint reads, in that order), one
object: the source, its attribution and licence (:mod:`app.sources.catalog`), the kind of its layers in the
snapshot, and four times:

- ``observedAt``: when the newest value the source gave was observed. IRCEL-CELINE: the end of the newest
  hour with a measured NO2 value at or before the request time (any station). The registers (GIPOD, De Lijn,
  the LEZ) publish a state, not observations: theirs is the moment that state was read (``retrievedAt``);
- ``retrievedAt``: when we fetched it (the oldest ``retrievedAt`` of the source's layers in the manifest);
- ``nextUpdateAt``: the earliest moment newer data can be in a snapshot: ``retrievedAt`` plus the cache
  expiry of the source's requests (``URBAN_CACHE_EXPIRY``), and for NO2 not before the next hourly value is
  due (``observedAt`` + 1 h); null for data that is not refreshed (``demo``, ``recorded``, ``reference``);
- ``stale``: true when a live layer of the source is older than its freshness limit (``URBAN_FRESHNESS``),
  its age counted from ``observedAt`` (for NO2: the newest measurement, so a network that stopped
  publishing shows while we still fetch it). Demo, recorded and reference data is never stale.

Same snapshot, same clock and same settings give the same objects (answers stay byte-identical).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from .catalog import LAYER_SOURCE, SOURCES
from .settings import SourceSettings

HOUR = timedelta(hours=1)
#: when the layers of one source differ in kind, the one the answer reports (the most changeable first)
KIND_ORDER = ("live", "recorded", "demo", "reference")


def _parse(ts) -> datetime | None:
    if not ts:
        return None
    t = datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _iso(t: datetime | None) -> str | None:
    if t is None:
        return None
    t = t.astimezone(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _too_old(observed: datetime | None, now: datetime, limit_s: float) -> bool:
    """No observation at all, or one more than ``limit_s`` seconds before ``now``."""
    return observed is None or (now - observed).total_seconds() > limit_s


def current_settings() -> SourceSettings:
    """The running app's source settings, else the ones of the environment (a script without an app)."""
    try:
        from flask import current_app

        return current_app.extensions["urban_sources"]["settings"]
    except (RuntimeError, KeyError):
        return SourceSettings.from_mapping({})


def answer_sources(engine, layers, now: datetime, settings: SourceSettings | None = None) -> list[dict]:
    """The ``sources`` member of an answer computed from ``layers`` of ``engine`` at ``now``.

    Examples
    --------
    >>> answer_sources(engine, ("stations", "no2", "lez"), now)  # doctest: +SKIP
    [{'source': 'ircel', 'attribution': 'Bron: IRCEL-CELINE', 'licence': 'CC BY 4.0', 'kind': 'demo', ...}]
    """
    settings = settings or current_settings()
    manifest = getattr(engine, "manifest", None) or {}
    entries = manifest.get("layers") or {}
    fallback = _parse(manifest.get("asOf")) or datetime(1970, 1, 1, tzinfo=timezone.utc)
    by_source: dict[str, list[str]] = {}
    for layer in layers:
        name = LAYER_SOURCE.get(layer)
        if name is not None:
            by_source.setdefault(name, []).append(layer)
    out = []
    for name, own in by_source.items():
        kinds = [str((entries.get(layer) or {}).get("kind") or "") for layer in own]
        kind = next((k for k in KIND_ORDER if k in kinds), None)
        retrieved = {
            layer: _parse((entries.get(layer) or {}).get("retrievedAt")) or fallback for layer in own
        }
        observed: dict[str, datetime | None] = dict(retrieved)
        if "no2" in own:
            from geo.service.air import latest_measured_ms

            ms = latest_measured_ms(engine, now)
            observed["no2"] = None if ms is None else datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
        live = [layer for layer, k in zip(own, kinds) if k == "live"]
        next_update = None
        for layer in live:
            due = retrieved[layer] + timedelta(seconds=settings.cache_expiry.get(f"{name}.{layer}", 0))
            if layer == "no2" and observed["no2"] is not None:
                due = max(due, observed["no2"] + HOUR)
            next_update = due if next_update is None else min(next_update, due)
        stale = any(
            _too_old(observed[layer], now, settings.freshness[layer])
            for layer in live
            if layer in settings.freshness
        )
        newest = [t for t in observed.values() if t is not None]
        source = SOURCES[name]
        out.append(
            {
                "source": name,
                "attribution": source.attribution,
                "licence": source.licence,
                "kind": kind,
                "observedAt": _iso(observed["no2"] if "no2" in own else max(newest) if newest else None),
                "retrievedAt": _iso(min(retrieved.values())),
                "nextUpdateAt": _iso(next_update),
                "stale": stale,
            }
        )
    return out
