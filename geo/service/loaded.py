"""One object per loaded snapshot: :class:`LoadedSnapshot` holds the engine, the rules' prepared data, the
single-point lookup tables and the clock caches, all built once when the snapshot is loaded.

The endpoint functions (``disruptions(engine, lat, lng, now)`` and its siblings) take the engine, as the app,
the notebooks and the batch scorer do, and find its ``LoadedSnapshot`` with :func:`loaded` (one weak map
keyed by the engine: the object lives exactly as long as its engine). The app swaps the engine on a snapshot
reload, and with it the ``LoadedSnapshot`` that :func:`load` built; nothing else keeps per-engine state.
"""

from __future__ import annotations

import threading
import weakref

from ..data.engine import Engine
from ..rules.prepared import Prepared, build
from .places import build_places
from .lookups import Lookups
from .moment import Moment, Times

_LOADED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_DERIVED_LOCK = threading.RLock()  # re-entrant: a build may derive another object of the same snapshot


class LoadedSnapshot:
    """Everything the three data endpoints read for one snapshot, built once.

    Attributes
    ----------
    engine : geo.Engine
    prepared : geo.rules.prepared.Prepared      clock-free per-layer arrays of the rules
    lookups : geo.service.lookups.Lookups       single-point tables built from ``prepared``
    times : geo.service.moment.Times            clock caches (by the coarsest key that fixes each value)

    Examples
    --------
    >>> snap = loaded(engine)  # doctest: +SKIP
    >>> snap is loaded(engine) and snap.lookups.prepared is snap.prepared  # doctest: +SKIP
    True
    """

    __slots__ = ("_engine", "prepared", "lookups", "times", "_derived", "__weakref__")

    def __init__(self, engine: Engine, reuse=()):
        """``reuse``: loaded snapshots of engines ``engine`` shares layers with (:func:`rebuild`): the
        prepared parts and lookup tables made from those very layers are shared, not made again."""
        self._engine = weakref.ref(engine)  # weak: this object is the value of a weak map keyed by the engine
        self.prepared: Prepared = build(engine, [(s.engine, s.prepared) for s in reuse])
        self.lookups = Lookups(engine, self.prepared, [s.lookups for s in reuse])
        self.times = Times(self.lookups)
        self._derived: dict = {}

    @property
    def engine(self) -> Engine:
        """The engine (alive while this object is reachable through :func:`loaded`)."""
        engine = self._engine()
        if engine is None:
            raise ReferenceError("the engine of this loaded snapshot was dropped")
        return engine

    def derived(self, key: str, factory):
        """``factory(engine)``, made once per loaded snapshot under ``key`` (thread-safe): where the layers above
        (GeoJSON places, the batch scorer's indexes and pair tables) keep what they derive from a snapshot."""
        found = self._derived.get(key)
        if found is None:
            with _DERIVED_LOCK:
                found = self._derived.get(key)
                if found is None:
                    found = self._derived[key] = factory(self.engine)
        return found

    @property
    def places(self):
        """Where detour stops and stations lie (:class:`geo.service.places.Places`), built on first use:
        only the GeoJSON representation needs it."""
        return self.derived("places", build_places)

    def moment(self, now) -> Moment:
        """The :class:`~geo.service.moment.Moment` at ``now``: the last one is reused for the same instant
        (in any time zone), as with the snapshot clock. Raises ``ValueError`` for a naive ``now``."""
        last = self.times.last
        if last is not None and now.utcoffset() is not None and last.instant == now.timestamp():
            return last
        m = Moment(self, now)
        self.times.last = m
        return m


def loaded(engine) -> LoadedSnapshot:
    """The :class:`LoadedSnapshot` of ``engine``, built on first use (``load`` builds it at load time).

    Examples
    --------
    >>> loaded(engine) is loaded(engine)  # doctest: +SKIP
    True
    """
    found = _LOADED.get(engine)
    if found is None:
        with _LOCK:
            found = _LOADED.get(engine)
            if found is None:
                found = _LOADED[engine] = LoadedSnapshot(engine)
    return found


def prepare(engine) -> Prepared:
    """The prepared rule data of ``engine``'s loaded snapshot (the same object on every call)."""
    return loaded(engine).prepared


def lookups(engine) -> Lookups:
    """The single-point lookup tables of ``engine``'s loaded snapshot."""
    return loaded(engine).lookups


def moment(engine, now) -> Moment:
    """:meth:`LoadedSnapshot.moment` of ``engine``'s loaded snapshot."""
    return loaded(engine).moment(now)


def held_layers(engines):
    """``held(layer, sha256)`` for a history store's ``snapshot``: the frame (or the deferred frame, not made
    here) of the first of ``engines`` whose snapshot carried that very layer file (same sha256 in its
    manifest), else None."""

    def held(layer: str, sha256: str):
        for engine in engines:
            entry = ((getattr(engine, "manifest", None) or {}).get("layers") or {}).get(layer) or {}
            if entry.get("sha256") == sha256:
                return engine.layer_object(layer)
        return None

    return held


def rebuild(layers: dict, manifest: dict, previous=(), rows=None) -> Engine:
    """``Engine.from_layers(layers, manifest, reuse=previous, rows=rows)`` plus its :class:`LoadedSnapshot`,
    built now.

    A layer given as the very frame of one of the ``previous`` engines (e.g. ``layers["stops"] =
    live.stops`` when the stops did not change) is shared with it: its checks, spatial indexes, the rules'
    prepared parts and the lookup tables made from it (and only from layers shared too) are not built
    again. Only the replaced layers cost a build; the answers are those of ``Engine.from_layers``. A layer
    in ``rows`` takes what is derived row by row from its :class:`geo.data.rows.RowSource`.

    Examples
    --------
    >>> then = rebuild({**{n: getattr(live, n) for n in same}, **changed}, manifest, [live])  # doctest: +SKIP
    """
    engine = Engine.from_layers(layers, manifest, reuse=previous, rows=rows)
    donors = [found for found in (_LOADED.get(e) for e in previous) if found is not None]
    with _LOCK:
        _LOADED[engine] = LoadedSnapshot(engine, donors)
    return engine


def load(path, *, as_of=None) -> Engine:
    """``Engine.load(path)`` plus its :class:`LoadedSnapshot`, built now (at start, so gunicorn's preloaded
    workers share it) and never per request.

    With ``as_of`` (an aware datetime), ``path`` is a history (any object with ``snapshot_at(instant) ->
    (layers, manifest)``, e.g. ``app.history.store.open_store(url)``) and the engine is that of the snapshot
    served at that instant (answers then need ``now=as_of``).

    Examples
    --------
    >>> engine = load("data/snapshot")  # doctest: +SKIP
    >>> then = load(open_store("data/snapshot.history.sqlite"), as_of=datetime(2026, 11, 1, tzinfo=UTC))  # doctest: +SKIP
    """
    if as_of is None:
        engine = Engine.load(path)
    else:
        engine = Engine.from_layers(*path.snapshot_at(as_of))
    loaded(engine)
    return engine
