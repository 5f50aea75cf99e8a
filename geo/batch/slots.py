"""Shared-memory slots between ``urban-score`` and the worker processes it forks: a chunk's coordinates go in
and its score table comes back without pickling, copying through a pipe or allocating per chunk.

Each slot is one anonymous shared mapping made before the fork (so every worker has it at the same place):
the chunk's lat/lng as float64, then the score table as an Arrow IPC stream that the parent reads in place
(zero copy). A slot is taken when a chunk is submitted and given back once its rows are written. A chunk
larger than a slot (rows, or table bytes) takes the pickled path instead; the result is the same.
"""

from __future__ import annotations

import mmap
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

IN_ROWS_FACTOR = 2  # slot rows per requested chunk row (the CSV reader cuts chunks by bytes, not rows)
OUT_BYTES_PER_ROW = 128  # score table bytes per row a slot holds (the IPC stream of one needs about 62)
OUT_EXTRA = 1 << 20  # dictionaries and IPC metadata
_NARROWED = {b"geo.batch.slots": b"int64"}  # field metadata of an int64 column sent as int32


class Slots:
    """``count`` shared slots of ``rows`` coordinate pairs each (and ``extra`` bytes for a table's metadata).

    Examples
    --------
    >>> s = Slots(1, 4)
    >>> i = s.take(); s.put_input(i, np.array([51.0]), np.array([4.0]))
    >>> [a.tolist() for a in s.inputs(i, 1)]
    [[51.0], [4.0]]
    """

    def __init__(self, count: int, rows: int, extra: int = OUT_EXTRA):
        self.rows = rows
        self.in_bytes = 16 * rows
        self.size = self.in_bytes + OUT_BYTES_PER_ROW * rows + extra
        self._maps = [mmap.mmap(-1, self.size) for _ in range(count)]  # MAP_SHARED | MAP_ANONYMOUS
        self._free = list(range(count))
        self._lock = threading.Lock()

    def fits(self, n: int) -> bool:
        return n <= self.rows

    def take(self) -> int:
        """A free slot; the caller bounds what it holds, so one is always free."""
        with self._lock:
            if not self._free:
                raise RuntimeError("no free shared-memory slot (more chunks in flight than slots)")
            return self._free.pop()

    def give(self, slot: int) -> None:
        with self._lock:
            self._free.append(slot)

    def _array(self, slot: int, start: int, n: int) -> np.ndarray:
        return np.frombuffer(self._maps[slot], dtype=np.float64, count=n, offset=8 * start)

    def put_input(self, slot: int, lat: np.ndarray, lng: np.ndarray) -> None:
        n = lat.size
        self._array(slot, 0, n)[:] = lat
        self._array(slot, self.rows, n)[:] = lng

    def inputs(self, slot: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(lat, lng) of the ``n`` rows in ``slot`` (views of the shared memory)."""
        return self._array(slot, 0, n), self._array(slot, self.rows, n)

    def put_table(self, slot: int, table: pa.Table) -> int | None:
        """Write ``table`` into ``slot`` as an Arrow IPC stream: its size in bytes, or None if it does not fit.
        Its int64 columns travel as int32 when their values fit (counts; :meth:`table` widens them back)."""
        fields, columns = [], []
        for field, column in zip(table.schema, table.columns):
            narrow = _narrow(column)
            fields.append(field if narrow is column else pa.field(field.name, pa.int32(), metadata=_NARROWED))
            columns.append(narrow)
        table = pa.Table.from_arrays(columns, schema=pa.schema(fields))
        area = pa.py_buffer(memoryview(self._maps[slot])[self.in_bytes :])
        sink = pa.FixedSizeBufferWriter(area)
        try:
            with pa.ipc.new_stream(sink, table.schema) as stream:
                stream.write_table(table)
        except (pa.ArrowInvalid, OSError):  # "Write out of bounds": the caller sends the table instead
            return None
        return sink.tell()

    def table(self, slot: int, size: int) -> pa.Table:
        """The table :meth:`put_table` wrote, read in place. Its dictionaries are copied: a Parquet writer keeps
        the last dictionary it wrote to compare with the next one, after the slot is given back."""
        view = pa.py_buffer(memoryview(self._maps[slot])[self.in_bytes : self.in_bytes + size])
        table = pa.ipc.open_stream(view).read_all()
        columns = []
        for field, column in zip(table.schema, table.columns):
            if field.metadata == _NARROWED:
                column = column.cast(pa.int64())
            elif pa.types.is_dictionary(column.type):
                column = pa.chunked_array(
                    [
                        pa.DictionaryArray.from_arrays(
                            c.indices, pa.array(c.dictionary.to_pylist(), type=c.dictionary.type)
                        )
                        for c in column.chunks
                    ],
                    type=column.type,
                )
            columns.append(column)
        return pa.Table.from_arrays(columns, names=table.column_names)


def _narrow(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """An int64 column as int32 when every value fits; any other column itself."""
    if not pa.types.is_int64(column.type):
        return column
    bounds = pc.min_max(column)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if lo is None or (-(2**31) <= lo and hi < 2**31):
        return column.cast(pa.int32())
    return column
