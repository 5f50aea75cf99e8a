"""Layer frames taken from a larger set of rows: what the engine derives row by row is derived once.

A history holds every version of a layer; the layer as one snapshot carried it is some of those rows
(``frame = rows.frame_of(positions)``, made by the caller). A :class:`RowSource` keeps, per derivation (the
points of a point layer, the extents of the works, whether the coordinates pass the engine's checks), its
value over every row it holds, computed once per appended chunk; an engine built with
``Engine.from_layers(..., rows={layer: (source, positions)})`` takes the layer's values from it instead of
deriving them from its own frame. Every derivation is row-wise, so the values are those of a build over the
layer's own frame (tests/geo/test_row_source.py). What links rows (the works' collapse links) is
:meth:`RowSource.grown`: extended by the rows appended since, never made again from scratch.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


def take(value, positions: np.ndarray):
    """``value`` (an array, a tuple of arrays, or an object with ``take``) at ``positions``; arrays read-only."""
    if isinstance(value, tuple):
        return tuple(take(v, positions) for v in value)
    if isinstance(value, np.ndarray):
        out = value[positions]
        out.flags.writeable = value.flags.writeable
        return out
    return value.take(positions)


def concat(values: list):
    """The values of consecutive chunks as one (arrays, tuples of arrays, or a type with ``concat``)."""
    first = values[0]
    if len(values) == 1:
        return first
    if isinstance(first, tuple):
        return tuple(concat([v[i] for v in values]) for i in range(len(first)))
    if isinstance(first, np.ndarray):
        out = np.concatenate(values)
        out.flags.writeable = first.flags.writeable
        return out
    return type(first).concat(values)


class RowSource:
    """Rows appended in chunks (GeoDataFrames of one layer and schema), numbered 0, 1, … in order, and the
    row-wise derivations made over them. Thread-safe.

    Examples
    --------
    >>> import geopandas as gpd
    >>> from shapely.geometry import Point
    >>> source = RowSource()
    >>> source.append(gpd.GeoDataFrame(geometry=[Point(4, 51), Point(5, 50)]))
    0
    >>> source.derived("x", lambda frame: frame.geometry.x.to_numpy()).tolist()
    [4.0, 5.0]
    """

    def __init__(self):
        self.chunks: list = []
        self._known: list[dict] = []  # per chunk: values derived over its rows before it was appended
        self.size = 0
        self._memo: dict[str, tuple[list, object]] = {}
        self._grown: dict[str, tuple[object, int]] = {}
        self._lock = threading.RLock()

    def append(self, frame, known: dict | None = None) -> int:
        """Add a chunk of rows; returns the number of its first row. ``known``: values already derived over
        this very frame by name (an engine's :meth:`geo.data.engine.Engine.row_values`), taken instead of
        deriving them again (read when first asked, so values added to it later count too)."""
        with self._lock:
            start = self.size
            self.chunks.append(frame)
            self._known.append({} if known is None else known)
            self.size += len(frame)
            return start

    def derived(self, what: str, factory):
        """``factory(chunk)`` over every chunk, as one value over every row (computed once per chunk)."""
        with self._lock:
            parts, whole = self._memo.get(what, ([], None))
            if len(parts) == len(self.chunks) and whole is not None:
                return whole
            parts = parts + [
                known[what] if what in known else factory(chunk)
                for chunk, known in zip(self.chunks[len(parts) :], self._known[len(parts) :])
            ]
            whole = concat(parts)
            self._memo[what] = (parts, whole)
            return whole

    def grown(self, what: str, extend):
        """A value over every row that links rows, extended by the rows appended since it was last asked:
        ``extend(value, start, stop)`` gives the value over rows ``[0, stop)`` from ``value``, the one over rows
        ``[0, start)`` (None when ``start`` is 0), and may keep and change ``value`` (it is this source's)."""
        with self._lock:
            value, upto = self._grown.get(what, (None, 0))
            if upto < self.size or value is None:
                value = extend(value, upto, self.size)
                self._grown[what] = (value, self.size)
            return value


class Deferred:
    """A layer's frame made on first use (``make()``, once; thread-safe), its ``crs``, ``columns`` and length
    known before: an engine built with it for a layer taken from a row source (``Engine.from_layers(rows=…)``)
    reads the frame only when something asks for it (``engine.works``); its row-wise values come from the
    source. Identity decides sharing, as for a frame: an engine given this very object shares the layer."""

    def __init__(self, make, crs, columns, length: int):
        self.crs, self.columns, self.length = crs, columns, length
        self._make = make
        self._frame = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.length

    def frame(self):
        """The frame (made now unless made before)."""
        if self._frame is None:
            with self._lock:
                if self._frame is None:
                    self._frame = self._make()
                    self._make = None
        return self._frame


@contextmanager
def no_collection(*, collect_young: bool = False) -> Iterator[None]:
    """No cyclic garbage collection inside the block: for code that makes many small acyclic objects, each
    full collection of which would walk every object of the process again (docs/history.md, docs/changes.md).
    ``collect_young``: collect the youngest generation once at the end, so the next caller does not pay
    for what the block left."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            if collect_young:
                gc.collect(0)
