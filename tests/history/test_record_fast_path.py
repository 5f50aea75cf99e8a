"""Recording with the fast path (a changed layer diffed on its Arrow columns against this process's last
encoding, the store's open versions held in the process) writes exactly what recording every publish in a
fresh process writes: the same row versions, keys, hashes, valid and recorded times, blobs and read indexes,
on both backends; also when another process recorded in between and when a recording failed half-way."""

from __future__ import annotations

import io
import json
import math
import multiprocessing
import random
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely

from app.history import rows as rowcodec
from app.history import store as storemod
from app.history.store import open_store

FORK = multiprocessing.get_context("fork")

WORKS = pa.schema(
    [
        ("id", pa.large_string()),
        ("status", pa.large_string()),
        ("start", pa.timestamp("ms", tz="UTC")),
        ("end", pa.timestamp("ms", tz="UTC")),
        ("delay", pa.float64()),
        ("hindrance", pa.int64()),
        ("geometry", pa.binary()),
    ]
)
NO2 = pa.schema(
    [
        ("station_id", pa.large_string()),
        ("timestamp", pa.timestamp("ms", tz="UTC")),
        ("value", pa.float64()),
        ("kind", pa.large_string()),
    ]
)
HOUR = 3_600_000
T0 = 1_790_000_000_000


def _work(n: int) -> dict:
    return {
        "id": f"w{n}",
        "status": "Concreet gepland",
        "start": T0 + n * HOUR,
        "end": None if n % 4 == 0 else T0 + (n + 30) * HOUR,
        "delay": float(n % 3),
        "hindrance": None if n % 5 == 0 else n,
        "geometry": shapely.to_wkb(shapely.Point(4.4 + n / 100, 51.2)),
    }


def _table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    return pa.table(
        {f.name: pa.array([r.get(f.name) for r in rows], type=f.type) for f in schema}, schema=schema
    )


def _bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


class Feed:
    """The layers of successive publishes, each a small edit of the one before."""

    def __init__(self):
        self.works = [_work(n) for n in range(1, 9)]
        self.gone: list[dict] = []
        self.schema = WORKS
        self.hour = 0
        self.no2_values: dict[tuple[str, int], tuple[float | None, str]] = {}
        self.lez = ["Antwerpen"]
        self.count = 0

    def find(self, work_id: str) -> dict:
        return next(w for w in self.works if w["id"] == work_id)

    def publish(self) -> tuple[dict, dict[str, bytes]]:
        self.count += 1
        hours = [T0 + (self.hour + h) * HOUR for h in range(3)]
        no2 = []
        for station in ("s1", "s2", "s3"):
            for t in hours:
                value, kind = self.no2_values.setdefault((station, t), (float((t // HOUR) % 7), "measured"))
                no2.append({"station_id": station, "timestamp": t, "value": value, "kind": kind})
        files = {
            "works": _bytes(_table(self.works, self.schema)),
            "no2": _bytes(_table(no2, NO2)),
            "lez": _bytes(pa.table({"name": pa.array(self.lez, type=pa.large_string())})),
        }
        layers = {
            name: {"file": f"{name}.parquet", "sha256": rowcodec.digest(data)} for name, data in files.items()
        }
        snapshot = rowcodec.digest(json.dumps(layers, sort_keys=True).encode())[:16]
        as_of = f"2026-11-{1 + self.count // 24:02d}T{self.count % 24:02d}:00:00Z"
        return {"snapshotId": snapshot, "asOf": as_of, "layers": layers}, files


def scripted() -> list[tuple[dict, dict[str, bytes]]]:
    """The edits the fast path must not get wrong, then a seeded run of random ones."""
    feed = Feed()
    out = [feed.publish()]

    def step(edit):
        edit()
        out.append(feed.publish())

    first_status = feed.find("w2")["status"]
    step(lambda: feed.find("w2").update(status="In uitvoering"))
    step(lambda: feed.find("w2").update(status=first_status))  # changed back to an earlier value
    removed = feed.find("w3")
    step(lambda: feed.works.remove(removed))  # deleted …
    step(lambda: feed.works.insert(2, dict(removed)))  # … and added again, unchanged
    step(lambda: feed.find("w1").update(delay=-0.0, hindrance=0))  # 0.0 -> -0.0
    step(lambda: (feed.find("w1").update(delay=0.0), feed.find("w4").update(delay=math.nan)))
    step(lambda: (feed.find("w4").update(delay=None), feed.find("w5").update(delay=math.nan, end=None)))
    step(lambda: setattr(feed, "hour", feed.hour + 1))  # a new NO2 hour only: the works file is the same

    def add_column():
        feed.schema = WORKS.append(pa.field("note", pa.large_string()))
        feed.find("w6")["note"] = "nieuw"

    step(add_column)  # schema change
    step(lambda: feed.works.reverse())  # another row order
    step(lambda: feed.works.append(dict(feed.find("w2"), status="Dubbel")))  # a repeated id
    step(lambda: setattr(feed, "schema", WORKS))  # the column dropped again
    step(lambda: feed.no2_values.update({("s1", T0 + (feed.hour + 2) * HOUR): (-0.0, "measured")}))
    step(lambda: feed.lez.append("Gent"))

    rng = random.Random(26)
    for _ in range(14):
        for _edit in range(rng.randint(1, 3)):
            kind = rng.choice(
                ["status", "sign", "nan", "null", "delete", "readd", "order", "hour", "geometry"]
            )
            work = rng.choice(feed.works)
            if kind == "status":
                work["status"] = rng.choice(["Concreet gepland", "In uitvoering", "Uitgevoerd"])
            elif kind == "sign":
                work["delay"] = -0.0 if work["delay"] == 0.0 and math.copysign(1, work["delay"]) > 0 else 0.0
            elif kind in ("nan", "null"):
                work["delay"] = math.nan if kind == "nan" else None
            elif kind == "delete" and len(feed.works) > 3:
                feed.works.remove(work)
                feed.gone.append(work)
            elif kind == "readd" and feed.gone:
                feed.works.insert(rng.randrange(len(feed.works) + 1), feed.gone.pop(0))
            elif kind == "order":
                rng.shuffle(feed.works)
            elif kind == "hour":
                feed.hour += 1
                feed.no2_values[("s2", T0 + (feed.hour + 2) * HOUR)] = (math.nan, "missing")
            else:
                work["geometry"] = shapely.to_wkb(shapely.Point(4.0 + rng.random(), 51.0 + rng.random()))
        out.append(feed.publish())
    return out


def dump(url: str) -> dict:
    """Everything a store holds but the wall-clock ``recorded_at``."""
    store = open_store(url)
    try:
        q = store.execute
        return {
            "publish": sorted(
                (s, i, t, json.loads(store.manifest_json(m)))
                for s, i, t, m in q("SELECT seq, snapshot_id, as_of_ms, manifest FROM history_publish")
            ),
            "row": sorted(
                tuple(r)
                for r in q("SELECT layer, key, hash, valid_from, valid_to, rec_from, rec_to FROM history_row")
            ),
            "blob": sorted(
                (h, zlib.decompress(bytes(d))) for h, d in q("SELECT hash, data FROM history_blob")
            ),
            "series": sorted(
                (layer, k, f, s, t, "NULL" if v is None else repr(v))
                for layer, k, f, s, t, v in q(
                    "SELECT layer, key, rec_from, series, t, value FROM history_series"
                )
            ),
            "extent": sorted(tuple(r) for r in q("SELECT * FROM history_extent")),
        }
    finally:
        store.close()


def _forget() -> None:
    """What a fresh process knows: nothing."""
    rowcodec._LAST.clear()
    storemod._OPEN.clear()


def _record_in_child(url, manifest, files):
    store = open_store(url)
    assert store.record(manifest, files).new
    store.close()


class Crash(Exception):
    pass


def _crash(layer):
    if layer == "works":  # the last layer: every changed layer of the publish written, not committed
        raise Crash(layer)


@pytest.fixture(params=["sqlite", "postgresql"])
def two_urls(request, tmp_path) -> tuple[str, str]:
    if request.param == "sqlite":
        return str(tmp_path / "fast.sqlite"), str(tmp_path / "fresh.sqlite")
    from tests.history.conftest import pg_schema_url

    server = request.getfixturevalue("postgres_server")
    return pg_schema_url(server), pg_schema_url(server)


def test_the_fast_path_records_exactly_what_a_fresh_process_records(two_urls):
    fast_url, fresh_url = two_urls
    publishes = scripted()
    _forget()
    store = open_store(fast_url)
    for n, (manifest, files) in enumerate(publishes):
        if n == 5:  # another process records this one: the open versions held here are stale after it
            child = FORK.Process(target=_record_in_child, args=(fast_url, manifest, files))
            child.start()
            child.join(120)
            assert child.exitcode == 0
            continue
        if n == 9:  # a recording that fails half-way (rolled back), then done again
            with pytest.raises(Crash):
                store.record(manifest, files, checkpoint=_crash)
        if n % 3 == 0:  # the recorder opens the store per publish: what it holds outlives a connection
            store.close()
            store = open_store(fast_url)
        assert store.record(manifest, files).new
    store.close()
    _forget()
    for manifest, files in publishes:
        _forget()
        store = open_store(fresh_url)
        assert store.record(manifest, files).new
        store.close()
    fast, fresh = dump(fast_url), dump(fresh_url)
    assert len(fast["publish"]) == len(publishes)
    for table in fresh:
        assert fast[table] == fresh[table], table


def _column_table(rng: random.Random, n: int) -> pa.Table:
    floats = [0.0, -0.0, math.nan, None, 1.5, -1.5]
    ids = [f"r{rng.randrange(n + 2)}" for _ in range(n)]
    return pa.table(
        {
            "id": pa.array(ids, type=pa.large_string()),
            "x": pa.array([rng.choice(floats) for _ in range(n)], type=pa.float64()),
            "f": pa.array([rng.choice(floats) for _ in range(n)], type=pa.float32()),
            "i": pa.array([rng.choice([None, 0, 1, -(2**40)]) for _ in range(n)], type=pa.int64()),
            "b": pa.array([rng.choice([None, True, False]) for _ in range(n)], type=pa.bool_()),
            "s": pa.array([rng.choice([None, "", "é", "a\x1fb"]) for _ in range(n)], type=pa.large_string()),
            "w": pa.array([rng.choice([None, b"", b"\x00\x01"]) for _ in range(n)], type=pa.binary()),
            "t": pa.array([rng.choice([None, 0, T0]) for _ in range(n)], type=pa.timestamp("ms", tz="UTC")),
        }
    )


def test_an_arrow_diff_encodes_every_table_as_a_fresh_encoding_does():
    """Random tables of every column type the snapshots use, each encoded after the one before (rows
    changed, dropped, added, reordered, repeated ids, ``-0.0``, NaN, nulls): the same rows and order as an
    encoding with nothing remembered."""
    rng = random.Random(2606)
    layer = "fast_path_test"
    rowcodec._LAST.pop(layer, None)
    previous = _column_table(rng, 12)
    rowcodec.encode_table(layer, previous)
    for _ in range(60):
        table = _column_table(rng, rng.randint(0, 14)) if rng.random() < 0.3 else previous
        if table is previous and table.num_rows:
            edits = rng.sample(range(table.num_rows), k=rng.randint(0, min(3, table.num_rows)))
            columns = {name: table.column(name).to_pylist() for name in table.column_names}
            for row in edits:
                name = rng.choice(["x", "f", "i", "b", "s", "w", "t"])
                columns[name][row] = _column_table(rng, 1).column(name)[0].as_py()
            table = pa.table(
                {name: pa.array(v, type=table.schema.field(name).type) for name, v in columns.items()}
            )
        encoded = rowcodec.encode_table(layer, table)
        rowcodec._LAST.pop(layer, None)
        fresh = rowcodec.encode_table(layer, table)
        assert encoded.rows == fresh.rows and encoded.order == fresh.order
        assert list(encoded.rows) == list(fresh.rows)
        previous = table


def test_keys_built_on_arrow_columns_are_the_keys_built_in_python():
    """Text, integer and time key columns with nulls, negative and large values, repeated keys (ordinals),
    a value holding the ordinal mark: where the keys are built in Arrow they equal the Python ones; where
    they cannot be (a negative integer) the Python ones are used."""
    rng = random.Random(626)
    built_in_arrow = 0
    for _ in range(200):
        n = rng.randint(0, 8)
        table = pa.table(
            {
                "station": pa.array(
                    [rng.choice([None, "None", "s1", "é", "a\x1f", "s1\x1e2"]) for _ in range(n)]
                ),
                "t": pa.array(
                    [rng.choice([None, 0, T0, 2**62]) for _ in range(n)], type=pa.timestamp("ms", tz="UTC")
                ),
                "n": pa.array(
                    [rng.choice([None, 0, 7, 10**18, -3 if rng.random() < 0.1 else 5]) for _ in range(n)]
                ),
                "u": pa.array([rng.choice([0, 9]) for _ in range(n)], type=pa.uint8()),
            }
        )
        idx = rng.sample(range(4), k=rng.randint(1, 3))
        keys, array = rowcodec._keys(table, idx)
        assert keys == rowcodec._row_keys(table, idx)
        built_in_arrow += array is not None
    assert built_in_arrow > 50
