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
"""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import timedelta
from typing import Callable

from flask import current_app, g

from app.web.clock import wall_now

from . import store
from .extension import EXTENSION, SourcesState
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
