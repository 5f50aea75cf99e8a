"""A store created by the tables of before (content hashes as hex text on PostgreSQL too, an index on valid
time, a primary key of ``history_series``) opened by this code: converted once, on both backends, to the
tables a new store has; it reads as it did, then records as a new store does."""

from __future__ import annotations

import sqlite3
import zlib

import pytest

from app.history import query
from app.history.store import TABLES, open_store
from tests.history.conftest import pg_schema_url
from tests.history.test_store import rebuilt_id

pytestmark = pytest.mark.timeout(900)

#: the tables of the stores recorded before this version, verbatim (``{blob}``: BYTEA / BLOB)
OLD_DDL = (
    """CREATE TABLE IF NOT EXISTS history_publish (
        seq BIGINT PRIMARY KEY,
        snapshot_id TEXT NOT NULL,
        as_of_ms BIGINT NOT NULL UNIQUE,
        recorded_at TEXT NOT NULL,
        manifest {blob} NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS history_row (
        layer TEXT NOT NULL,
        key TEXT NOT NULL,
        hash TEXT NOT NULL,
        valid_from BIGINT,
        valid_to BIGINT,
        rec_from BIGINT NOT NULL,
        rec_to BIGINT NOT NULL,
        PRIMARY KEY (layer, key, rec_from))""",
    "CREATE INDEX IF NOT EXISTS history_row_current ON history_row (layer, rec_to, rec_from)",
    "CREATE INDEX IF NOT EXISTS history_row_valid ON history_row (layer, valid_from)",
    "CREATE TABLE IF NOT EXISTS history_blob (hash TEXT PRIMARY KEY, data {blob} NOT NULL)",
    """CREATE TABLE IF NOT EXISTS history_series (
        layer TEXT NOT NULL,
        key TEXT NOT NULL,
        rec_from BIGINT NOT NULL,
        series TEXT NOT NULL,
        t BIGINT,
        value DOUBLE PRECISION,
        PRIMARY KEY (layer, key, rec_from))""",
    "CREATE INDEX IF NOT EXISTS history_series_read ON history_series (layer, series, t, rec_from, value)",
    """CREATE TABLE IF NOT EXISTS history_extent (
        hash TEXT PRIMARY KEY,
        min_lat DOUBLE PRECISION,
        min_lng DOUBLE PRECISION,
        max_lat DOUBLE PRECISION,
        max_lng DOUBLE PRECISION)""",
    "CREATE INDEX IF NOT EXISTS history_row_hash_works ON history_row (hash) WHERE layer = 'works'",
)

#: columns of each table, the content hash as hex text (``{hex}``)
COLUMNS = {
    "history_publish": "seq, snapshot_id, as_of_ms, recorded_at, manifest",
    "history_row": "layer, key, {hex}, valid_from, valid_to, rec_from, rec_to",
    "history_blob": "{hex}, data",
    "history_series": "layer, key, rec_from, series, t, value",
    "history_extent": "{hex}, min_lat, min_lng, max_lat, max_lng",
}


@pytest.fixture(params=["sqlite", "postgresql"])
def two_urls(request, tmp_path):
    """``(new, old)``: two empty store locations of one backend."""
    if request.param == "sqlite":
        return str(tmp_path / "new.sqlite"), str(tmp_path / "old.sqlite")
    server = request.getfixturevalue("postgres_server")
    return pg_schema_url(server), pg_schema_url(server)


def _connect(url: str):
    """A plain connection (not a :class:`HistoryStore`, which would convert the tables) and its mark."""
    if url.startswith("postgresql://"):
        import psycopg

        return psycopg.connect(url, autocommit=True), "%s", "BYTEA"
    return sqlite3.connect(url, isolation_level=None), "?", "BLOB"


def _old_copy(new, url: str) -> None:
    """At ``url``, a store of the old tables holding what the store ``new`` holds, hashes as hex text."""
    conn, mark, blob = _connect(url)
    for statement in OLD_DDL:
        conn.execute(statement.format(blob=blob))
    for table, columns in COLUMNS.items():
        rows = new.execute(f"SELECT {columns.format(hex=new._hex('hash'))} FROM {table}").fetchall()
        names = columns.format(hex="hash")
        insert = f"INSERT INTO {table} ({names}) VALUES ({', '.join([mark] * len(names.split(',')))})"
        if mark == "?":
            conn.execute("BEGIN")
            conn.executemany(insert, rows)
            conn.execute("COMMIT")
        else:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(insert, rows)
    conn.close()


def _layout(store) -> dict:
    """Per table, its columns with their types and its indexes with their columns (names as created)."""
    if store.postgres:
        columns = store.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        ).fetchall()
        indexes = store.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
        ).fetchall()
        return {
            "columns": [tuple(c) for c in columns],
            "indexes": sorted((t, n, d.split(" USING ", 1)[1]) for t, n, d in indexes),
        }
    out: dict = {"columns": [], "indexes": []}
    for table in TABLES:
        out["columns"] += [(table, c[1], c[2]) for c in store.execute(f"PRAGMA table_info({table})")]
        for index in store.execute(f"PRAGMA index_list({table})"):
            names = [c[2] for c in store.execute(f"PRAGMA index_info({index[1]})")]
            out["indexes"].append((table, index[1], index[3], names))
    out["indexes"].sort()
    return out


def _contents(store) -> dict:
    """What a store holds but the wall-clock ``recorded_at`` (hashes as hex text)."""
    out = {}
    for table, columns in COLUMNS.items():
        rows = store.execute(f"SELECT {columns.format(hex=store._hex('hash'))} FROM {table}").fetchall()
        if table == "history_publish":
            rows = [(s, i, t, store.manifest_json(m)) for s, i, t, _at, m in rows]
        elif table == "history_blob":
            rows = [(h, zlib.decompress(bytes(d))) for h, d in rows]
        out[table] = sorted(tuple(r) for r in rows)
    return out


def _reads(store, seqs) -> dict:
    """What the readers of a store answer: every publish rebuilt, a layer's versions, and the history
    resources at a point over the whole history."""
    first, last = store.first_last()
    start, end = first.as_of_ms, last.as_of_ms + 3_600_000
    return {
        "snapshots": {seq: rebuilt_id(store, seq) for seq in (seqs[0], seqs[-1])},
        "hashes": {seq: store.layer_hashes(seq, "works") for seq in seqs},
        "versions": sorted(store.versions_since("no2", 0)),
        "no2": query.no2_series(store, 51.2194, 4.4025, start, end),
        "works": query.works_near(store, 51.2194, 4.4025, start, end),
    }


@pytest.mark.slow  # 8-10 s
def test_a_store_of_the_old_tables_is_converted_reads_the_same_and_records_on(two_urls, year_dirs):
    new_url, old_url = two_urls
    new = open_store(new_url)
    for _instant, path in year_dirs[:2]:
        assert new.record_dir(path).new
    _old_copy(new, old_url)
    fresh_layout, before = _layout(new), _reads(new, range(1, 3))

    old = open_store(old_url)  # converted here
    assert _layout(old) == fresh_layout
    assert _contents(old) == _contents(new)
    assert _reads(old, range(1, 3)) == before
    if old.postgres:  # 32 bytes, not 64 hex characters
        for table in ("history_row", "history_blob", "history_extent"):
            lengths = old.execute(f"SELECT DISTINCT octet_length(hash) FROM {table}").fetchall()
            assert lengths == [(32,)]
    old.close()

    old = open_store(old_url)  # once converted, opening changes nothing
    assert _layout(old) == fresh_layout
    for _instant, path in year_dirs[2:3]:  # recording on: what a store created new records
        assert old.record_dir(path).new and new.record_dir(path).new
    assert _contents(old) == _contents(new)
    assert _reads(old, range(1, 4)) == _reads(new, range(1, 4))
    old.prune(year_dirs[2][0], 0)
    new.prune(year_dirs[2][0], 0)
    assert _contents(old) == _contents(new)
    old.close()
    new.close()


@pytest.mark.slow
def test_an_old_store_opened_by_two_processes_at_once_is_converted_once(postgres_server, year_dirs):
    """A refresher and an API worker opening an old PostgreSQL store at once: one converts it under the
    write lock, the other finds it converted."""
    import multiprocessing

    new_url, old_url = pg_schema_url(postgres_server), pg_schema_url(postgres_server)
    new = open_store(new_url)
    assert new.record_dir(year_dirs[0][1]).new
    _old_copy(new, old_url)
    with multiprocessing.get_context("fork").Pool(2) as pool:  # two processes; neither opened it before
        read = pool.map(_open_and_read, [old_url, old_url])
    assert read == [new.layer_hashes(1, "works")] * 2
    old = open_store(old_url)
    assert _layout(old) == _layout(new) and _contents(old) == _contents(new)
    old.close()
    new.close()


def _open_and_read(url: str) -> dict[str, str]:
    store = open_store(url)
    try:
        return store.layer_hashes(1, "works")
    finally:
        store.close()
