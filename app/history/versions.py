"""Every recorded version of a changing layer, held in memory: a publish's layer is a mask, not a query.

A cold ``asOf`` rebuild reads the layers whose file changed since the engines in memory (works, NO2, detours).
Instead of asking the store for the rows open at publish ``p`` and decoding them, this module keeps, per store
and layer, a :class:`LayerVersions`: the key, content hash and recorded-time interval (``rec_from``,
``rec_to``) of every version, as arrays; the layer at ``p`` is the mask ``rec_from <= p < rec_to``, in the
publish's order. Recorded time only grows: a version closed at or before the newest publish known never
changes again, so a refresh re-reads only the versions that were still open then.

The contents come from a :class:`RowTable` per layer and schema: every row content decoded so far, as one
Arrow table plus its parsed geometries, indexed by content hash. The layer's frame is a ``take`` of it,
converted exactly as a GeoParquet file of those rows is read (``geo.data.snapshot.layer_from_table``), hence
the same frame, the same bytes and ``snapshotId`` (tests/history/test_asof_versions.py).

Memory (docs/history.md → How an ``asOf`` engine is rebuilt): about 100 bytes per version and the decoded
rows up to :data:`TABLE_LIMIT` bytes per process (a table that would exceed it starts again from the rows
asked). Nothing here knows SQL beyond :class:`app.history.store.HistoryStore`'s reads.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import numpy as np
import pyarrow as pa

from . import rows as rowcodec

#: decoded rows held per process, in bytes (Arrow buffers plus an estimate of the parsed geometries)
TABLE_LIMIT = 128 << 20
#: per parsed geometry, besides its WKB: the Shapely object and its GEOS copy
GEOMETRY_BYTES = 200
#: versions of one layer above which the layer is read per publish from the store instead
VERSIONS_LIMIT = 4_000_000

_lock = threading.Lock()
_versions: dict[tuple[str, str], LayerVersions] = {}
_tables: dict[tuple[str, str], RowTable] = {}


class LayerVersions:
    """The versions of one layer of one store: ``keys`` (UTF-8 bytes: their byte order is the key order),
    ``hashes`` (content sha256, 32 raw bytes: ``V32``, which keeps trailing zero bytes), ``rec_from`` and ``rec_to`` (publish numbers), complete for every
    publish up to ``known``."""

    def __init__(self, layer: str):
        self.layer = layer
        self.known = 0
        self.keys = np.empty(0, dtype="S1")
        self.hashes = np.empty(0, dtype="V32")
        self.rec_from = np.empty(0, dtype=np.int64)
        self.rec_to = np.empty(0, dtype=np.int64)

    def refresh(self, history, seq: int) -> None:
        """Make the versions complete up to publish ``seq`` (reads only those open at ``known``)."""
        if seq <= self.known:
            return
        _first, newest = history.first_last()  # before the versions: they are complete up to it
        found = history.versions_since(self.layer, self.known)
        kept = self.rec_to <= self.known
        keys = np.array([k.encode() for k, _h, _f, _t in found]) if found else np.empty(0, dtype="S1")
        hashes = np.array([bytes.fromhex(h) for _k, h, _f, _t in found], dtype="V32")
        self.keys = np.concatenate([self.keys[kept], keys])
        self.hashes = np.concatenate([self.hashes[kept], hashes])
        self.rec_from = np.concatenate(
            [self.rec_from[kept], np.array([f for _k, _h, f, _t in found], dtype=np.int64)]
        )
        self.rec_to = np.concatenate(
            [self.rec_to[kept], np.array([t for _k, _h, _f, t in found], dtype=np.int64)]
        )
        self.known = newest.seq if newest is not None else 0

    def at(self, seq: int, order: list[str] | None) -> np.ndarray:
        """Content hashes of the layer as publish ``seq`` carried it, in its order (the recorded one, else
        the keys sorted)."""
        open_at = np.flatnonzero((self.rec_from <= seq) & (seq < self.rec_to))
        keys = self.keys[open_at]
        if order is None:
            rank = np.argsort(keys, kind="stable")
        else:
            position = {k: i for i, k in enumerate(keys.tolist())}
            rank = np.array([position[k.encode()] for k in order], dtype=np.int64)
        return self.hashes[open_at[rank]]


class RowTable:
    """Every decoded row content of one layer under one schema: an Arrow table, its parsed geometries and
    the row of each content hash."""

    def __init__(self, schema: bytes):
        from geo.data.rows import RowSource

        self.schema = schema
        self.position: dict[bytes, int] = {}
        self.chunks: list[pa.Table] = []
        self.geometries: list = []
        self.source = RowSource()  # the same rows as frames: what geo derives row by row, derived once
        self.size = 0
        self._table: pa.Table | None = None
        self._geometry: Any = None

    def add(self, hashes: list[bytes], fetch) -> None:
        """Decode the row contents ``hashes`` (not held yet) from ``fetch(hex hashes) -> {hex: JSON}``."""
        from geo.data.snapshot import layer_from_table

        texts = fetch([h.hex() for h in hashes])
        chunk = rowcodec.decode_table(self.schema, [json.loads(texts[h.hex()]) for h in hashes])
        frame = layer_from_table(chunk)
        if frame is None:
            raise ValueError("a layer the GeoParquet fast path does not cover")
        start = self.source.append(frame)
        self.position.update((h, start + i) for i, h in enumerate(hashes))
        self.chunks.append(chunk)
        self.geometries.append(frame.geometry.values)
        self.size += chunk.nbytes + GEOMETRY_BYTES * len(chunk)
        self._table = self._geometry = None

    def frame(self, hashes: np.ndarray):
        """The GeoDataFrame of the rows ``hashes`` (all held), in that order, and their positions in
        :attr:`source`."""
        from geopandas.array import from_shapely

        from geo.data.snapshot import layer_from_table

        if self._table is None:
            self._table = pa.concat_tables(self.chunks).combine_chunks()
            self._geometry = from_shapely(
                np.concatenate([np.asarray(g, dtype=object) for g in self.geometries]),
                crs=self.geometries[0].crs,
            )
            self.chunks, self.geometries = [self._table], [self._geometry]
        position = self.position
        rows = np.fromiter((position[h] for h in hashes.tolist()), dtype=np.int64, count=len(hashes))
        frame = layer_from_table(self._table.take(pa.array(rows)), geometry=self._geometry.take(rows))
        return frame, rows


def layer_frame(history, seq: int, layer: str, info: dict, records: int):
    """``(frame, (source, positions))``: the frame of ``layer`` as publish ``seq`` carried it (``info``: its
    schema and order hashes from the publish's manifest; ``records``: its row count there) and where its rows
    lie in a :class:`geo.data.rows.RowSource` (``Engine.from_layers(rows=…)``); None when the versions held
    disagree with the manifest (the caller then reads the layer from the store)."""
    with _lock:
        held = _versions.setdefault((history.identity, layer), LayerVersions(layer))
        held.refresh(history, seq)
        if len(held.rec_to) > VERSIONS_LIMIT:
            return None
        order = rowcodec.unpack_order(history._blob(info["order"])) if info["order"] else None
        hashes = held.at(seq, order)
        if len(hashes) != records:  # not this store's versions (e.g. pruned and recorded again): read again
            del _versions[(history.identity, layer)]
            return None
        key = (layer, info["schema"])
        table = _tables.get(key)
        if table is None:
            table = _tables[key] = RowTable(history._blob(info["schema"]))
        missing = list(dict.fromkeys(h for h in hashes.tolist() if h not in table.position))
        if missing and table.size > TABLE_LIMIT:
            table = _tables[key] = RowTable(table.schema)
            missing = list(dict.fromkeys(hashes.tolist()))
        if missing:
            table.add(missing, history._blobs)
        frame, positions = table.frame(hashes)
        return frame, (table.source, positions)


def clear() -> None:
    """Forget every version and decoded row (benches: a fresh process)."""
    with _lock:
        _versions.clear()
        _tables.clear()
