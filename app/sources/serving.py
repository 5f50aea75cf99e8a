"""Which snapshot a request is served from, and whether it is fresh enough to answer (docs/sources.md).

- :func:`current_engine`: the engine of this request, read once and kept for the whole request: a request
  never sees half of one snapshot and half of another.
- :class:`SnapshotWatcher`: API workers pick up a new snapshot without a restart, without failing or
  mixing requests in flight. When a request first asks for its engine and the last check is older than
  ``URBAN_RELOAD_INTERVAL`` seconds, the snapshot pointer is read (``store.version_token``: resolved
  directory, ``snapshotId``, ``asOf``); when it moved, the new version is loaded from its resolved
  directory (immutable) in a background thread while requests go on with the current engine, then the
  holder's ``engine`` reference is swapped in one assignment. A load that fails (pointer mid-switch,
  corrupt version) keeps the current engine and is retried at the next check.
- :func:`served_engine`: the same for a data endpoint that reads some layers, with the freshness decision
  made before anything is computed. An idle worker must not answer 502 because its own engine aged while
  a fresh snapshot was published: when a live layer the endpoint reads is past its limit, the pointer is
  checked at once and a newer version is loaded inline first; if the engine is still stale the endpoint
  gets the 502 ``upstream_error`` to raise once its client errors (400, 404, 422) are ruled out.

Whose data an answer is and how fresh it is, the ``sources`` member of every data answer
(:func:`answer_sources`, :func:`sources_text`):

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

import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Callable

from flask import current_app, g

from app.web.clock import wall_now

from . import store
from .extension import EXTENSION, SourcesState
from .settings import SourceSettings
from .catalog import LAYER_SOURCE, SOURCES
from .errors import UpstreamError
from .freshness import fresh_until, stale_error, stale_layers

log = logging.getLogger(__name__)

#: before a layer's deadline by more than this, nothing can be stale and no timestamp is parsed
_MARGIN = timedelta(milliseconds=1)


def current_engine():
    """The engine of this request (None without a snapshot): pinned on first use."""
    ctx_g = g._get_current_object()
    if "urban_engine" not in ctx_g:
        holder = current_app.extensions["urban"]
        state: SourcesState | None = current_app.extensions.get(EXTENSION)
        if state is not None and state["watcher"] is not None:
            state["watcher"].maybe_reload(holder)
        ctx_g.urban_engine = holder.engine
    return ctx_g.urban_engine


def served_engine(layers: tuple[str, ...]) -> tuple[object, UpstreamError | None]:
    """``(engine, stale)`` for an endpoint reading ``layers``: the pinned engine, after an urgent reload
    when it is past a freshness limit, and the 502 to answer when it still is (None: fresh)."""
    engine = current_engine()
    state: SourcesState | None = current_app.extensions.get(EXTENSION)
    if state is None or engine is None:
        return engine, None
    stale = _stale(state, engine, layers)
    if stale and state["watcher"] is not None:
        holder = current_app.extensions["urban"]
        state["watcher"].maybe_reload(holder, urgent=True)
        if holder.engine is not engine:
            engine = g.urban_engine = holder.engine
            stale = _stale(state, engine, layers)
    if not stale:
        return engine, None
    error = stale_error(stale)
    current_app.logger.warning("502 upstream_error: %s", error.message)
    return engine, error


def _stale(state: SourcesState, engine, layers: tuple[str, ...]) -> list:
    """The live layers among ``layers`` that ``engine`` holds past their limit.

    Each engine's manifest gives a constant deadline per set of layers (``fresh_until``, cached for the
    engine in use): before it (with a 1 ms margin) nothing can be stale and no timestamp is parsed; near
    or past it the exact check runs.
    """
    manifest = getattr(engine, "manifest", None)
    if not layers or not manifest:
        return []
    limits = state["settings"].freshness
    cached_engine, cached_limits, deadlines = state["fresh_until"] or (None, None, {})
    if cached_engine is not engine or cached_limits is not limits:
        deadlines = {}
        state["fresh_until"] = (engine, limits, deadlines)
    if layers not in deadlines:
        deadlines[layers] = fresh_until(manifest, layers, limits)
    deadline = deadlines[layers]
    if deadline is None:
        return []
    now = wall_now()
    if now < deadline - _MARGIN:
        return []
    return stale_layers(manifest, layers, now, limits)


class SnapshotWatcher:
    """Watches one snapshot pointer and swaps the engine of one holder (``UrbanState``).

    Parameters
    ----------
    data_dir : path
        The snapshot pointer (``DATA_DIR``).
    interval : float
        Minimum seconds between two checks in this process.
    loader : callable
        ``path -> engine`` (``geo.load``).
    background : bool
        Load in a background thread (serving) or inline (CLI, tests that want determinism).
    wait : float
        Upper bound in seconds an urgent check waits for a load another thread runs (or for the lock).

    Examples
    --------
    >>> w = SnapshotWatcher("data/snapshot", 5.0, Engine.load)   # doctest: +SKIP
    >>> w.maybe_reload(app.extensions["urban"])                  # doctest: +SKIP
    """

    def __init__(
        self,
        data_dir,
        interval: float,
        loader: Callable,
        *,
        background: bool = True,
        clock: Callable[[], float] = time.monotonic,
        wait: float = 60.0,
    ):
        self.data_dir = data_dir
        self.wait = float(wait)
        self.interval = float(interval)
        self.loader = loader
        self.background = background
        self.clock = clock
        self.token = self._read_token()
        self.reloads = 0
        self.failures = 0
        self._failed = None
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._loading = False
        self._done = threading.Event()
        self._checked = self.clock()

    def _read_token(self):
        try:
            return store.version_token(self.data_dir)
        except (OSError, ValueError, KeyError):
            return None

    def maybe_reload(self, holder, *, urgent: bool = False) -> bool:
        """Check the pointer if the interval has passed; start (or run) a reload when it moved.

        With ``urgent`` (the engine in use is too old to serve the request) the pointer is checked at once,
        whatever the interval, and a new version is loaded inline (or a load already running is waited
        for, at most ``wait`` seconds) before the request goes on. Returns True when a reload happened or
        was started. Cheap when the interval has not passed: one clock read.
        """
        if os.getpid() != self._pid:  # forked worker: locks and flags of the parent do not apply
            self._reset()
        if not urgent and self.clock() - self._checked < self.interval:
            return False
        if not self._lock.acquire(blocking=urgent, timeout=self.wait if urgent else -1):
            return False
        try:
            self._checked = self.clock()
            token = self._read_token()
            if token is None or token == self.token or (urgent and token == self._failed):
                return False  # an urgent check never retries a version that just failed (the timer does)
            if self._loading:
                loading = self._done
            else:
                self._loading, loading = True, None
                self._done = threading.Event()
        finally:
            self._lock.release()
        if loading is not None:  # another thread is loading it
            return bool(urgent and loading.wait(self.wait))
        if self.background and not urgent:
            threading.Thread(
                target=self._load, args=(token, holder), name="snapshot-reload", daemon=True
            ).start()
        else:
            self._load(token, holder)
        return True

    def _load(self, token, holder) -> None:
        try:
            engine = self.loader(token[0])  # the resolved, immutable version directory
            holder.swap_engine(engine)
            self.token = token
            self.reloads += 1
            log.info("snapshot reloaded: %s (asOf %s) from %s", token[1][:16], token[2], token[0])
        except Exception as exc:  # keep serving the current engine; retried at the next check
            self.failures += 1
            self._failed = token
            log.warning("snapshot reload from %s failed, keeping the current one: %s", token[0], exc)
        finally:
            self._loading = False
            self._done.set()


# --- the sources member of every data answer ----------------------------------------------------

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
