"""Overlap of the three stages of ``urban-score``: reading, scoring and writing run at the same time.

:class:`ReadAhead` iterates a reader in a background thread, a few chunks ahead; :class:`WriteBehind` writes
chunks in a background thread, in the order given. Arrow's CSV/Parquet code releases the GIL, so
the file work can run on another core while the main thread scores; the scoring's many short NumPy calls
hold the GIL most of the time, so the overlap measured on one process is small (docs/scoring.md). Memory
stays bounded by the queue depths (a few chunks). Exceptions of a stage re-raise in the caller, unchanged.
"""

from __future__ import annotations

import queue
import threading

_END = object()
DEPTH = 2  # chunks a stage holds in its queue


class _Stage:
    """A daemon thread joined to a bounded queue; ``stop`` ends it at its next queue operation."""

    def __init__(self, depth: int):
        self.q: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self.stopped = threading.Event()
        self.error: BaseException | None = None

    def _put(self, item) -> bool:
        while not self.stopped.is_set():
            try:
                self.q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _get(self):
        while True:
            try:
                return self.q.get(timeout=0.05)
            except queue.Empty:
                if self.stopped.is_set():
                    return _END


class ReadAhead(_Stage):
    """Iterate ``iterable`` in a thread, at most ``depth`` items ahead of the consumer.

    Examples
    --------
    >>> list(ReadAhead(range(3)))
    [0, 1, 2]
    """

    def __init__(self, iterable, depth: int = DEPTH):
        super().__init__(depth)
        self._thread = threading.Thread(target=self._run, args=(iterable,), daemon=True, name="read-ahead")
        self._thread.start()

    def _run(self, iterable):
        try:
            for item in iterable:
                if not self._put((True, item)):
                    return
            self._put((True, _END))
        except BaseException as exc:  # noqa: BLE001  (handed to the consumer)
            self._put((False, exc))

    def __iter__(self):
        while True:
            item = self._get()
            if item is _END:
                return
            ok, value = item
            if not ok:
                raise value
            if value is _END:
                return
            yield value

    def close(self):
        self.stopped.set()
        self._thread.join()


class WriteBehind(_Stage):
    """Call ``write(*args)`` for every :meth:`put` in a thread, in order; :meth:`finish` waits for all.

    Examples
    --------
    >>> out = []
    >>> w = WriteBehind(out.append)
    >>> w.put(1); w.put(2); w.finish(); out
    [1, 2]
    """

    def __init__(self, write, depth: int = DEPTH):
        super().__init__(depth)
        self._write = write
        self._thread = threading.Thread(target=self._run, daemon=True, name="write-behind")
        self._thread.start()

    def _run(self):
        while True:
            item = self._get()
            if item is _END:
                return
            try:
                self._write(*item)
            except BaseException as exc:  # noqa: BLE001  (re-raised by put / finish)
                self.error = exc
                self.stopped.set()
                return

    def _check(self):
        if self.error is not None:
            raise self.error

    def put(self, *args):
        self._check()
        if not self._put(args):
            self._check()

    def finish(self):
        """Wait until everything put is written; re-raise the writer's error."""
        self._put(_END)
        self._thread.join()
        self._check()

    def close(self):
        self.stopped.set()
        self._thread.join()
