"""A layer's frame taken from the frame of every decoded row (app/history/versions.RowTable) equals the
conversion of those rows alone: same values, dtypes and CRS, also where a conversion types a column by the
nulls of the rows it holds (integers with nulls become floats, booleans with nulls objects)."""

from __future__ import annotations

import io
import json

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pandas.testing import assert_frame_equal
from shapely.geometry import Point

from app.history import rows as rowcodec
from app.history.versions import RowTable
from geo.data.snapshot import layer_from_table


def _layer(n: int, rng, nulls_from: int = 0) -> pa.Table:
    """A GeoParquet table of ``n`` rows: integers and booleans with nulls here and there (from row
    ``nulls_from`` on), strings, floats, times."""
    hindrance = pd.array(
        [None if i % 7 == 3 and i >= nulls_from else int(i % 3) for i in range(n)], dtype="Int64"
    )
    frame = gpd.GeoDataFrame(
        {
            "id": [f"w{i}" for i in range(n)],
            "hindrance": hindrance,
            "count": np.arange(n, dtype=np.int64) * 3,
            "flag": pd.array(
                [None if i % 5 == 1 and i >= nulls_from else bool(i % 2) for i in range(n)], dtype="boolean"
            ),
            "value": rng.normal(size=n),
            "start": pd.to_datetime(np.arange(n) * 3_600_000, unit="ms", utc=True).as_unit("ms"),
        },
        geometry=[Point(4.0 + i / 1000, 51.0) for i in range(n)],
        crs="EPSG:4326",
    )
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    table = pq.read_table(io.BytesIO(buffer.getvalue()))
    # as a refresher writes it: plain int64 and bool columns (pandas metadata of numpy dtypes), nulls in them
    meta = json.loads(table.schema.metadata[b"pandas"])
    for column in meta["columns"]:
        if column["name"] in ("hindrance", "flag"):
            column["pandas_type"] = column["numpy_type"] = (
                "int64" if column["name"] == "hindrance" else "bool"
            )
    return table.replace_schema_metadata({**table.schema.metadata, b"pandas": json.dumps(meta).encode()})


def _table_of(table: pa.Table, chunks: int = 3, each=None) -> tuple[RowTable, dict[bytes, int]]:
    """A :class:`RowTable` holding ``table``'s rows, added in ``chunks`` chunks (``each(held, row_of)`` after
    each); the row of each content hash."""
    encoded = rowcodec.encode_table("works", table)
    texts = {h: data for h, data, _f, _t in encoded.rows.values()}
    hashes = [bytes.fromhex(encoded.rows[key][0]) for key in table.column("id").to_pylist()]
    held = RowTable(encoded.schema)
    for part in np.array_split(np.arange(len(hashes)), chunks):
        held.add([hashes[i] for i in part.tolist()], lambda wanted: {h: texts[h] for h in wanted})
        if each is not None:
            each(held, {h: held.position[h] for h in hashes if h in held.position})
    return held, {h: held.position[h] for h in hashes}


def _check(held, table, row_of, pick) -> None:
    """The frame of the rows ``pick`` of ``table`` taken from ``held`` equals their conversion alone."""
    hashes = list(row_of)
    rows = np.array([row_of[hashes[i]] for i in pick.tolist()], dtype=np.int64)
    taken = held.frame_at(rows)
    alone = layer_from_table(table.take(pa.array(pick, type=pa.int64())))
    assert_frame_equal(taken, alone, check_exact=True)
    assert list(taken.dtypes) == list(alone.dtypes) and taken.crs == alone.crs
    assert type(taken.index) is type(alone.index)


def test_a_taken_frame_equals_the_conversion_of_its_rows():
    rng = np.random.default_rng(26)
    table = _layer(60, rng)
    held, row_of = _table_of(table)
    picks = [
        np.arange(60),
        np.array([0, 2, 4, 5, 8, 9]),  # no nulls (hindrance: rows 3, 10, …; flag: rows 1, 6, …)
        np.array([3, 0]),  # a null hindrance, no null flag
        np.array([1, 0]),  # a null flag, no null hindrance
        np.array([3, 1]),  # nulls only
        rng.permutation(60)[:25],
        np.zeros(0, dtype=np.int64),
    ]
    for pick in picks:
        _check(held, table, row_of, pick)
    assert held._every_row() is not None  # taken, not converted
    hashes = list(row_of)
    no_nulls = held.frame_at(np.array([row_of[hashes[i]] for i in (0, 2, 4, 5, 8, 9)]))
    assert no_nulls["hindrance"].dtype == np.int64 and no_nulls["flag"].dtype == bool


@pytest.mark.parametrize("kind", ["list", "index"])
def test_a_schema_beyond_the_plain_types_is_converted_row_by_row(kind):
    """A list column (its nulls type the whole conversion) or a stored index: frames are the conversion of
    the rows taken, not a part of the frame of every row."""
    rng = np.random.default_rng(3)
    table = _layer(12, rng)
    if kind == "list":
        table = table.append_column("parts", pa.array([[1, None] if i % 4 == 0 else [i] for i in range(12)]))
    else:
        meta = json.loads(table.schema.metadata[b"pandas"])
        meta["index_columns"] = ["id"]
        table = table.replace_schema_metadata({**table.schema.metadata, b"pandas": json.dumps(meta).encode()})
    held, row_of = _table_of(table)
    pick = np.array([1, 2, 5])
    rows = np.array([row_of[h] for h in np.array(list(row_of), dtype=object)[pick].tolist()])
    taken = held.frame_at(rows)
    assert held._every_row() is None
    assert_frame_equal(taken, layer_from_table(table.take(pa.array(pick))), check_exact=True)


def test_frames_taken_while_rows_are_added_equal_the_conversion():
    """Between additions (appended to the frame of every row, or converted whole again), every frame taken
    is the conversion of its rows: the first chunks hold no null, later ones do."""
    rng = np.random.default_rng(7)
    table = _layer(90, rng, nulls_from=40)

    def each(held, row_of):
        known = [i for i, h in enumerate(row_of) if h in held.position]
        assert known == list(range(len(known)))
        for _ in range(2):
            _check(held, table, row_of, rng.permutation(len(known))[: max(1, len(known) // 2)])

    held, _row_of = _table_of(table, chunks=9, each=each)
    assert held._concatenated < 9  # converted whole again on the way
