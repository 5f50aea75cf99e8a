"""Every recorded version of a changing layer, held in memory: a publish's layer is a mask, not a query.

A cold ``asOf`` rebuild reads the layers whose file changed since the engines in memory (works, NO2, detours).
Instead of asking the store for the rows open at publish ``p`` and decoding them, this module keeps, per store
and layer, a :class:`LayerVersions`: the key, content hash and recorded-time interval (``rec_from``,
``rec_to``) of the versions open at the publishes asked so far (read by ranges, not the whole history), as arrays; the layer at ``p`` is the mask ``rec_from <= p < rec_to``, in the
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

import itertools
import json
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from geo.data.rows import Deferred
from geo.data.snapshot import pandas_dtypes

from . import rows as rowcodec
from .failures import HistoryError

#: decoded rows held per process, in bytes (Arrow buffers plus an estimate of the parsed geometries)
TABLE_LIMIT = 128 << 20
#: per parsed geometry, besides its WKB: the Shapely object and its GEOS copy
GEOMETRY_BYTES = 200
#: Arrow types whose pandas conversion is row by row, except for the nulls of integers and booleans
PLAIN_TYPES = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_floating,
    pa.types.is_integer,
    pa.types.is_boolean,
    pa.types.is_timestamp,
)
#: additions appended to the frame of every row before it is converted whole again
CONCATENATED = 4
#: versions of one layer above which the layer is read per publish from the store instead
VERSIONS_LIMIT = 4_000_000
#: publishes on either side of the one asked whose rows not held yet are decoded with its own (one addition,
#: one conversion: each costs a few ms however few its rows)
NEIGHBOURS = 3
#: publishes up to which a history's versions are read whole on the first need (a range per answer costs
#: more than the whole of a short history)
WHOLE_HISTORY = 100
#: the share of a publish's versions that a frame in memory must carry for a new table to start from it
SEED_SHARE = 0.5

_lock = threading.Lock()
_versions: dict[tuple[str, str], LayerVersions] = {}
_tables: dict[tuple[str, str], RowTable] = {}


class LayerVersions:
    """The versions of one layer of one store: ``keys`` (UTF-8 bytes: their byte order is the key order),
    ``hashes`` (content sha256, 32 raw bytes: ``V32``, which keeps trailing zero bytes), ``rec_from`` and ``rec_to`` (publish numbers), complete for every
    publish :attr:`covered` up to ``known``."""

    def __init__(self, layer: str):
        self.layer = layer
        self.known = 0
        self.keys = np.empty(0, dtype="S1")
        self.hashes = np.empty(0, dtype="V32")
        self.rec_from = np.empty(0, dtype=np.int64)
        self.rec_to = np.empty(0, dtype=np.int64)
        #: per publish up to ``known``: whether every version open there is held (read by :meth:`cover`);
        #: a version is held only when it is open at some covered publish
        self.covered = np.zeros(1, dtype=bool)
        #: per Arrow schema (its :func:`table_key`): the :class:`RowTable` holding this layer's rows and, per
        #: version, its row there (-1 while not looked up)
        self.rows: dict[str, tuple[RowTable, np.ndarray]] = {}
        #: per publish read so far: this layer's schema hash there (None: not carried, or no such publish)
        self.schemas: dict[int, str | None] = {}

    def refresh(self, history, seq: int) -> None:
        """Make the versions complete up to publish ``seq`` when it is after :attr:`known` (reads only those
        open at ``known`` or later; nothing held yet: only which publish is the newest)."""
        if seq <= self.known:
            return
        _first, newest = history.first_last()  # before the versions: they are complete up to it
        last = newest.seq if newest is not None else 0
        covered = np.zeros(max(last, self.known) + 1, dtype=bool)
        covered[: self.covered.size] = self.covered
        if self.known:
            found = history.versions_since(self.layer, self.known)
            self._add(found, self.rec_to <= self.known)
            covered[self.known :] = True
        self.covered, self.known = covered, max(last, self.known)

    def cover(self, history, first: int, last: int) -> None:
        """Hold every version open at the publishes ``first..last`` (up to :attr:`known`): only those not
        held yet are added, read as one range of the store, so what is read follows the publishes asked,
        not the length of the history."""
        first, last = max(first, 1), min(last, self.known)
        if first > last or self.covered[first : last + 1].all():
            return
        if self.known <= WHOLE_HISTORY:  # a short history: every version at once, not a range per answer
            first = 1
            last = self.known
        found = history.versions_between(self.layer, first, last)
        self._add(found, None)
        self.covered[first : last + 1] = True

    def _add(self, found: list, kept: np.ndarray | None) -> None:
        """Keep the versions ``kept`` (a mask; None: all) and add those of ``found`` (``(key, hex hash,
        rec_from, rec_to)`` rows) not held already (a held version is open at a covered publish)."""
        starts = ends = np.empty(0, dtype=np.int64)
        keys, hashes = np.empty(0, dtype="S1"), np.empty(0, dtype="V32")
        if found:
            texts, hexes, first, last = zip(*found)
            starts, ends = np.array(first, dtype=np.int64), np.array(last, dtype=np.int64)
            covered = np.flatnonzero(self.covered)
            new = np.ones(len(found), dtype=bool)
            if kept is None and covered.size:
                after = covered[np.minimum(np.searchsorted(covered, starts), covered.size - 1)]
                new = (after < starts) | (after >= ends)
            try:
                keys = np.array(texts, dtype=bytes)[new]  # ASCII keys: encoded at once
            except UnicodeEncodeError:
                keys = np.array([k.encode() for k in texts], dtype=bytes)[new]
            hashes = np.frombuffer(bytes.fromhex("".join(itertools.compress(hexes, new))), dtype="V32")
            starts, ends = starts[new], ends[new]
        if kept is None:
            kept = np.ones(self.rec_to.size, dtype=bool)
        self.keys = np.concatenate([self.keys[kept], keys]) if keys.size else self.keys[kept]
        self.hashes = np.concatenate([self.hashes[kept], hashes])
        self.rec_from = np.concatenate([self.rec_from[kept], starts])
        self.rec_to = np.concatenate([self.rec_to[kept], ends])
        unknown = np.full(len(starts), -1, dtype=np.int64)
        self.rows = {s: (t, np.concatenate([rows[kept], unknown])) for s, (t, rows) in self.rows.items()}

    def at(self, seq: int, order: list[str] | None) -> np.ndarray:
        """Content hashes of the layer as publish ``seq`` carried it, in its order (the recorded one, else
        the keys sorted)."""
        return self.hashes[self.versions_at(seq, order)]

    def versions_at(self, seq: int, order: list[str] | None) -> np.ndarray:
        """The versions (indexes into the arrays) of the layer as publish ``seq`` carried it, in its order."""
        open_at = np.flatnonzero((self.rec_from <= seq) & (seq < self.rec_to))
        keys = self.keys[open_at]
        if order is None:
            rank = np.argsort(keys, kind="stable")
        else:
            position = {k: i for i, k in enumerate(keys.tolist())}
            rank = np.array([position[k.encode()] for k in order], dtype=np.int64)
        return open_at[rank]

    def around(self, history, seq: int, schema: str, reach: int) -> np.ndarray:
        """The versions open at some publish of the run around ``seq`` (at most ``reach`` publishes on either
        side, up to :attr:`known`) whose layer has a schema of the :func:`table_key` ``schema``, as publish
        ``seq``'s has: rows encoded under such a schema only, so they decode under it."""
        first, last = max(seq - reach, 1), min(seq + reach, self.known)
        missing = [q for q in range(first, last + 1) if q not in self.schemas]
        if missing:
            found = history.layer_schemas(self.layer, missing[0], missing[-1])
            self.schemas.update((q, found.get(q)) for q in range(missing[0], missing[-1] + 1))

        def kind(q: int) -> str | None:
            found = self.schemas[q]
            return None if found is None else table_key(history, found)

        low = high = seq
        while low > first and kind(low - 1) == schema:
            low -= 1
        while high < last and kind(high + 1) == schema:
            high += 1
        self.cover(history, low, high)
        return np.flatnonzero((self.rec_from <= high) & (low < self.rec_to))

    def rows_in(self, schema: str, table: RowTable, at: np.ndarray) -> np.ndarray:
        """The rows of ``table`` (of Arrow schema ``schema``) holding the versions ``at`` (-1: its content is
        not held); a version is looked up in the table until found, then known."""
        held, rows = self.rows.get(schema, (None, None))
        if held is not table or rows is None:
            rows = np.full(len(self.rec_to), -1, dtype=np.int64)
            self.rows[schema] = (table, rows)
        unknown = at[rows[at] < 0]
        if unknown.size:
            position = table.position
            rows[unknown] = [position.get(h, -1) for h in self.hashes[unknown].tolist()]
        return rows[at]


class RowTable:
    """Every decoded row content of one layer under one schema: an Arrow table, its parsed geometries and
    the row of each content hash; and the frame of every row, which a layer's frame is taken from."""

    def __init__(self, schema: bytes):
        from geo.data.rows import RowSource

        self.schema = schema
        #: the schemas (hashes) whose rows this table holds: its own, and those found to convert alike
        self.schemas: set[str] = set()
        self.position: dict[bytes, int] = {}
        self.chunks: list[pa.Table] = []
        self.geometries: list = []
        self.source = RowSource()  # the same rows as frames: what geo derives row by row, derived once
        self.size = 0
        self._table: pa.Table | None = None
        self._geometry: Any = None
        self._whole: Any = None  # the frames of source.chunks concatenated (None: not made yet)
        self._whole_chunks = 0
        self._concatenated = 0  # additions appended to the whole frame since it was converted whole
        self._takes: bool | None = None  # whether frames are taken from the frame of every row
        self._by_nulls: list[str] = []  # the columns a conversion types by the nulls of its rows

    def add(self, hashes: list[bytes], fetch) -> None:
        """Decode the row contents ``hashes`` (not held yet) from ``fetch(hex hashes) -> {hex: JSON}``."""
        from geo.data.snapshot import layer_from_table

        texts = fetch([h.hex() for h in hashes])
        rows = json.loads(b"[" + b",".join(texts[h.hex()] for h in hashes) + b"]")  # one parse, not one a row
        chunk = rowcodec.decode_table(self.schema, rows)
        frame = layer_from_table(chunk)
        if frame is None:
            raise ValueError("a layer the GeoParquet fast path does not cover")
        start = self.source.append(frame)
        self.position.update((h, start + i) for i, h in enumerate(hashes))
        self.chunks.append(chunk)
        self.geometries.append(frame.geometry.values)
        self.size += chunk.nbytes + GEOMETRY_BYTES * len(chunk)
        self._table = self._geometry = None

    def seed(self, hashes: list[bytes], frame, known: dict | None = None) -> bool:
        """Hold the rows of ``frame`` (a layer as read from its file: a frame of this schema's plain columns,
        e.g. the live engine's) as the contents ``hashes``, in order, without fetching or decoding them; False
        (nothing held) when the frame could convert differently from decoded rows (see :meth:`_arrow_of`).
        ``known``: the values derived row by row over that frame so far (``Engine.row_values``)."""
        if self.size or len(hashes) != len(frame):
            return False
        table = self._arrow_of(frame)
        if table is None:
            return False
        start = self.source.append(frame, known)
        self.position.update((h, start + i) for i, h in enumerate(hashes))
        self.chunks.append(table)
        self.geometries.append(frame.geometry.values)
        self.size += table.nbytes + GEOMETRY_BYTES * len(table)
        self._table = self._geometry = None
        return True

    def _arrow_of(self, frame) -> pa.Table | None:
        """The Arrow table decoding ``frame``'s rows would give, made from the frame; None unless that is
        exact: the frame has this schema's columns and geometry CRS, every column is of a plain type (strings,
        floats, times: equal after a round trip; a float NaN read back as null converts to NaN again) and
        every integer or boolean column kept its type (a null made it float or object: not exact). The
        geometry column is left null: frames take the parsed geometries, never its WKB."""
        from geo.data.snapshot import layer_crs

        schema = pa.ipc.read_schema(pa.py_buffer(self.schema))
        primary = json.loads((schema.metadata or {}).get(b"geo") or b"{}").get("primary_column")
        meta = json.loads((schema.metadata or {}).get(b"pandas") or b"{}")
        if meta.get("index_columns") or primary not in schema.names:
            return None
        if [c for c, _t in pandas_dtypes(self.schema)] != [str(c) for c in frame.columns]:
            return None
        crs = layer_crs(schema)
        if not (crs is None if frame.crs is None else frame.crs == crs):
            return None
        arrays = []
        for field in schema:
            if field.name == primary:
                arrays.append(pa.nulls(len(frame), field.type))
                continue
            column = frame[field.name]
            if not any(kind(field.type) for kind in PLAIN_TYPES):
                return None
            if (pa.types.is_integer(field.type) and column.dtype.kind not in "iu") or (
                pa.types.is_boolean(field.type) and column.dtype.kind != "b"
            ):
                return None
            try:
                arrays.append(pa.Array.from_pandas(column, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                return None
        return pa.Table.from_arrays(arrays, schema=schema)

    def _combined(self) -> pa.Table:
        if self._table is None:
            from geopandas.array import from_shapely

            self._table = pa.concat_tables(self.chunks).combine_chunks()
            self._geometry = from_shapely(
                np.concatenate([np.asarray(g, dtype=object) for g in self.geometries]),
                crs=self.geometries[0].crs,
            )
            self.chunks, self.geometries = [self._table], [self._geometry]
        return self._table

    def frame_at(self, rows: np.ndarray):
        """The GeoDataFrame of the rows at ``rows`` (positions in :attr:`source`), in that order: what
        converting those rows' Arrow table gives (``geo.data.snapshot.layer_from_table``: the same values,
        dtypes and CRS), taken from the frame of every row."""
        import pandas as pd

        whole = self._every_row()
        if whole is None:  # a schema whose conversion may depend on the rows beyond their nulls
            from geo.data.snapshot import layer_from_table

            table = self._combined()
            return layer_from_table(table.take(pa.array(rows)), geometry=self._geometry.take(rows))
        frame = whole.take(rows)
        frame.index = pd.RangeIndex(len(rows))
        for name in self._by_nulls:
            column = self._combined().column(name).take(pa.array(rows))
            if column.null_count == 0:  # converted without nulls: integers stay integers, booleans booleans
                frame[name] = column.to_numpy()
        return frame

    def _every_row(self):
        """The frame of every row (converted whole, then the frames of a few additions appended), or None when
        a taken part of it could differ from converting those rows: only columns of strings, floats,
        integers, booleans and times are taken, and a column of integers or booleans that holds nulls
        (converted to floats or objects) is converted again where the rows taken hold none."""
        import pandas as pd

        if self._takes is None:
            schema = pa.ipc.read_schema(pa.py_buffer(self.schema))
            meta = json.loads((schema.metadata or {}).get(b"pandas") or b"{}")
            primary = json.loads((schema.metadata or {}).get(b"geo") or b"{}").get("primary_column")
            self._takes = not meta.get("index_columns") and all(
                f.name == primary or any(kind(f.type) for kind in PLAIN_TYPES) for f in schema
            )
        if not self._takes:
            return None
        chunks = self.source.chunks
        if self._whole_chunks < len(chunks):
            if self._whole is None or self._concatenated >= CONCATENATED:  # converted whole: one Arrow chunk
                from geo.data.snapshot import layer_from_table

                self._whole = layer_from_table(self._combined(), geometry=self._geometry)
                self._concatenated = 0
            else:  # the new chunks' frames appended (their Arrow columns chunked: takes slow down)
                self._whole = pd.concat([self._whole, *chunks[self._whole_chunks :]], ignore_index=True)
                self._concatenated += 1
            self._whole_chunks = len(chunks)
            self._by_nulls = [
                f.name
                for f in pa.ipc.read_schema(pa.py_buffer(self.schema))
                if (pa.types.is_integer(f.type) and self._whole[f.name].dtype == np.float64)
                or (pa.types.is_boolean(f.type) and self._whole[f.name].dtype == object)
            ]
        return self._whole


#: schema hash -> :func:`table_key`
_table_keys: dict[str, str] = {}


def table_key(history, schema: str) -> str:
    """What decides a :class:`RowTable`: the hash of the schema ``schema`` (a blob of ``history``) without
    what depends on the file rather than on its rows' values and columns: the GeoParquet ``bbox`` of each
    geometry column, and whether a text or binary column is stored with 32- or 64-bit offsets (``string`` or
    ``large_string``, with the pandas type names that come with it). Rows decoded under one such schema have
    the values they have under another; their frame too where both schemas convert to the same pandas
    dtypes (``geo.data.snapshot.pandas_dtypes``), which :func:`_table_of` checks before a table is shared:
    publishes whose works differ only in extent share one table."""
    found = _table_keys.get(schema)
    if found is None:
        parsed = pa.ipc.read_schema(pa.py_buffer(history._blob(schema)))
        metadata = dict(parsed.metadata or {})
        geo = json.loads(metadata.get(b"geo") or b"{}")
        for column in (geo.get("columns") or {}).values():
            if isinstance(column, dict):
                column.pop("bbox", None)
        texts = {f.name for f in parsed if _LARGE.get(str(f.type), f.type) in _LARGE.values()}
        frame = json.loads(metadata.get(b"pandas") or b"{}")
        for column in frame.get("columns") or []:
            if isinstance(column, dict) and column.get("field_name") in texts:
                column.pop("pandas_type", None)
                column.pop("numpy_type", None)
        metadata[b"geo"], metadata[b"pandas"] = (
            json.dumps(part, sort_keys=True).encode() for part in (geo, frame)
        )
        fields = [f.with_type(_LARGE.get(str(f.type), f.type)) for f in parsed]
        normal = pa.schema(fields, metadata=metadata).serialize().to_pybytes()
        found = _table_keys[schema] = rowcodec.digest(normal)
    return found


def _table_of(history, layer: str, schema: str) -> tuple[str, RowTable, bool]:
    """``(key, table, new)``: the :class:`RowTable` of ``layer`` holding the rows of schema ``schema`` (a
    hash): the table of its :func:`table_key` when that table's schema converts to the same pandas dtypes,
    else one of that very schema (its key the hash itself). Under :data:`_lock`."""
    key = table_key(history, schema)
    table = _tables.get((layer, key))
    if table is not None and schema not in table.schemas:
        if pandas_dtypes(history._blob(schema)) != pandas_dtypes(table.schema):
            key = schema
            table = _tables.get((layer, key))
        else:
            table.schemas.add(schema)
    if table is None:
        table = _tables[(layer, key)] = RowTable(history._blob(schema))
        table.schemas.add(schema)
        return key, table, True
    return key, table, False


#: the 64-bit offset type of each 32-bit one (by the type's text)
_LARGE = {"string": pa.large_string(), "binary": pa.large_binary()}


def _seed(history, held: LayerVersions, table: RowTable, schema: str, seeds, wanted: np.ndarray) -> None:
    """Fill a new ``table`` with the first of ``seeds`` (``(seq, info, records, frame, known)``: a frame of
    the layer's very file as publish ``seq`` recorded it, e.g. the live engine's, and the values derived over
    it row by row) under its schema: that publish's versions are the frame's rows, in its order, so their
    contents need no fetch and no decode, and their row-wise values are not derived again. Only a publish
    carrying at least :data:`SEED_SHARE` of the versions ``wanted`` (held) seeds: the table is made from all
    its rows, which would cost more than decoding the few shared."""
    for seq, info, records, frame, known in seeds:
        if table_key(history, info["schema"]) != schema or len(frame) != records or seq > held.known:
            continue
        shared = (held.rec_from[wanted] <= seq) & (seq < held.rec_to[wanted])
        if shared.sum() < SEED_SHARE * max(len(wanted), 1):
            continue
        if info["schema"] not in table.schemas:
            if pandas_dtypes(history._blob(info["schema"])) != pandas_dtypes(table.schema):
                continue
            table.schemas.add(info["schema"])
        order = rowcodec.unpack_order(history._blob(info["order"])) if info["order"] else None
        held.cover(history, seq, seq)
        at = held.versions_at(seq, order)
        if len(at) == records and table.seed(held.hashes[at].tolist(), frame, known):
            return


def layer_frame(
    history,
    seq: int,
    layer: str,
    info: dict,
    records: int,
    *,
    deferred: bool = False,
    seeds: Callable[[], list] | None = None,
):
    """``(frame, (source, positions))``: the frame of ``layer`` as publish ``seq`` carried it (``info``: its
    schema and order hashes from the publish's manifest; ``records``: its row count there) and where its rows
    lie in a :class:`geo.data.rows.RowSource` (``Engine.from_layers(rows=…)``); None when the versions held
    disagree with the manifest (the caller then reads the layer from the store). ``deferred``: the frame as a
    :class:`geo.data.rows.Deferred`, taken when first read. Rows not held yet are decoded with those of
    the publishes around (:data:`NEIGHBOURS`): one addition for several publishes. ``seeds()``: frames of
    this layer's file at recorded publishes (:func:`_seed`), asked when a table is started: its first rows."""
    with _lock:
        held = _versions.setdefault((history.identity, layer), LayerVersions(layer))
        held.refresh(history, seq)
        held.cover(history, seq, seq)
        if len(held.rec_to) > VERSIONS_LIMIT:
            return None
        order = rowcodec.unpack_order(history._blob(info["order"])) if info["order"] else None
        at = held.versions_at(seq, order)
        if len(at) != records:  # not this store's versions (e.g. pruned and recorded again): read again
            del _versions[(history.identity, layer)]
            return None
        schema, table, new = _table_of(history, layer, info["schema"])
        if new and seeds is not None:
            _seed(history, held, table, schema, seeds(), at)
        positions = held.rows_in(schema, table, at)
        if (positions < 0).any():
            wanted = at[positions < 0]
            if table.size > TABLE_LIMIT:  # started again from this publish's rows alone
                table = _tables[(layer, schema)] = RowTable(table.schema)
                table.schemas.add(info["schema"])
                wanted = at
            elif NEIGHBOURS and table.size and not new:  # with the rows the publishes around it add (one
                # addition for several; not the first, which holds a whole layer already, nor the first after
                # a table was seeded: a process's first answer)
                near = held.around(history, seq, schema, NEIGHBOURS)
                wanted = near[held.rows_in(schema, table, near) < 0]
            try:
                table.add(list(dict.fromkeys(held.hashes[wanted].tolist())), history._blobs)
            except HistoryError:  # a neighbour pruned since its schema was read: this publish's rows alone
                held.schemas.clear()
                own = at[held.rows_in(schema, table, at) < 0]
                table.add(list(dict.fromkeys(held.hashes[own].tolist())), history._blobs)
            positions = held.rows_in(schema, table, at)
        if deferred:
            first = table.source.chunks[0]
            frame = Deferred(lambda: table.frame_at(positions), first.crs, first.columns, len(positions))
            return frame, (table.source, positions)
        return table.frame_at(positions), (table.source, positions)


def clear() -> None:
    """Forget every version and decoded row (benches: a fresh process)."""
    with _lock:
        _versions.clear()
        _tables.clear()
        _table_keys.clear()
