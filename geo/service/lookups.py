"""Lookup tables of the single-point endpoints, built once per loaded snapshot from its prepared data.

What a single request needs beyond the prepared arrays, in the form that is cheapest to index for one
point: works rows that may be listed for each river side of the point, each stop's matched detours as an
integer bit mask, and Python lists of the per-cluster / per-detour values read item by item. Nothing here
depends on the query point or the clock.
"""

from __future__ import annotations

import numpy as np

from ..rules import works as wk
from ..data.engine import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT
from ..index.near_one import ExtentNear, NearTable
from ..rules.selection import near_side
from ..rules.transit import STOP_RADIUS_KM

SIDES = (RIVER_NONE, RIVER_LEFT, RIVER_RIGHT)
MAX_SELECTIONS = 4096  # cached detour bit mask -> index array conversions


def stop_detour_masks(stop_bits: np.ndarray, line_bits: np.ndarray) -> list[int]:
    """Per stop, an int whose bit ``j`` is set when detour ``j`` has a line serving the stop.

    ``stop_bits`` (stops × bytes) and ``line_bits`` (detours × bytes) are packed line sets; shared lines are
    found 64 lines at a time (memory stops × detours, not stops × detours × bytes).

    Examples
    --------
    >>> stops = np.packbits(np.array([[1, 0, 0], [0, 1, 1], [0, 0, 0]], dtype=bool), axis=1)
    >>> detours = np.packbits(np.array([[0, 1, 0], [1, 0, 1]], dtype=bool), axis=1)
    >>> stop_detour_masks(stops, detours)
    [2, 3, 0]
    """
    n_stops, n_detours = stop_bits.shape[0], line_bits.shape[0]
    stop_words, line_words = _words(stop_bits), _words(line_bits)
    match = np.zeros((n_stops, n_detours), dtype=bool)
    for w in range(stop_words.shape[1]):  # shared lines, one 64-line word at a time (memory stops x detours)
        match |= (stop_words[:, w, None] & line_words[None, :, w]) != 0
    words = _words(np.packbits(match, axis=1, bitorder="little"))
    out = words[:, 0].tolist() if words.shape[1] else [0] * n_stops
    for w in range(1, words.shape[1]):  # more than 64 detours: the higher words, where a stop has any
        for r in np.flatnonzero(words[:, w]).tolist():
            out[r] |= int(words[r, w]) << (64 * w)
    return out


def _words(packed: np.ndarray) -> np.ndarray:
    """(rows, words) little-endian uint64 of packed bit rows (bytes), zero-padded to whole words."""
    rows, n_bytes = packed.shape
    padded = np.zeros((rows, -(-n_bytes // 8) * 8), dtype=np.uint8)
    padded[:, :n_bytes] = packed
    return padded.view("<u8")


class Lookups:
    """Lookup tables of one engine (see the module docstring).

    Attributes
    ----------
    prepared : geo.rules.prepared.Prepared
    row_listed : dict side -> bool array over ``engine.works`` rows: the row represents a works cluster
        that is not on the far river side of a point on ``side``
    row_cluster : int64 array over works rows (``prepared.works.row_cluster``)
    status_class : list of int per cluster (:data:`geo.rules.works.RUNNING`, ``PLANNED``, ...)
    stop_detours : list of int per stop: bit ``j`` set when detour ``j`` has a line serving the stop
    severity : list of int per detour
    works_table : ExtentNear over the works clusters (their representatives' extents) at 2 km, or None
    works_rank : int64 per cluster: (id, row) rank of the cluster's representative row
    works_listed : dict side -> bool per cluster: not on the far river side of a point on ``side``
    stops_table : NearTable over the stops with a point at the stop distance, or None
    stops : geopandas.GeoDataFrame, the engine's stops layer the stop tables were made from
    work_items, detour_items : per cluster / detour, the JSON item of ``/disruptions`` (copy before use)
    """

    #: the attributes made from each part of the prepared data (shared with lookups of the same part)
    WORKS_PART: tuple[str, ...] = ("row_cluster", "row_listed", "status_class", "works_table", "works_rank")
    WORKS_PART += ("works_listed", "work_items")
    DETOURS_PART = ("stop_detours", "severity", "_selections", "detour_items")
    #: made from the stops layer alone (shared with lookups of the same stops frame)
    STOPS_PART = ("stops", "stops_table", "_stop_entry_rows")

    def __init__(self, engine, prepared, reuse=()):
        """``reuse``: lookups built before; the tables of a prepared part (works, detours) that is the very
        object of one of them are shared with it instead of being built again."""
        p = self.prepared = prepared
        w, d = p.works, p.detours
        works_from = next((lk for lk in reuse if lk.prepared.works is w), None)
        detours_from = next((lk for lk in reuse if lk.prepared.detours is d), None)
        stops_from = next((lk for lk in reuse if lk.stops is engine.stops), None)
        parts = (
            (works_from, self.WORKS_PART),
            (detours_from, self.DETOURS_PART),
            (stops_from, self.STOPS_PART),
        )
        for donor, names in parts:
            for name in names if donor is not None else ():
                if hasattr(donor, name):  # the tables a lookups without a usable NearTable lacks
                    setattr(self, name, getattr(donor, name))
        if stops_from is None:
            self._stops_near_table(engine)
        if works_from is None:
            self._works_tables(engine, w)
        if detours_from is None:
            self._detours_tables(engine, d)

    def _works_tables(self, engine, w):
        self.row_cluster = w.row_cluster
        rep = w.row_cluster >= 0
        row_side = np.full(w.row_cluster.size, RIVER_NONE, dtype=np.int8)
        row_side[rep] = w.side[w.row_cluster[rep]]
        self.row_listed = {s: rep & near_side(s, row_side) for s in SIDES}
        self.status_class = w.status_class.tolist()
        self._works_near_table(engine, w)
        self.work_items = w.templates  # JSON items of /disruptions; distanceKm is set per request

    def _detours_tables(self, engine, d):
        n_det = d.ids.size
        if n_det and d.stop_bits.shape[0]:
            self.stop_detours = stop_detour_masks(d.stop_bits, d.line_bits)
        else:
            self.stop_detours = [0] * d.stop_bits.shape[0]
        self.severity = d.severity.tolist()
        self._selections: dict = {}
        self.detour_items = [
            {
                "id": i,
                "title": title,
                "lines": lines,
                "severity": sev,
                "estimatedDelayMin": delay,
                "endDate": end,
                "lineDetails": details,
            }
            for i, title, lines, sev, delay, end, details in d.items
        ]

    def _works_near_table(self, engine, w):
        """The works-cluster :class:`geo.index.near_one.ExtentNear` (None when unusable: the engine's own
        queries serve then)."""
        rep = np.flatnonzero(self.row_cluster >= 0)
        clusters = self.row_cluster[rep]
        ids = engine.id_texts("works")
        rank = np.empty(w.ids.size, dtype=np.int64)  # (id, row) order of the representatives
        rank[clusters[np.argsort(ids[rep], kind="stable")] if ids is not None else clusters] = np.arange(
            rep.size
        )
        # an engine taken from a row source (an asOf one) is asked a few points: its tables on demand
        near = ExtentNear(w.extents, wk.RADIUS_KM, lazy=engine.row_source("works") is not None)
        self.works_table = near if near.usable else None
        if self.works_table is not None:
            self.works_rank = rank
            self.works_listed = {s: near_side(s, w.side) for s in SIDES}

    def _stops_near_table(self, engine):
        """The stops' :class:`geo.index.near_one.NearTable` (None when unusable) and each entry's stop row."""
        self.stops = engine.stops
        lat, lng = engine.layer_points("stops")
        rows = np.flatnonzero(np.isfinite(lat) & np.isfinite(lng))
        table = NearTable(lat[rows], lng[rows], STOP_RADIUS_KM)
        self.stops_table = table if table.usable else None
        self._stop_entry_rows = rows[table.point].tolist() if table.usable else []

    def selection(self, mask: int) -> np.ndarray:
        """int64 array of the detours in bit mask ``mask``, ascending (cached per mask).

        Examples
        --------
        >>> lookups(engine).selection(0b101).tolist()  # doctest: +SKIP
        [0, 2]
        """
        sel = self._selections.get(mask)
        if sel is None:
            sel = np.array([j for j in range(mask.bit_length()) if mask >> j & 1], dtype=np.int64)
            if len(self._selections) >= MAX_SELECTIONS:
                self._selections.clear()
            self._selections[mask] = sel
        return sel
