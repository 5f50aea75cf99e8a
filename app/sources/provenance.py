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

import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache

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
    flask = sys.modules.get("flask")  # not imported: there is no app
    if flask is not None:
        try:
            return flask.current_app.extensions["urban_sources"]["settings"]
        except (RuntimeError, KeyError):
            pass
    return SourceSettings.from_mapping({})


@dataclass(frozen=True)
class _Source:
    """What one source's object owes to the snapshot and the settings alone, not to the clock."""

    name: str
    kind: str | None
    retrieved: dict[str, datetime]
    dues: tuple[tuple[str, datetime], ...]  # live layers: retrieved + cache expiry, in layer order
    limits: tuple[tuple[str, float], ...]  # live layers with a freshness limit, in layer order
    next_update: str | None  # without NO2 (no live NO2 layer), the answer's nextUpdateAt
    observed_at: str | None  # without NO2, the answer's observedAt (its newest retrieval)
    retrieved_at: str | None
    #: the answer's object as far as the clock does not change it, in the answer's key order (copied per
    #: answer; ``observedAt``, ``nextUpdateAt`` and ``stale`` are replaced where the clock decides them)
    fixed: dict = field(init=False, compare=False)

    def __post_init__(self) -> None:
        source = SOURCES[self.name]
        fixed = {
            "source": self.name,
            "attribution": source.attribution,
            "licence": source.licence,
            "kind": self.kind,
            "observedAt": self.observed_at,
            "retrievedAt": self.retrieved_at,
            "nextUpdateAt": self.next_update,
            "stale": False,
        }
        object.__setattr__(self, "fixed", fixed)


def _plan(manifest: dict, layers: tuple[str, ...], settings: SourceSettings) -> list[_Source]:
    """The clock-independent half of :func:`answer_sources`, one :class:`_Source` per source."""
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
        retrieved = {
            layer: _parse((entries.get(layer) or {}).get("retrievedAt")) or fallback for layer in own
        }
        live = [layer for layer, k in zip(own, kinds) if k == "live"]
        dues = tuple(
            (layer, retrieved[layer] + timedelta(seconds=settings.cache_expiry.get(f"{name}.{layer}", 0)))
            for layer in live
        )
        out.append(
            _Source(
                name=name,
                kind=next((k for k in KIND_ORDER if k in kinds), None),
                retrieved=retrieved,
                dues=dues,
                limits=tuple(
                    (layer, settings.freshness[layer]) for layer in live if layer in settings.freshness
                ),
                next_update=_iso(min((due for _layer, due in dues), default=None)),
                observed_at=_iso(max(retrieved.values())),
                retrieved_at=_iso(min(retrieved.values())),
            )
        )
    return out


class _Planned:
    """The plan of one (manifest, settings, layers) and the texts of its answers made so far, keyed by what
    the clock decides in them (the NO2 hour, each source's staleness)."""

    __slots__ = ("manifest", "settings", "sources", "texts", "no2", "limited", "fresh")

    def __init__(self, manifest: dict, settings: SourceSettings, sources: list[_Source]):
        self.manifest, self.settings, self.sources = manifest, settings, sources
        self.texts: dict[tuple, str] = {}
        self.no2 = any("no2" in plan.retrieved for plan in sources)  # the NO2 hour matters
        self.limited = any(plan.limits for plan in sources)  # the clock may make a source stale
        self.fresh = (False,) * len(sources)  # the stale flags when it may not


#: (id(manifest), id(settings), layers) → its :class:`_Planned`; the objects are held so their ids stay
#: theirs while cached
_PLANS: dict[tuple, _Planned] = {}
_PLANS_MAX = 64
_TEXTS_MAX = 256  # texts per plan (a full dict is emptied and refilled)


def _planned(manifest: dict, layers: tuple[str, ...], settings: SourceSettings) -> _Planned:
    """:func:`_plan`, kept per (manifest, settings, layers) object. Rule that keeps it true: a loaded
    snapshot's manifest and an app's source settings are never changed in place (a reload or a refreshed
    snapshot is a new engine with its own manifest; settings are built once per app)."""
    key = (id(manifest), id(settings), layers)
    hit = _PLANS.get(key)
    if hit is not None and hit.manifest is manifest and hit.settings is settings:
        return hit
    if len(_PLANS) >= _PLANS_MAX:
        _PLANS.clear()
    planned = _PLANS[key] = _Planned(manifest, settings, _plan(manifest, layers, settings))
    return planned


def _clocked(engine, layers, now: datetime, settings: SourceSettings | None):
    """``(planned, NO2 hour in ms or None, each source's stale flag)``: all that the clock decides."""
    settings = settings or current_settings()
    planned = _planned(getattr(engine, "manifest", None) or {}, tuple(layers), settings)
    ms = None
    if planned.no2:
        from geo.service.air import latest_measured_ms

        ms = latest_measured_ms(engine, now)
    if not planned.limited:
        return planned, ms, planned.fresh
    no2 = None if ms is None else _measured_at(ms)
    stale = tuple(
        any(
            _too_old(no2 if layer == "no2" else plan.retrieved[layer], now, limit)
            for layer, limit in plan.limits
        )
        for plan in planned.sources
    )
    return planned, ms, stale


def _answers(planned: _Planned, ms: int | None, stale: tuple) -> list[dict]:
    no2 = None if ms is None else _measured_at(ms)
    out = []
    for plan, is_stale in zip(planned.sources, stale):
        answer = plan.fixed.copy()
        if "no2" in plan.retrieved:
            answer["observedAt"] = None if no2 is None else _iso_measured(ms)
            due_at = None
            for layer, due in plan.dues:
                if layer == "no2" and no2 is not None:
                    due = max(due, no2 + HOUR)
                due_at = due if due_at is None else min(due_at, due)
            answer["nextUpdateAt"] = _iso(due_at)
        if plan.limits:
            answer["stale"] = is_stale
        out.append(answer)
    return out


def answer_sources(engine, layers, now: datetime, settings: SourceSettings | None = None) -> list[dict]:
    """The ``sources`` member of an answer computed from ``layers`` of ``engine`` at ``now``.

    Examples
    --------
    >>> answer_sources(engine, ("stations", "no2", "lez"), now)  # doctest: +SKIP
    [{'source': 'ircel', 'attribution': 'Bron: IRCEL-CELINE', 'licence': 'CC BY 4.0', 'kind': 'demo', ...}]
    """
    return _answers(*_clocked(engine, layers, now, settings))


def sources_text(engine, layers, now: datetime, settings: SourceSettings | None = None) -> str:
    """The JSON text of :func:`answer_sources` (:func:`app.web.conventions.json_dumps`), made once per plan,
    NO2 hour and staleness: the same few texts are answered all day."""
    planned, ms, stale = _clocked(engine, layers, now, settings)
    key = (ms, stale)
    text = planned.texts.get(key)
    if text is None:
        from app.web.conventions import json_dumps

        if len(planned.texts) >= _TEXTS_MAX:
            planned.texts.clear()
        text = planned.texts[key] = json_dumps(_answers(planned, ms, stale))
    return text


def _measured_at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


@lru_cache(maxsize=256)
def _iso_measured(ms: int) -> str | None:
    """``observedAt`` of the NO2 hour ending at ``ms`` (the same few hours are reported all day)."""
    return _iso(_measured_at(ms))
