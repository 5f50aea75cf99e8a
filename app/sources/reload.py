"""API workers pick up a new snapshot without a restart, without failing or mixing requests in flight.

Each worker checks the snapshot pointer (``store.version_token``: resolved directory, ``snapshotId``, ``asOf``)
at most every ``URBAN_RELOAD_INTERVAL`` seconds, from a ``before_request`` hook. When it changed, the new
version is loaded from its resolved directory (immutable) in a background thread while requests go on
with the current engine; then the holder's ``engine`` reference is swapped in one assignment. A request
pins the engine it started with in ``g.urban_engine`` and keeps using that object, so it never sees half of
one snapshot and half of another. A load that fails (pointer mid-switch, corrupt version) keeps the current
engine and is retried at the next check.

An idle worker must not answer 502 because its own engine aged while a fresh snapshot was published: when
the engine pinned for a request is past a freshness limit the request needs, the pointer is checked at once
and a new version is loaded inline before the request is served (``maybe_reload(..., urgent=True)``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable

from . import store

log = logging.getLogger("app.sources.reload")


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
