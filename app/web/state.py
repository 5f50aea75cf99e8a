"""Per-app runtime state kept in ``app.extensions["urban"]`` (the engine is swappable by a refresher)."""

from __future__ import annotations

from dataclasses import dataclass, field
import threading


@dataclass
class UrbanState:
    """Holder for the loaded engine and per-process bookkeeping.

    A request reads ``engine`` once and keeps it (:func:`app.sources.serving.current_engine`); the reload
    watcher replaces it with :meth:`swap_engine`, so a request never sees half of an old and half of a new
    one.
    """

    engine: object | None = None
    migrated_pid: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def swap_engine(self, engine) -> object | None:
        """Install ``engine`` and return the previous one."""
        with self.lock:
            old, self.engine = self.engine, engine
        return old
