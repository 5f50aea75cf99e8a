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
import itertools
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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
    valid_to)``, and the key order when it is not the sorted one (None: sorted).

    ``base`` and ``changed``: when the layer was diffed against the encoding this process made last
    (:func:`encode_table`), that encoding's ``token`` and the keys whose rows are new, changed or gone
    since it (every other key has that encoding's hash); else None."""

    schema: bytes
    rows: dict[str, tuple[str, bytes, int | None, int | None]]
    order: list[str] | None
    #: the layer's Arrow table and ``key -> row`` in it: the read indexes are derived from these
    table: pa.Table | None = None
    positions: dict[str, int] = dataclass_field(default_factory=dict)
    layer: str = ""
    token: int = 0
    base: int | None = None
    changed: list[str] | None = None

    def series_of(self, keys: list[str]) -> list[tuple[str, str, int | None, float | None]]:
        """``(key, series, t, value or None)`` of the :data:`SERIES` rows ``keys`` (none: not a series
        layer, or its columns missing)."""
        if self.layer not in SERIES or self.table is None:
            return []
        keys = [k for k in keys if k in self.positions]
        sub = self.table.take(pa.array([self.positions[k] for k in keys], type=pa.int64()))
        names = sub.column_names
        columns = [_python_column(sub.column(i)) for i in range(sub.num_columns)]
        return [(k, *v) for k, v in _series(self.layer, names, columns, keys).items()]

    def boxes_of(self, keys: list[str]) -> dict[str, tuple[float, float, float, float]]:
        """``hash -> (min_lat, min_lng, max_lat, max_lng)`` of the rows ``keys`` of an
        :data:`EXTENT_INDEXED` layer (NaN: no geometry; empty: not such a layer)."""
        if (
            self.layer not in EXTENT_INDEXED
            or self.table is None
            or "geometry" not in self.table.column_names
        ):
            return {}
        first: dict[str, int] = {}
        for k in keys:
            first.setdefault(self.rows[k][0], self.positions[k])
        hashes = list(first)
        taken = self.table.column("geometry").take(pa.array(list(first.values()), type=pa.int64()))
        return _boxes(_python_column(taken), hashes)


def _python_column(column) -> list:
    kind = column.type
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return column.cast(pa.int64()).to_pylist()
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return [None if v is None else v.hex() for v in column.to_pylist()]
    return column.to_pylist()


def _key_part(value) -> str:
    return f"{value:020d}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


@dataclass
class _Encoded:
    """A layer as this process last encoded it: what the next publish's layer is diffed against."""

    schema: bytes
    table: pa.Table
    keys: list[str]
    positions: dict[str, int]
    entries: list[tuple[str, bytes, int | None, int | None]]
    order: list[str] | None
    token: int
    key_array: pa.Array | None  # the keys as an Arrow array, when built there
    rows: dict[str, tuple[str, bytes, int | None, int | None]]  # key -> entry, in row order


#: per layer, its last encoding by this process (a refresher records each publish's works, most of them
#: unchanged: only the rows whose values differ from it are turned into Python values, encoded and hashed)
_LAST: dict[str, _Encoded] = {}
_LAST_LOCK = threading.Lock()
_TOKENS = itertools.count(1)


def _unchanged(new, old) -> np.ndarray:
    """Per row, whether the two columns' values are equal *and encode alike* (floats: the same bits, so
    ``0.0`` and ``-0.0`` differ; nulls: both null). Conservative: a type not compared here is all changed."""
    n = len(new)
    try:
        kind = new.type
        exact = not (pa.types.is_floating(kind) or pa.types.is_nested(kind) or pa.types.is_dictionary(kind))
        if exact and kind == old.type and new.equals(old):  # floats: 0.0 equals -0.0 but encodes apart
            return np.ones(n, dtype=bool)
        new_null = new.is_null().to_numpy(zero_copy_only=False)
        old_null = old.is_null().to_numpy(zero_copy_only=False)
        if pa.types.is_floating(new.type):
            a = np.asarray(new.to_numpy(zero_copy_only=False), dtype=np.float64).view(np.uint64)
            b = np.asarray(old.to_numpy(zero_copy_only=False), dtype=np.float64).view(np.uint64)
            return (new_null == old_null) & (new_null | (a == b))
        if pa.types.is_nested(new.type) or pa.types.is_dictionary(new.type):
            return np.zeros(n, dtype=bool)
        equal = pc.fill_null(pc.equal(new, old), False).to_numpy(zero_copy_only=False)
        return np.asarray(equal, dtype=bool) | (new_null & old_null)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):
        return np.zeros(n, dtype=bool)


def _keys(table: pa.Table, key_idx: list[int]) -> tuple[list[str], pa.Array | None]:
    """Each row's key (as :func:`_row_keys`), and the keys as an Arrow array when they could be built there."""
    array = _key_array(table, key_idx)
    if array is None:
        return _row_keys(table, key_idx), None
    return array.to_pylist(), array


def _key_array(table: pa.Table, key_idx: list[int]) -> pa.Array | None:
    """The keys :func:`_row_keys` gives, built on the Arrow columns; None when they cannot be (a key column
    neither text nor a non-negative integer or time)."""
    parts = []
    try:
        for i in key_idx:
            column = table.column(i)
            kind = column.type
            if pa.types.is_string(kind) or pa.types.is_large_string(kind):
                part = column.cast(pa.large_string())
            elif pa.types.is_integer(kind) or pa.types.is_timestamp(kind):
                ints = column.cast(pa.int64())
                low = pc.min(ints).as_py()
                if low is not None and low < 0:
                    return None
                part = pc.utf8_lpad(ints.cast(pa.large_string()), 20, "0")
            else:
                return None
            parts.append(pc.fill_null(part, "None"))
        sep = pa.scalar(SEP, pa.large_string())
        joined = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, sep)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if isinstance(joined, pa.ChunkedArray):
        joined = joined.combine_chunks()
    if pc.count_distinct(joined, mode="all").as_py() == len(joined):
        return joined
    if pc.any(pc.match_substring(joined, DUP)).as_py():
        return None  # a key part holding the ordinal mark: the Python rule decides
    # a repeated key's ordinal: its occurrence among the rows of that key, in row order (a stable sort of
    # the keys' dictionary codes)
    codes = np.asarray(pc.dictionary_encode(joined).indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    ranked = codes[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = ranked[1:] != ranked[:-1]
    starts = np.flatnonzero(first)
    ordinal = np.empty(len(order), dtype=np.int64)
    ordinal[order] = np.arange(len(order)) - starts[np.cumsum(first) - 1] + 1
    keys = joined.to_pylist()
    for i in np.flatnonzero(ordinal > 1).tolist():
        keys[i] = f"{keys[i]}{DUP}{ordinal[i]}"
    return pa.array(keys, type=pa.large_string())


def _row_keys(table: pa.Table, key_idx: list[int]) -> list[str]:
    """Each row's key (a repeated key gets its ordinal)."""
    key_parts = [list(map(_key_part, _python_column(table.column(i)))) for i in key_idx]
    row_keys = key_parts[0] if len(key_parts) == 1 else list(map(SEP.join, zip(*key_parts)))
    seen: set[str] = set()
    out = []
    for key in row_keys:
        if key in seen:
            n = 2
            while f"{key}{DUP}{n}" in seen:
                n += 1
            key = f"{key}{DUP}{n}"
        seen.add(key)
        out.append(key)
    return out


def _valid_times(layer: str, names: list[str], columns: list[list]) -> tuple[list, list]:
    """Per row, its valid-time start and end (None: unbounded) from its Python values."""
    n = len(columns[0]) if columns else 0
    valid = VALID_TIME.get(layer)
    start = columns[names.index(valid[0])] if valid and valid[0] in names else [None] * n
    end = valid[1] if valid else None
    if isinstance(end, str) and end in names:
        return start, columns[names.index(end)]
    if isinstance(end, int):
        return start, [None if s is None else s + end for s in start]
    return start, [None] * n


def _entries(layer: str, table: pa.Table) -> list[tuple[str, bytes, int | None, int | None]]:
    """``(hash, json, valid_from, valid_to)`` of each row of ``table``."""
    names = table.column_names
    columns = [_python_column(table.column(i)) for i in range(table.num_columns)]
    starts, ends = _valid_times(layer, names, columns)
    out = []
    for values, valid_from, valid_to in zip(zip(*columns), starts, ends):
        data = _ENCODE(values).encode()
        out.append((digest(data), data, valid_from, valid_to))
    return out


def encode_table(layer: str, table: pa.Table) -> EncodedLayer:
    """Rows, schema and order of one layer's Arrow table.

    A keyed layer is diffed on its Arrow columns against this process's last encoding of it (same schema):
    only the rows that are new or whose values changed are converted, encoded and hashed; the others take
    that encoding's hash and JSON (the same bytes a fresh encoding gives)."""
    names = table.column_names
    key_cols = KEY_COLUMNS.get(layer) or (("id",) if "id" in names else ())
    key_idx = [names.index(c) for c in key_cols if c in names]
    schema = table.schema.serialize().to_pybytes()
    if not key_idx:
        return _encode_by_content(layer, table, schema)
    with _LAST_LOCK:
        last = _LAST.get(layer)
    if last is not None and last.schema != schema:
        last = None
    n = table.num_rows
    Entry = tuple[str, bytes, int | None, int | None]
    entries: list[Entry | None]
    if last is None:  # nothing to diff against: every row encoded
        keys, key_array = _keys(table, key_idx)
        positions = dict(zip(keys, range(n)))
        order = None if keys == sorted(keys) else keys
        fresh = np.arange(n)
        entries = [None] * n
    else:
        aligned = last.table.num_rows == n and all(
            table.column(i).equals(last.table.column(i)) for i in key_idx
        )
        if aligned:  # the same keys in the same order: rows compared in place
            keys, positions, order, key_array = last.keys, last.positions, last.order, last.key_array
            old = np.arange(n, dtype=np.int64)
        else:
            keys, key_array = _keys(table, key_idx)
            positions = dict(zip(keys, range(n)))
            order = None if keys == sorted(keys) else keys
            if key_array is not None and last.key_array is not None:  # e.g. NO2's window moved an hour
                found = pc.fill_null(pc.index_in(key_array, value_set=last.key_array), -1)
                old = np.asarray(found.to_numpy(zero_copy_only=False), dtype=np.int64)
            else:
                old = np.fromiter((last.positions.get(k, -1) for k in keys), dtype=np.int64, count=n)
        same = np.zeros(n, dtype=bool)
        matched = np.flatnonzero(old >= 0)
        if len(matched):
            new_part = table if aligned else table.take(pa.array(matched))
            old_part = last.table if aligned else last.table.take(pa.array(old[matched]))
            kept = np.ones(len(matched), dtype=bool)
            for i in range(table.num_columns):
                kept &= _unchanged(new_part.column(i), old_part.column(i))
            same[matched] = kept
        fresh = np.flatnonzero(~same)
        if aligned:
            entries = list(last.entries)
        else:
            entries = [None] * n
            for i in np.flatnonzero(same).tolist():
                entries[i] = last.entries[old[i]]
    if len(fresh):
        for i, entry in zip(fresh.tolist(), _entries(layer, table.take(pa.array(fresh, type=pa.int64())))):
            entries[i] = entry
    done = cast(list[Entry], entries)
    changed = None
    if last is not None:
        changed = [keys[i] for i in fresh.tolist()]
        if positions is not last.positions:  # the keys gone since
            changed += [k for k in last.keys if k not in positions]
    if last is not None and positions is last.positions:  # the same keys: the last rows, fresh ones replaced
        by_key = last.rows.copy()
        by_key.update((keys[i], done[i]) for i in fresh.tolist())
    else:
        by_key = dict(zip(keys, done))
    token = next(_TOKENS)
    with _LAST_LOCK:
        _LAST[layer] = _Encoded(schema, table, keys, positions, done, order, token, key_array, by_key)
    return EncodedLayer(
        schema,
        by_key,
        order,
        table,
        positions,
        layer,
        token,
        None if last is None else last.token,
        changed,
    )


def _encode_by_content(layer: str, table: pa.Table, schema: bytes) -> EncodedLayer:
    """A layer without key columns: each row keyed by its own content hash."""
    rows: dict[str, tuple[str, bytes, int | None, int | None]] = {}
    keys: list[str] = []
    for entry in _entries(layer, table):
        key = entry[0]
        if key in rows:
            n = 2
            while f"{key}{DUP}{n}" in rows:
                n += 1
            key = f"{key}{DUP}{n}"
        rows[key] = entry
        keys.append(key)
    order = None if keys == sorted(keys) else keys
    positions = dict(zip(keys, range(len(keys))))
    return EncodedLayer(schema, rows, order, table, positions, layer, next(_TOKENS))


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
    return encode_table(layer, pq.read_table(pa.BufferReader(data), pre_buffer=False))


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
