"""A snapshot layer as row versions, and back: the generic encoding of the history store.

A layer file (GeoParquet) becomes its Arrow schema plus one canonical JSON array per row (the values in
column order: timestamps as epoch integers, WKB geometry as hex). A row is known by its key (the layer's
declared key columns, else ``id``, else its own content) and versioned by the sha256 of its JSON text, so a
row that did not change between two publishes has the same hash and costs nothing. Valid time comes from
the layer's declared time columns. Decoding a publish's rows under that publish's schema gives back the
very frame the snapshot held: the same GeoParquet bytes, hence the same ``snapshotId``.

Nothing here knows a database: :mod:`app.history.store` keeps what this module produces.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

#: key columns of a layer whose rows have no ``id`` (others: ``id``, else the content is the key)
KEY_COLUMNS: dict[str, tuple[str, ...]] = {"no2": ("station_id", "timestamp"), "river": ("part",)}
#: valid time of a row: (start column, end column or a duration in ms after the start)
VALID_TIME: dict[str, tuple[str, str | int]] = {
    "works": ("start", "end"),
    "detours": ("start", "end"),
    "no2": ("timestamp", 3_600_000),
}
#: layers indexed as series at record time (``history_series``): per row its series (column), the hour or
#: instant (the valid-time start) and its value (column), NULL unless the row's ``(column, value)`` test holds
SERIES: dict[str, tuple[str, str, tuple[str, str]]] = {"no2": ("station_id", "value", ("kind", "measured"))}
#: layers whose rows' geometry bounding boxes are indexed at record time (``history_extent``)
EXTENT_INDEXED: tuple[str, ...] = ("works",)
SEP = "\x1f"  # between key parts: sorts below every printable character, so key order = column order
DUP = "\x1e"  # before the ordinal of a repeated key (``k``, ``k\x1e2``, ``k\x1e3``)


_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=True).encode


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class EncodedLayer:
    """One layer of one publish: its schema bytes, rows as ``key -> (hash, json bytes, valid_from,
    valid_to)``, and the key order when it is not the sorted one (None: sorted)."""

    schema: bytes
    rows: dict[str, tuple[str, bytes, int | None, int | None]]
    order: list[str] | None
    #: :data:`SERIES` layers: ``key -> (series, t, value or None)``
    series: dict[str, tuple[str, int | None, float | None]] = dataclass_field(default_factory=dict)
    #: :data:`EXTENT_INDEXED` layers: ``hash -> the row's geometry`` (WKB hex, None: none), measured by
    #: :meth:`boxes_of` only for the rows a publish writes
    shapes: dict[str, str | None] = dataclass_field(default_factory=dict)

    def boxes_of(self, hashes: list[str]) -> dict[str, tuple[float, float, float, float]]:
        """``hash -> (min_lat, min_lng, max_lat, max_lng)`` of the rows ``hashes`` (NaN: no geometry)."""
        return _boxes([self.shapes[h] for h in hashes], hashes)


def _python_column(column: pa.ChunkedArray) -> list:
    kind = column.type
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return column.cast(pa.int64()).to_pylist()
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return [None if v is None else v.hex() for v in column.to_pylist()]
    return column.to_pylist()


def _key_part(value) -> str:
    return f"{value:020d}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


#: per layer, the rows last encoded by this process under one schema: ``(schema, key -> (values, hash,
#: json))``; a row whose values are those of its key there is not encoded and hashed again (a refresher
#: records each publish's works, most of them unchanged)
_LAST: dict[str, tuple[bytes, dict[str, tuple[tuple, str, bytes]]]] = {}
_LAST_LOCK = threading.Lock()


def _same(values: tuple, before: tuple, floats: list[int]) -> bool:
    """Equal values that also encode alike (``0.0 == -0.0``, yet their JSON differs)."""
    return values == before and all(
        values[i] != 0.0 or math.copysign(1.0, values[i]) == math.copysign(1.0, before[i])
        for i in floats
        if values[i] is not None
    )


def encode_table(layer: str, table: pa.Table) -> EncodedLayer:
    """Rows, schema and order of one layer's Arrow table."""
    names = table.column_names
    columns = [_python_column(table.column(i)) for i in range(table.num_columns)]
    key_cols = KEY_COLUMNS.get(layer) or (("id",) if "id" in names else ())
    key_idx = [names.index(c) for c in key_cols if c in names]
    valid = VALID_TIME.get(layer)
    start_idx = names.index(valid[0]) if valid and valid[0] in names else None
    end = valid[1] if valid else None
    end_idx = names.index(end) if isinstance(end, str) and end in names else None
    schema = table.schema.serialize().to_pybytes()
    floats = [i for i, f in enumerate(table.schema) if pa.types.is_floating(f.type)]
    with _LAST_LOCK:
        last_schema, last = _LAST.get(layer, (b"", {}))
    if last_schema != schema or not key_idx:
        last = {}
    memo: dict[str, tuple[tuple, str, bytes]] = {}
    rows: dict[str, tuple[str, bytes, int | None, int | None]] = {}
    keys: list[str] = []
    key_parts = [list(map(_key_part, columns[i])) for i in key_idx]
    row_keys = key_parts[0] if len(key_parts) == 1 else list(map(SEP.join, zip(*key_parts)))
    for n_row, values in enumerate(zip(*columns) if columns else ()):
        if key_idx:
            key = row_keys[n_row]
        else:
            data = _ENCODE(values).encode()
            key = hashed = digest(data)
        if key in rows:
            n = 2
            while f"{key}{DUP}{n}" in rows:
                n += 1
            key = f"{key}{DUP}{n}"
        if key_idx:
            before = last.get(key)
            if (
                before is not None
                and before[0] == values
                and (not floats or _same(values, before[0], floats))
            ):
                hashed, data = before[1], before[2]
            else:
                data = _ENCODE(values).encode()
                hashed = digest(data)
            memo[key] = (values, hashed, data)
        valid_from = values[start_idx] if start_idx is not None else None
        if end_idx is not None:
            valid_to = values[end_idx]
        elif isinstance(end, int) and valid_from is not None:
            valid_to = valid_from + end
        else:
            valid_to = None
        rows[key] = (hashed, data, valid_from, valid_to)
        keys.append(key)
    if key_idx:
        with _LAST_LOCK:
            _LAST[layer] = (schema, memo)
    order = None if keys == sorted(keys) else keys
    out = EncodedLayer(schema, rows, order)
    if layer in SERIES:
        out.series = _series(layer, names, columns, keys)
    if layer in EXTENT_INDEXED and "geometry" in names:
        geometry = columns[names.index("geometry")]
        out.shapes = {rows[k][0]: g for k, g in zip(keys, geometry)}
    return out


def _series(layer: str, names: list[str], columns: list[list], keys: list[str]) -> dict:
    """``key -> (series, t, value)`` of a :data:`SERIES` layer (value None unless the row's test holds)."""
    series_col, value_col, (test_col, test_value) = SERIES[layer]
    start_col = VALID_TIME[layer][0]
    if not {series_col, value_col, test_col, start_col} <= set(names):
        return {}
    series, values, tests, starts = (
        columns[names.index(c)] for c in (series_col, value_col, test_col, start_col)
    )
    out = {}
    for key, s, v, test, t in zip(keys, series, values, tests, starts):
        ok = isinstance(test, str) and test.strip().lower() == test_value
        ok = ok and isinstance(v, (int, float)) and math.isfinite(v)
        out[key] = (str(s), t, float(v) if ok else None)
    return out


def _boxes(geometry: list, hashes: list[str]) -> dict:
    """``hash -> (min_lat, min_lng, max_lat, max_lng)`` of each row's geometry (WKB hex or None)."""
    import shapely

    geoms = shapely.from_wkb(np.array(geometry, dtype=object))
    bounds = shapely.bounds(geoms)  # (min x, min y, max x, max y); NaN for a missing geometry
    return {h: (float(b[1]), float(b[0]), float(b[3]), float(b[2])) for h, b in zip(hashes, bounds)}


def encode_file(layer: str, data: bytes) -> EncodedLayer:
    """:func:`encode_table` of a GeoParquet file's bytes."""
    return encode_table(layer, pq.read_table(io.BytesIO(data)))


def decode_table(schema_bytes: bytes, rows: list) -> pa.Table:
    """The Arrow table of rows (in order: their JSON texts, or the values of their JSON arrays as
    :meth:`RowCache.rows` gives them) under a publish's schema."""
    schema = pa.ipc.read_schema(pa.py_buffer(schema_bytes))
    rows = [json.loads(r) if isinstance(r, (bytes, bytearray, str)) else r for r in rows]
    arrays = []
    for i, field in enumerate(schema):
        values = [r[i] for r in rows]
        kind = field.type
        if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
            arrays.append(pa.array(values, type=pa.int64()).cast(kind))
        elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            arrays.append(pa.array([None if v is None else bytes.fromhex(v) for v in values], type=kind))
        else:
            arrays.append(pa.array(values, type=kind))
    return pa.Table.from_arrays(arrays, schema=schema)


def decode_layer(schema_bytes: bytes, rows: list):
    """The GeoDataFrame of a layer (what ``geo.data.snapshot.read_layer`` gives for the original file) from
    its rows, in order (as :func:`decode_table`)."""
    from geo.data.snapshot import layer_from_table, read_layer

    table = decode_table(schema_bytes, rows)
    frame = layer_from_table(table)
    if frame is not None:
        return frame
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="none")
    return read_layer(buf.getvalue())


def order_keys(keys, order: list[str] | None) -> list[str]:
    """The keys in their layer order: the recorded order, else sorted."""
    return list(order) if order is not None else sorted(keys)


def pack_order(order: list[str]) -> bytes:
    return json.dumps(order, separators=(",", ":"), ensure_ascii=False).encode()


def unpack_order(data: bytes) -> list[str]:
    return json.loads(data)


class RowCache:
    """Decoded rows (their JSON arrays' values) by content hash, shared by the rebuilds of one process: a
    row a publish shares with one rebuilt before is neither fetched nor decoded again. Holds at most
    ``limit`` bytes of row JSON (the least recently used rows go first). Thread-safe.

    Examples
    --------
    >>> cache = RowCache(1 << 20)
    >>> cache.rows(["h1", "h2"], lambda missing: {h: b'[1,"a"]' for h in missing})
    [[1, 'a'], [1, 'a']]
    >>> cache.rows(["h1"], lambda missing: {})
    [[1, 'a']]
    """

    def __init__(self, limit: int):
        self.limit = limit
        self.size = 0
        self._rows: OrderedDict[str, tuple[list, int]] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every row (benches: a fresh process)."""
        with self._lock:
            self._rows.clear()
            self.size = 0

    def rows(self, hashes: list[str], fetch: Callable[[list[str]], dict[str, bytes]]) -> list[list]:
        """The values of the rows ``hashes`` (in that order); ``fetch(missing)`` gives the JSON of the
        rows not held, by hash."""
        with self._lock:
            found = {h: self._rows[h][0] for h in set(hashes) if h in self._rows}
        missing = [h for h in dict.fromkeys(hashes) if h not in found]
        if missing:
            fetched = fetch(missing)
            with self._lock:
                for h in missing:
                    data = fetched[h]
                    values = found[h] = json.loads(data)
                    if len(data) <= self.limit:
                        self._rows[h] = (values, len(data))
                        self.size += len(data)
                while self.size > self.limit:
                    _h, (_values, n) = self._rows.popitem(last=False)
                    self.size -= n
        with self._lock:
            for h in found:
                if h in self._rows:
                    self._rows.move_to_end(h)
        return [found[h] for h in hashes]
