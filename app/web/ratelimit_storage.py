"""A ``limits`` storage backed by one SQLite file, shared by every gunicorn worker on the machine.

Flask-Limiter's default memory storage is per process; this one keeps fixed-window counters in a table and
updates them with a single atomic UPSERT, so a per-IP limit holds across workers. URI:
``urban-sqlite:///absolute/path/ratelimit.sqlite``. Connections are per process and thread (re-opened after
fork).

The per-IP budget every response reports reads one window (:meth:`SQLiteStorage.read_window`). Its rows
change only through this class (every worker's storage on the file counts, clears and resets through it),
so each change also bumps a generation number in a small file beside the database, shared by mapping it
into memory (``<file>-generation``): a worker keeps the windows it read, each with the generation it read
it under, and answers from that copy while the generation is unchanged and the window has not ended
(the statement's own ``expires_at > now``), else reads the row again. The bump follows the commit, so a
reader that saw the old generation read the row before the change or sees the new number next time.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import sqlite3
import struct
import threading
import time
from urllib.parse import urlparse

from limits.storage import Storage

_INCR = (
    "INSERT INTO counters (key, count, expires_at) VALUES (:key, :amount, :now + :expiry)"
    " ON CONFLICT (key) DO UPDATE SET"
    "  count = CASE WHEN expires_at <= :now THEN :amount ELSE count + :amount END,"
    "  expires_at = CASE WHEN expires_at <= :now THEN :now + :expiry ELSE expires_at END"
    " RETURNING count"
)


class SQLiteStorage(Storage):
    """Fixed-window counters in SQLite (``urban-sqlite://`` URIs)."""

    STORAGE_SCHEME = ["urban-sqlite"]

    def __init__(self, uri: str, wrap_exceptions: bool = False, **options):
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        path = urlparse(uri).path
        if not path:
            raise ValueError(f"storage URI {uri!r} has no file path (urban-sqlite:///path/file.sqlite)")
        self.path = path
        self.timeout = float(options.get("timeout", 5.0))
        self._local = threading.local()

    @property
    def base_exceptions(self):
        return sqlite3.Error

    def _conn(self) -> sqlite3.Connection:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS counters ("
                " key TEXT PRIMARY KEY, count INTEGER NOT NULL, expires_at REAL NOT NULL) WITHOUT ROWID"
            )
            local.conn, local.pid = conn, os.getpid()
            local.generation, local.windows = _Generation(self.path + "-generation"), {}
        return local.conn

    def _changed(self) -> None:
        """After a committed change: bump the shared generation (under an exclusive lock, so no bump is
        lost to a concurrent one) and forget this thread's windows."""
        self._conn()
        local = self._local
        local.windows = {}
        generation = local.generation
        fcntl.flock(generation.fileno, fcntl.LOCK_EX)
        try:
            _GENERATION.pack_into(generation.map, 0, _GENERATION.unpack_from(generation.map)[0] + 1)
        finally:
            fcntl.flock(generation.fileno, fcntl.LOCK_UN)

    PURGE_EVERY = 256  # increments per process between deletions of expired counters

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        self._local.read = None
        self._local.incrs = getattr(self._local, "incrs", 0) + 1
        if self._local.incrs % self.PURGE_EVERY == 0:
            self._conn().execute("DELETE FROM counters WHERE expires_at <= ?", (time.time(),))
        row = (
            self._conn()
            .execute(_INCR, {"key": key, "amount": amount, "now": time.time(), "expiry": expiry})
            .fetchone()
        )
        self._changed()
        return int(row[0])

    def get(self, key: str) -> int:
        now = time.time()
        row = (
            self._conn()
            .execute("SELECT count, expires_at FROM counters WHERE key = ? AND expires_at > ?", (key, now))
            .fetchone()
        )
        # a window's stats ask get() then get_expiry() of the same key: the row read answers both while
        # the window it read lasts (an open window's end never moves; only a new window has a new one);
        # no row (no window: every ping, most requests) answers "now" as the statement would
        self._local.read = (key, None if row is None else float(row[1]))
        return 0 if row is None else int(row[0])

    #: windows a thread keeps (all are dropped when there are more)
    WINDOWS_KEPT = 4096

    def read_window(self, key: str) -> tuple[int, float | None]:
        """(count, end) of the window at ``key``; (0, None) when it has none (the next hit would open one).
        One statement, or none while the shared generation is the one the kept copy was read under (see
        the module's docstring). Not part of the ``limits`` interface: the per-IP budget every response
        reports reads its window with it (:func:`app.web.ratelimit.budget`)."""
        conn = self._conn()
        local = self._local
        generation = _GENERATION.unpack_from(local.generation.map)[0]
        kept = local.windows.get(key)
        if kept is None or kept[0] != generation:
            row = conn.execute("SELECT count, expires_at FROM counters WHERE key = ?", (key,)).fetchone()
            kept = (generation, 0, None) if row is None else (generation, int(row[0]), float(row[1]))
            if len(local.windows) >= self.WINDOWS_KEPT:
                local.windows = {}
            local.windows[key] = kept
        _generation, count, end = kept
        if end is None or end <= time.time():
            return 0, None
        return count, end

    def get_expiry(self, key: str) -> float:
        read, self._local.read = getattr(self._local, "read", None), None
        if read is not None and read[0] == key:
            if read[1] is None:
                return time.time()
            if read[1] > time.time():
                return read[1]
        row = (
            self._conn()
            .execute("SELECT expires_at FROM counters WHERE key = ? AND expires_at > ?", (key, time.time()))
            .fetchone()
        )
        return time.time() if row is None else float(row[0])

    def check(self) -> bool:
        try:
            self._conn().execute("SELECT 1").fetchone()
            return True
        except sqlite3.Error:
            return False

    def reset(self) -> int | None:
        self._local.read = None
        cur = self._conn().execute("DELETE FROM counters")
        self._changed()
        return cur.rowcount

    def clear(self, key: str) -> None:
        self._local.read = None
        self._conn().execute("DELETE FROM counters WHERE key = ?", (key,))
        self._changed()


#: the shared generation: one unsigned 64-bit number at the start of the generation file
_GENERATION = struct.Struct("=Q")


class _Generation:
    """The generation file of one database, mapped into this process (its descriptor for the lock)."""

    def __init__(self, path: str) -> None:
        self.fileno = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        if os.fstat(self.fileno).st_size < _GENERATION.size:
            os.ftruncate(self.fileno, _GENERATION.size)  # zeros: generation 0
        self.map = mmap.mmap(self.fileno, _GENERATION.size)
