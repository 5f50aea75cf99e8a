"""Per-app runtime state kept in ``app.extensions["urban"]`` (the engine is swappable by a refresher)."""

from __future__ import annotations

from dataclasses import dataclass, field
import threading


@dataclass
class UrbanState:
    """Holder for the loaded engine and per-process bookkeeping.

    ``engine`` is read once per request (``current_app.extensions["urban"].engine``); a live refresher
    replaces it with :meth:`swap_engine`, so a request never sees half of an old and half of a new one.
    """

    engine: object | None = None
    migrated_pid: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def request_engine(self):
        """The engine pinned for the current request: read once, then reused by every part of it."""
        from flask import g

        if "urban_engine" not in g:
            g.urban_engine = self.engine
        return g.urban_engine

    def swap_engine(self, engine) -> object | None:
        """Install ``engine`` and return the previous one."""
        with self.lock:
            old, self.engine = self.engine, engine
        return old
