"""``rows.encode_table`` reuses the encoding of a row whose values did not change since this process last
encoded the layer: the result is exactly a fresh encoding's (also for ``-0.0`` against ``0.0``)."""

from __future__ import annotations

import pyarrow as pa

from app.history import rows


def _table(values, names, ids=("a", "b", "c")) -> pa.Table:
    return pa.table({"id": list(ids), "value": values, "name": names})


def _fresh(layer, table):
    rows._LAST.pop(layer, None)
    return rows.encode_table(layer, table)


def test_a_row_encoded_again_is_a_fresh_encoding_also_when_only_the_sign_of_zero_changed():
    layer = "memo_test"
    first = _fresh(layer, _table([0.0, 1.5, None], ["x", "y", "z"]))
    changed = _table([-0.0, 1.5, None], ["x", "y2", "z"])
    again = rows.encode_table(layer, changed)
    assert again.rows == _fresh(layer, changed).rows
    assert again.rows["a"][1] == b'["a",-0.0,"x"]' and again.rows["a"][0] != first.rows["a"][0]
    assert again.rows["c"] == first.rows["c"] and again.rows["b"] != first.rows["b"]


def test_another_schema_or_order_is_encoded_afresh():
    layer = "memo_test_schema"
    _fresh(layer, _table([1.0, 2.0, 3.0], ["x", "y", "z"]))
    as_int = pa.table({"id": ["a", "b", "c"], "value": [1, 2, 3], "name": ["x", "y", "z"]})
    assert rows.encode_table(layer, as_int).rows == _fresh(layer, as_int).rows
    reordered = _table([3.0, 1.0, 2.0], ["z", "x", "y"], ids=("c", "a", "b"))
    encoded = rows.encode_table(layer, reordered)
    assert encoded.rows == _fresh(layer, reordered).rows and encoded.order == ["c", "a", "b"]
