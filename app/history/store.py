"""The bitemporal history store: every recorded publish, and each row version with its valid and recorded time.

Tables (the same on SQLite and PostgreSQL but for a content hash's type: 32 bytes on PostgreSQL, hex text on
SQLite; ``HISTORY_URL`` chooses, see :func:`open_store`):

- ``history_publish``: one row per recorded publish: ``seq`` (1, 2, … in recorded-time order), its
  ``snapshot_id``, ``as_of_ms`` (the snapshot's ``asOf``: from then on it was the data being served) and its
  manifest (zlib JSON, plus per layer the hashes of its Arrow schema and of its row order when not sorted).
- ``history_row``: a row version of a layer: ``key``, content ``hash``, valid time ``valid_from`` /
  ``valid_to`` (epoch ms, NULL: unbounded), recorded time ``rec_from`` (the publish that first carried it) to
  ``rec_to`` (the publish that changed or dropped it; :data:`OPEN` while it is current).
- ``history_blob``: row contents, schemas and orders by sha256 (zlib), stored once.
- ``history_series`` and ``history_extent``: read indexes of the history resources, written in the same
  transaction as the row versions they index (:data:`app.history.rows.SERIES`: per version of a series row
  its series, hour and value; :data:`app.history.rows.EXTENT_INDEXED`: per row content its bounding box).

A publish is recorded in one transaction under a lock (SQLite ``BEGIN IMMEDIATE``, PostgreSQL ``LOCK TABLE``):
a crash leaves it either whole or absent, and two recorders of the same publish record it once. Only rows
that changed are written: an unchanged row costs nothing.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from . import rows as rowcodec
from . import versions
from .failures import HistoryError

if TYPE_CHECKING:
    import pyarrow as pa

OPEN = 2**62  # rec_to of a row version that is still current
DAY_MS = 86_400_000

SERIES_TABLE = """CREATE TABLE IF NOT EXISTS history_series (
        layer TEXT NOT NULL,
        key TEXT NOT NULL,
        rec_from BIGINT NOT NULL,
        series TEXT NOT NULL,
        t BIGINT,
        value DOUBLE PRECISION)"""
# covering: a series over a window is one ordered index range, no table lookups
SERIES_READ = (
    "CREATE INDEX IF NOT EXISTS history_series_read ON history_series (layer, series, t, rec_from, value)"
)

#: ``{hash}``: a content hash, 32 bytes on PostgreSQL (half its hex text, in the rows, blobs and their
#: indexes), hex text on SQLite; ``{blob}``: binary
DDL = (
    """CREATE TABLE IF NOT EXISTS history_publish (
        seq BIGINT PRIMARY KEY,
        snapshot_id TEXT NOT NULL,
        as_of_ms BIGINT NOT NULL UNIQUE,
        recorded_at TEXT NOT NULL,
        manifest {blob} NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS history_row (
        layer TEXT NOT NULL,
        key TEXT NOT NULL,
        hash {hash} NOT NULL,
        valid_from BIGINT,
        valid_to BIGINT,
        rec_from BIGINT NOT NULL,
        rec_to BIGINT NOT NULL,
        PRIMARY KEY (layer, key, rec_from))""",
    "CREATE INDEX IF NOT EXISTS history_row_current ON history_row (layer, rec_to, rec_from)",
    "CREATE TABLE IF NOT EXISTS history_blob (hash {hash} PRIMARY KEY, data {blob} NOT NULL)",
    # read indexes of the history resources (app.history.query), written with the row versions; a series
    # row is unique by its version's (layer, key, rec_from) (history_row's primary key): no index of its own
    SERIES_TABLE,
    SERIES_READ,
    """CREATE TABLE IF NOT EXISTS history_extent (
        hash {hash} PRIMARY KEY,
        min_lat DOUBLE PRECISION,
        min_lng DOUBLE PRECISION,
        max_lat DOUBLE PRECISION,
        max_lng DOUBLE PRECISION)""",
    *(
        f"CREATE INDEX IF NOT EXISTS history_row_hash_{layer} ON history_row (hash) WHERE layer = '{layer}'"
        for layer in rowcodec.EXTENT_INDEXED
    ),
)


TABLES = ("history_publish", "history_row", "history_blob", "history_series", "history_extent")

#: rows decoded by this process, by content hash (shared by every store: a hash names its content)
ROWS = rowcodec.RowCache(64 << 20)


@dataclass
class _OpenVersions:
    """A store's open row versions as this process's last recording into it left them: valid while the
    store's latest publish is still ``latest`` (no other process recorded since), else read back."""

    latest: tuple[int, str, int, str]  # (seq, snapshot_id, as_of_ms, recorded_at) of that recording
    #: layer -> (token of the encoding whose rows they are, ``key -> (hash, rec_from)``)
    layers: dict[str, tuple[int, dict[str, tuple[str, int]]]]


#: per store (its identity), the open versions this process left in it
_OPEN: dict[str, _OpenVersions] = {}
_OPEN_LOCK = threading.Lock()


@dataclass(frozen=True)
class Publish:
    """One recorded publish."""

    seq: int
    snapshot_id: str
    as_of_ms: int

    @property
    def as_of(self) -> datetime:
        return datetime.fromtimestamp(self.as_of_ms / 1000, UTC)


@dataclass(frozen=True)
class Recorded:
    """Outcome of :meth:`HistoryStore.record`: ``new`` False when the publish was recorded before (``seq``
    is then the earlier one) or refused (``seq`` None, ``reason`` says why)."""

    seq: int | None
    new: bool
    reason: str = ""


def ms(moment) -> int:
    """Epoch milliseconds of an aware datetime or an ISO 8601 text."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError("instants must be timezone-aware")
    return int(round(moment.timestamp() * 1000))


def _pack(data: bytes) -> bytes:
    return zlib.compress(data, 6)


def _unpack(data) -> bytes:
    return zlib.decompress(bytes(data))


#: a manifest stored against a template: this mark, the template blob's hash, then zlib with the template
#: as its preset dictionary (a manifest repeats most of the one before: sources, licences, unchanged hashes)
_AGAINST = b"T"
#: a template is replaced when a manifest packed against it exceeds this share of its plain zlib size
_TEMPLATE_SHARE = 0.25
#: templates read by this process, by hash (content-addressed: never stale)
_TEMPLATES: dict[str, bytes] = {}


def _pack_against(data: bytes, hashed: str, template: bytes) -> bytes:
    packer = zlib.compressobj(6, zdict=template)
    return _AGAINST + hashed.encode() + packer.compress(data) + packer.flush()


def _template_of(stored) -> str | None:
    """The template hash of a stored manifest (None: packed alone)."""
    stored = bytes(stored)
    return stored[1:65].decode() if stored[:1] == _AGAINST else None


class HistoryStore:
    """One history store (SQLite file or PostgreSQL schema). Not shared between threads."""

    def __init__(self, conn, postgres: bool, label: str, identity: str | None = None):
        self.conn = conn
        self.postgres = postgres
        self.label = label  # for messages (never a password)
        self.identity = identity or label  # which store this is (the URL): keys the per-process caches
        self._create()

    # --- plumbing ------------------------------------------------------------------------------------
    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def execute(self, sql: str, params=()):
        return self.conn.execute(self._sql(sql), params)

    def _hash(self, hexed: str):
        """A content hash (hex text) as its column holds it: the parameter of a comparison or an insert."""
        return bytes.fromhex(hexed) if self.postgres else hexed

    def _hex(self, column: str) -> str:
        """SQL of the content hash ``column`` as hex text (what every method here returns)."""
        return f"encode({column}, 'hex')" if self.postgres else column

    def _many(self, sql: str, seq) -> None:
        seq = list(seq)
        if not seq:
            return
        if self.postgres:
            with self.conn.cursor() as cur:
                cur.executemany(self._sql(sql), seq)
        else:
            self.conn.executemany(sql, seq)

    def _insert(self, table: str, columns: str, types: str, rows: list[tuple], *, unique: str = "") -> None:
        """Insert ``rows`` (values of ``columns``, comma-separated; ``types`` their PostgreSQL types) into
        ``table``; with ``unique``, a row whose ``unique`` column clashes is skipped. PostgreSQL: one
        statement, the rows as one array per column (a round trip per statement would cost more than the
        rows)."""
        if not rows:
            return
        conflict = f" ON CONFLICT ({unique}) DO NOTHING" if unique else ""
        if self.postgres:
            arrays = ", ".join(f"%s::{kind}[]" for kind in types.split(","))
            self.conn.execute(
                f"INSERT INTO {table} ({columns}) SELECT * FROM unnest({arrays}){conflict}",  # noqa: S608
                [list(values) for values in zip(*rows)],
            )
        else:
            marks = ", ".join("?" * len(columns.split(",")))
            self.conn.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks}){conflict}", rows)  # noqa: S608

    def _close(self, layer: str, seq: int, keys: list[tuple[str, int]]) -> None:
        """Close the open versions ``(key, rec_from)`` of ``layer`` at publish ``seq``, by the primary key
        (SQLite would otherwise pick ``(layer, rec_to)`` and scan every open row per update)."""
        if not keys:
            return
        if self.postgres:
            self.conn.execute(
                "UPDATE history_row SET rec_to = %s FROM unnest(%s::text[], %s::bigint[]) AS c(key, rec_from) "
                "WHERE history_row.layer = %s AND history_row.key = c.key AND history_row.rec_from = c.rec_from",
                (seq, [k for k, _f in keys], [f for _k, f in keys], layer),
            )
        else:
            self.conn.executemany(
                "UPDATE history_row SET rec_to = ? WHERE layer = ? AND key = ? AND rec_from = ?",
                [(seq, layer, k, f) for k, f in keys],
            )

    @contextmanager
    def _pipeline(self) -> Iterator:
        """PostgreSQL: statements sent without waiting for each one's answer (a read still waits for those
        before it; an error surfaces at the latest when the block ends, inside the transaction); SQLite: None."""
        if not self.postgres:
            yield None
            return
        with self.conn.pipeline() as pipe:
            yield pipe

    def _create(self) -> None:
        kinds = {"blob": "BYTEA", "hash": "BYTEA"} if self.postgres else {"blob": "BLOB", "hash": "TEXT"}
        with self.transaction():
            for statement in DDL:
                self.execute(statement.format(**kinds))
            self._migrate()
            self._reindex()

    def _migrate(self) -> None:
        """Bring a store created by an earlier version to the tables of :data:`DDL` (inside :meth:`_create`'s
        transaction, under the write lock; each step a no-op once done): no index on valid time (no query
        reads by it), no primary key of ``history_series`` (its version's is the one), and on PostgreSQL the
        content hashes as 32 bytes (the tables are rewritten once: their readers wait on the lock)."""
        self.execute("DROP INDEX IF EXISTS history_row_valid")
        if self.postgres:
            for table in ("history_row", "history_blob", "history_extent"):
                (kind,) = self.execute(
                    "SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema() "
                    "AND table_name = ? AND column_name = 'hash'",
                    (table,),
                ).fetchone()
                if kind != "bytea":
                    self.execute(
                        f"ALTER TABLE {table} ALTER COLUMN hash TYPE bytea USING decode(hash, 'hex')"
                    )
            # looked up first: an ALTER TABLE locks the table out even when it has nothing to do
            key = self.execute(
                "SELECT conname FROM pg_constraint WHERE conrelid = 'history_series'::regclass AND contype = 'p'"
            ).fetchone()
            if key is not None:
                self.execute(f'ALTER TABLE history_series DROP CONSTRAINT "{key[0]}"')
            return
        (created,) = self.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'history_series'"
        ).fetchone()
        if "PRIMARY KEY" in created.upper():  # SQLite cannot drop one: the table is copied without it
            self.execute(SERIES_TABLE.replace("history_series", "history_series_new", 1))
            self.execute(
                "INSERT INTO history_series_new (layer, key, rec_from, series, t, value) "
                "SELECT layer, key, rec_from, series, t, value FROM history_series"
            )
            self.execute("DROP TABLE history_series")
            self.execute("ALTER TABLE history_series_new RENAME TO history_series")
            self.execute(SERIES_READ)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic, exclusive write transaction (committed on success, rolled back on any error)."""
        if self.postgres:
            with self.conn.transaction():
                self.conn.execute("SELECT pg_advisory_xact_lock(2606202601)")
                yield
        else:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    # --- recording -----------------------------------------------------------------------------------
    def record_dir(
        self,
        snapshot_dir,
        *,
        checkpoint: Callable[[str], None] | None = None,
        tables: Mapping[str, pa.Table] | None = None,
    ) -> Recorded:
        """Record the published snapshot at ``snapshot_dir`` (a pointer is resolved first).

        A layer file is read (and checked against its manifest hash) only when its rows are encoded: not
        when the previous publish carried the same file, nor when ``tables`` (Arrow tables this process
        parsed from layer files, by the file's sha256: :func:`geo.data.snapshot.tables_read`) holds it."""
        from geo.data.snapshot import read_manifest

        root = Path(os.path.realpath(snapshot_dir))
        manifest = read_manifest(root)
        known = self.find(manifest["snapshotId"], ms(manifest["asOf"]))
        if known is not None:
            return Recorded(known.seq, False, "already recorded")
        return self.record(manifest, _LayerFiles(root, manifest), checkpoint=checkpoint, tables=tables)

    def record(
        self,
        manifest: dict,
        files: Mapping[str, bytes],
        *,
        checkpoint=None,
        tables: Mapping[str, pa.Table] | None = None,
    ) -> Recorded:
        """Record one publish: its manifest and its layer files (GeoParquet bytes by layer name).

        Idempotent: a publish already recorded (same ``snapshotId`` and ``asOf``) is not recorded again. A
        publish whose ``asOf`` is not after the latest recorded one is refused (recorded time only grows).
        ``checkpoint(layer)`` runs inside the transaction after each layer (tests use it to crash there).
        ``tables``: Arrow tables of layer files by the file's sha256, taken instead of parsing that file.
        """
        as_of_ms = ms(manifest["asOf"])
        with self.transaction():
            row = self.execute(
                "SELECT seq, snapshot_id FROM history_publish WHERE as_of_ms = ?", (as_of_ms,)
            ).fetchone()
            if row is not None:
                if row[1] == manifest["snapshotId"]:
                    return Recorded(int(row[0]), False, "already recorded")
                return Recorded(None, False, f"another snapshot is recorded at asOf {manifest['asOf']}")
            last = self.execute("SELECT MAX(seq), MAX(as_of_ms) FROM history_publish").fetchone()
            if last[1] is not None and last[1] > as_of_ms:
                return Recorded(None, False, f"asOf {manifest['asOf']} is before the latest recorded publish")
            seq = int(last[0] or 0) + 1
            latest = self._latest()
            with _OPEN_LOCK:  # taken: put back only once this publish is committed
                held = _OPEN.pop(self.identity, None)
            open_layers = held.layers if held is not None and held.latest == latest else {}
            previous_stored = self._stored_manifest(seq - 1) if seq > 1 else None
            previous = (
                json.loads(self.manifest_json(previous_stored))
                if previous_stored is not None
                else {"layers": {}, "history": {}}
            )
            layers_meta = {}
            with self._pipeline() as pipe:
                for layer in sorted(files):
                    sha256 = manifest["layers"][layer]["sha256"]
                    before = previous["layers"].get(layer) or {}
                    if before.get("sha256") == sha256 and layer in previous["history"]:
                        layers_meta[layer] = previous["history"][layer]  # the same file: not one row changed
                    else:
                        table = None if tables is None else tables.get(sha256)
                        enc = (
                            rowcodec.encode_file(layer, files[layer])
                            if table is None
                            else rowcodec.encode_table(layer, table)
                        )
                        known = previous["history"].get(layer) or {}
                        layers_meta[layer] = self._record_layer(seq, layer, enc, open_layers, known)
                    if checkpoint is not None:
                        if pipe is not None:
                            pipe.sync()  # what the checkpoint sees is written
                        checkpoint(layer)
                stored = {**manifest, "history": layers_meta}
                recorded_at = datetime.now(UTC).isoformat(timespec="milliseconds")
                self.execute(
                    "INSERT INTO history_publish (seq, snapshot_id, as_of_ms, recorded_at, manifest) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (
                        seq,
                        manifest["snapshotId"],
                        as_of_ms,
                        recorded_at,
                        self._pack_manifest(
                            json.dumps(stored, separators=(",", ":")).encode(), previous_stored
                        ),
                    ),
                )
        with _OPEN_LOCK:
            _OPEN[self.identity] = _OpenVersions(
                (seq, manifest["snapshotId"], as_of_ms, recorded_at), open_layers
            )
        return Recorded(seq, True)

    def _pack_manifest(self, data: bytes, previous) -> bytes:
        """``data`` (a manifest's JSON) packed against the previous publish's template while that stays
        small, else against itself as a new template (stored as a blob)."""
        hashed = None if previous is None else _template_of(previous)
        if hashed is not None:
            packed = _pack_against(data, hashed, self._template(hashed))
            if len(packed) <= _TEMPLATE_SHARE * len(_pack(data)):
                return packed
        hashed = rowcodec.digest(data)
        self._put_blob(hashed, data)
        return _pack_against(data, hashed, data)

    def _template(self, hashed: str) -> bytes:
        template = _TEMPLATES.get(hashed)
        if template is None:
            template = self._blob(hashed)
            if len(_TEMPLATES) >= 64:
                _TEMPLATES.clear()
            _TEMPLATES[hashed] = template
        return template

    def manifest_json(self, stored) -> bytes:
        """The JSON text of a stored manifest (``history_publish.manifest``)."""
        stored = bytes(stored)
        hashed = _template_of(stored)
        if hashed is None:
            return _unpack(stored)
        unpacker = zlib.decompressobj(zdict=self._template(hashed))
        return unpacker.decompress(stored[65:]) + unpacker.flush()

    def _stored_manifest(self, seq: int):
        row = self.execute("SELECT manifest FROM history_publish WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise HistoryError(f"no publish {seq} is recorded")
        return row[0]

    def _latest(self) -> tuple[int, str, int, str] | None:
        """``(seq, snapshot_id, as_of_ms, recorded_at)`` of the latest recorded publish."""
        row = self.execute(
            "SELECT seq, snapshot_id, as_of_ms, recorded_at FROM history_publish ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]), int(row[2]), str(row[3]))

    def _put_blob(self, hashed: str, data: bytes) -> None:
        self.execute(
            "INSERT INTO history_blob (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING",
            (self._hash(hashed), _pack(data)),
        )

    def _record_layer(
        self, seq: int, layer: str, enc: rowcodec.EncodedLayer, open_layers: dict, known: dict
    ) -> dict:
        """Write the versions of ``layer`` that publish ``seq`` changes; ``open_layers`` (the open versions
        held in this process, per layer) is read and updated; ``known``: the layer's schema and order blobs
        of the previous publish (stored already)."""
        token, current = open_layers.get(layer) or (None, None)
        if current is None:
            current = {
                key: (hashed, rec_from)
                for key, hashed, rec_from in self.execute(
                    f"SELECT key, {self._hex('hash')}, rec_from FROM history_row "  # noqa: S608
                    "WHERE layer = ? AND rec_to = ?",
                    (layer, OPEN),
                )
            }
        if token is not None and enc.changed is not None and enc.base == token:
            # diffed against the very rows open here: only the keys it names can differ
            closed = [
                (key, current[key][1])
                for key in enc.changed
                if key in current and enc.rows.get(key, (None,))[0] != current[key][0]
            ]
            fresh = [
                (key, enc.rows[key])
                for key in enc.changed
                if key in enc.rows and current.get(key, (None,))[0] != enc.rows[key][0]
            ]
        else:
            closed = [
                (key, rec_from)
                for key, (h, rec_from) in current.items()
                if enc.rows.get(key, (None,))[0] != h
            ]
            fresh = [(key, row) for key, row in enc.rows.items() if current.get(key, (None,))[0] != row[0]]
        for key, _rec_from in closed:
            del current[key]
        current.update((key, (row[0], seq)) for key, row in fresh)
        open_layers[layer] = (enc.token, current)
        self._close(layer, seq, closed)
        self._insert(
            "history_blob",
            "hash, data",
            "bytea,bytea",
            list({h: (self._hash(h), _pack(data)) for _key, (h, data, _f, _t) in fresh}.values()),
            unique="hash",
        )
        self._insert(
            "history_row",
            "layer, key, hash, valid_from, valid_to, rec_from, rec_to",
            "text,text,bytea,bigint,bigint,bigint,bigint",
            [(layer, key, self._hash(h), vf, vt, seq, OPEN) for key, (h, _d, vf, vt) in fresh],
        )
        self._index(layer, seq, enc, [key for key, _row in fresh])
        schema_hash = rowcodec.digest(enc.schema)
        if schema_hash != known.get("schema"):
            self._put_blob(schema_hash, enc.schema)
        order_hash = None
        if enc.order is not None:
            packed = rowcodec.pack_order(enc.order)
            order_hash = rowcodec.digest(packed)
            if order_hash != known.get("order"):
                self._put_blob(order_hash, packed)
        return {"schema": schema_hash, "order": order_hash}

    def _index(self, layer: str, seq: int, enc: rowcodec.EncodedLayer, keys: list[str]) -> None:
        """The read-index rows of the versions of ``keys`` that publish ``seq`` writes."""
        self._insert(
            "history_series",
            "layer, key, rec_from, series, t, value",
            "text,text,bigint,text,bigint,float8",
            [(layer, k, seq, *rest) for k, *rest in enc.series_of(keys)],
        )
        if keys:  # measured only for the contents this publish writes
            boxes = enc.boxes_of(keys)
            self._insert(
                "history_extent",
                "hash, min_lat, min_lng, max_lat, max_lng",
                "bytea,float8,float8,float8,float8",
                [(self._hash(h), *(None if v != v else v for v in box)) for h, box in boxes.items()],
                unique="hash",
            )

    def _reindex(self) -> None:
        """Fill the read indexes of a store recorded before they existed (inside :meth:`_create`'s
        transaction; a no-op once they are filled)."""
        for layer in (*rowcodec.SERIES, *rowcodec.EXTENT_INDEXED):
            table = "history_series" if layer in rowcodec.SERIES else "history_extent"
            indexed = self.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone()  # noqa: S608 - constant
            recorded = self.execute("SELECT 1 FROM history_row WHERE layer = ? LIMIT 1", (layer,)).fetchone()
            if indexed is not None or recorded is None:
                continue
            for publish in self.publishes():
                meta = self.manifest(publish.seq)["history"].get(layer)
                fresh = self.execute(
                    "SELECT r.key, b.data FROM history_row r JOIN history_blob b ON b.hash = r.hash "
                    "WHERE r.layer = ? AND r.rec_from = ?",
                    (layer, publish.seq),
                ).fetchall()
                if meta is None or not fresh:
                    continue
                table_ = rowcodec.decode_table(self._blob(meta["schema"]), [_unpack(d) for _k, d in fresh])
                enc = rowcodec.encode_table(layer, table_)
                # keys as recorded (a repeated key's ordinal follows the publish's order, not this subset's)
                recorded = [k for k, _d in fresh]
                enc.rows = dict(zip(recorded, enc.rows.values()))
                enc.positions = dict(zip(recorded, range(len(recorded))))
                self._index(layer, publish.seq, enc, recorded)

    # --- reading -------------------------------------------------------------------------------------
    def publishes(self, after: int = 0) -> list[Publish]:
        """The recorded publishes after publish ``after`` (default: all), oldest first."""
        return [
            Publish(int(s), str(i), int(t))
            for s, i, t in self.execute(
                "SELECT seq, snapshot_id, as_of_ms FROM history_publish WHERE seq > ? ORDER BY seq", (after,)
            )
        ]

    def find(self, snapshot_id: str, as_of_ms: int) -> Publish | None:
        """The recorded publish of this snapshot at this ``asOf``, if any."""
        row = self.execute(
            "SELECT seq FROM history_publish WHERE as_of_ms = ? AND snapshot_id = ?", (as_of_ms, snapshot_id)
        ).fetchone()
        return None if row is None else Publish(int(row[0]), snapshot_id, as_of_ms)

    def first_last(self) -> tuple[Publish | None, Publish | None]:
        """The oldest and the newest recorded publish (None, None when nothing is recorded)."""
        found = []
        for order in ("ASC", "DESC"):
            row = self.execute(
                f"SELECT seq, snapshot_id, as_of_ms FROM history_publish ORDER BY seq {order} LIMIT 1"
            ).fetchone()
            found.append(None if row is None else Publish(int(row[0]), str(row[1]), int(row[2])))
        return found[0], found[1]

    def publish_at(self, instant_ms: int) -> Publish | None:
        """The publish being served at ``instant_ms``: the latest whose ``asOf`` is not after it."""
        row = self.execute(
            "SELECT seq, snapshot_id, as_of_ms FROM history_publish WHERE as_of_ms <= ? "
            "ORDER BY as_of_ms DESC LIMIT 1",
            (instant_ms,),
        ).fetchone()
        return None if row is None else Publish(int(row[0]), str(row[1]), int(row[2]))

    def manifest(self, seq: int) -> dict:
        return json.loads(self.manifest_json(self._stored_manifest(seq)))

    def layer_schemas(self, layer: str, first: int, last: int) -> dict[int, str | None]:
        """``seq -> schema hash`` of ``layer`` (None: not in that publish) for the recorded publishes
        ``first..last`` (one read)."""
        return {
            int(seq): (json.loads(self.manifest_json(data))["history"].get(layer) or {}).get("schema")
            for seq, data in self.execute(
                "SELECT seq, manifest FROM history_publish WHERE seq >= ? AND seq <= ?", (first, last)
            )
        }

    def _blob(self, hashed: str) -> bytes:
        row = self.execute("SELECT data FROM history_blob WHERE hash = ?", (self._hash(hashed),)).fetchone()
        if row is None:
            raise HistoryError(f"blob {hashed} is missing from the history store")
        return _unpack(row[0])

    def layer_rows(self, seq: int, layer: str) -> dict[str, bytes]:
        """``key -> row JSON`` of ``layer`` as publish ``seq`` carried it."""
        return {
            key: _unpack(data)
            for key, data in self.execute(
                "SELECT r.key, b.data FROM history_row r JOIN history_blob b ON b.hash = r.hash "
                "WHERE r.layer = ? AND r.rec_to > ? AND r.rec_from <= ?",
                (layer, seq, seq),
            )
        }

    def snapshot(
        self,
        seq: int,
        held: Callable[[str, str], object] | None = None,
        *,
        in_memory: bool = False,
        sources: dict | None = None,
        deferred: bool = False,
        donors=(),
    ) -> tuple[dict, dict]:
        """``(layers, manifest)`` of publish ``seq``: the GeoDataFrames and manifest its snapshot held.

        ``held(layer, sha256)``: a frame of that layer's very file already in memory (e.g. an engine's), or
        None; such a layer is taken as it is, not read from the store. ``in_memory``: the other layers are
        masks over the versions this process holds (:mod:`app.history.versions`), read once; ``sources``
        (a dict) then receives, per such layer, its ``(RowSource, positions)`` for ``Engine.from_layers``;
        ``deferred``: those layers' frames as :class:`geo.data.rows.Deferred` (made when an engine reads them).
        ``donors``: engines in memory (e.g. the live one) whose layer frames seed a layer's decoded rows when
        they are the files of a recorded publish (:meth:`seeds`).
        """
        stored = self.manifest(seq)
        meta = stored.pop("history")
        layers = {}
        for layer, info in meta.items():
            found = None if held is None else held(layer, stored["layers"][layer]["sha256"])
            if found is None and in_memory:
                taken = versions.layer_frame(
                    self,
                    seq,
                    layer,
                    info,
                    stored["layers"][layer]["records"],
                    deferred=deferred,
                    seeds=functools.partial(self.seeds, donors, layer),
                )
                if taken is not None:
                    found = taken[0]
                    if sources is not None:
                        sources[layer] = taken[1]
            if found is not None:
                layers[layer] = found
                continue
            hashes = self.layer_hashes(seq, layer)
            order = rowcodec.unpack_order(self._blob(info["order"])) if info["order"] else None
            keys = rowcodec.order_keys(hashes, order)
            rows = ROWS.rows([hashes[k] for k in keys], self._blobs)
            layers[layer] = rowcodec.decode_layer(self._blob(info["schema"]), rows)
        return layers, stored

    def seeds(self, engines, layer: str) -> list[tuple[int, dict, int, object, dict]]:
        """``(seq, info, records, frame, known)`` per engine of ``engines`` holding ``layer`` as a frame (not
        deferred) whose snapshot is recorded here with that very file (same sha256): ``info`` is the publish's
        schema and order of the layer, ``records`` its row count, ``known`` the engine's row-wise values of
        it (``Engine.row_values``)."""
        out = []
        for engine in engines:
            frame = engine.layer_object(layer)
            manifest = getattr(engine, "manifest", None) or {}
            entry = (manifest.get("layers") or {}).get(layer) or {}
            if frame is None or not hasattr(frame, "geometry") or "asOf" not in manifest:
                continue
            publish = self.find(str(manifest.get("snapshotId", "")), ms(manifest["asOf"]))
            if publish is None:
                continue
            stored = self.manifest(publish.seq)
            recorded = stored["layers"].get(layer) or {}
            info = stored["history"].get(layer)
            if info is not None and recorded.get("sha256") == entry.get("sha256") is not None:
                out.append((publish.seq, info, int(recorded["records"]), frame, engine.row_values(layer)))
        return out

    def layer_hashes(self, seq: int, layer: str) -> dict[str, str]:
        """``key -> row hash`` of ``layer`` as publish ``seq`` carried it."""
        return dict(
            self.execute(
                f"SELECT key, {self._hex('hash')} FROM history_row "  # noqa: S608 - constants only
                "WHERE layer = ? AND rec_to > ? AND rec_from <= ?",
                (layer, seq, seq),
            )
        )

    def versions_since(self, layer: str, after: int) -> list[tuple[str, str, int, int]]:
        """``(key, hash, rec_from, rec_to)`` of the versions of ``layer`` still open at publish ``after`` (the
        columns' own types: text, hex text, integers)."""
        return self.execute(
            f"SELECT key, {self._hex('hash')}, rec_from, rec_to FROM history_row "  # noqa: S608
            "WHERE layer = ? AND rec_to > ?",
            (layer, after),
        ).fetchall()

    def versions_between(self, layer: str, first: int, last: int) -> list[tuple[str, str, int, int]]:
        """``(key, hash, rec_from, rec_to)`` of the versions of ``layer`` open at some publish ``first..last``.

        Read through ``(layer, rec_to, rec_from)`` as one index range per publish after ``first`` (a
        version's ``rec_to`` is a recorded publish or :data:`OPEN`): the rows read are those asked, however
        long the history, not every version closed since ``first``."""
        return self.execute(
            f"SELECT key, {self._hex('hash')}, rec_from, rec_to FROM history_row "  # noqa: S608
            "WHERE layer = ? AND rec_from <= ? AND rec_to IN "
            "(SELECT seq FROM history_publish WHERE seq > ? UNION ALL SELECT ?)",
            (layer, last, first, OPEN),
        ).fetchall()

    def rows_in_box(
        self, layer: str, seq: int, boxes: list[tuple[float, float, float, float]]
    ) -> list[tuple[str, str]]:
        """``(key, hash)`` of the versions of an :data:`~app.history.rows.EXTENT_INDEXED` layer open at publish
        ``seq`` whose row's bounding box meets one of ``boxes`` (each ``min_lat, min_lng, max_lat, max_lng``):
        the boxes (``history_extent``, one scan), then their versions by the layer's partial hash index."""
        if layer not in rowcodec.EXTENT_INDEXED:
            raise ValueError(f"{layer} has no extent index")
        if not boxes:
            return []
        # the layer as a constant: the partial index applies; SQLite is told to use it, after the boxes
        join, hint = (
            ("JOIN", "") if self.postgres else ("CROSS JOIN", f" INDEXED BY history_row_hash_{layer}")
        )
        meets = " OR ".join(
            ["(e.max_lat >= ? AND e.min_lat <= ? AND e.max_lng >= ? AND e.min_lng <= ?)"] * len(boxes)
        )
        return self.execute(
            f"SELECT DISTINCT r.key, {self._hex('r.hash')} FROM history_extent e "  # noqa: S608 - constants only
            f"{join} history_row r{hint} ON r.hash = e.hash "
            f"WHERE r.layer = '{layer}' AND ({meets}) AND r.rec_from <= ? AND r.rec_to > ?",
            (*(v for b in boxes for v in (b[0], b[2], b[1], b[3])), seq, seq),
        ).fetchall()

    def series_rows(
        self, layer: str, seq: int, series: list[str], after: int, before: int | None
    ) -> list[tuple[str, str, str, int, bool]]:
        """``(key, hash, series, t, valued)`` of the versions of a :data:`~app.history.rows.SERIES` layer open
        at publish ``seq`` whose series is one of ``series`` and whose hour ``t`` lies in ``(after, before)``
        (``before`` None: no bound); ``valued``: the row has a value (its row's test held). One range of
        ``history_series_read`` per series, each row's version by the primary key."""
        out: list[tuple[str, str, str, int, bool]] = []
        upper = "" if before is None else " AND s.t < ?"
        bound = [] if before is None else [before]
        for i in range(0, len(series), 500):
            part = series[i : i + 500]
            out += self.execute(
                f"SELECT s.key, {self._hex('r.hash')}, s.series, s.t, s.value IS NOT NULL "  # noqa: S608
                "FROM history_series s "
                "JOIN history_row r ON r.layer = s.layer AND r.key = s.key AND r.rec_from = s.rec_from "
                f"WHERE s.layer = ? AND s.series IN ({','.join('?' * len(part))}) AND s.t > ?{upper} "
                "AND s.rec_from <= ? AND r.rec_to > ?",
                (layer, *part, after, *bound, seq, seq),
            ).fetchall()
        return out

    def _blobs(self, hashes: list[str]) -> dict[str, bytes]:
        """The blobs ``hashes`` (each must exist), by hash."""
        found = {}
        for i in range(0, len(hashes), 500):
            chunk = hashes[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for hashed, data in self.execute(
                f"SELECT {self._hex('hash')}, data FROM history_blob WHERE hash IN ({marks})",  # noqa: S608
                [self._hash(h) for h in chunk],
            ):
                found[hashed] = _unpack(data)
        if len(found) < len(set(hashes)):
            raise HistoryError(
                f"{len(set(hashes)) - len(found)} row blobs are missing from the history store"
            )
        return found

    def snapshot_at(self, instant: datetime) -> tuple[dict, dict]:
        """``(layers, manifest)`` of the snapshot served at ``instant`` (``geo.load(store, as_of=instant)``)."""
        publish = self.publish_at(ms(instant))
        if publish is None:
            raise HistoryError(
                f"no snapshot was being served at {instant.isoformat()} (nothing recorded before)"
            )
        return self.snapshot(publish.seq)

    # --- retention -----------------------------------------------------------------------------------
    def prune(self, now: datetime, days: int) -> dict:
        """Drop what no instant of the last ``days`` days needs: publishes replaced before the cutoff, the
        row versions only they carried, and blobs nothing refers to any more. Returns counts.

        PostgreSQL: then ``VACUUM (ANALYZE)`` the history tables, so the row versions a recording closed
        (an update leaves the old one dead) and those dropped here make room for the next day's."""
        counts = self._prune(now, days)
        if self.postgres:  # outside any transaction (the connection is in autocommit)
            self.execute(f"VACUUM (ANALYZE) {', '.join(TABLES)}")
        return counts

    def _prune(self, now: datetime, days: int) -> dict:
        cutoff = ms(now) - days * DAY_MS
        with self.transaction():
            keep = self.publish_at(cutoff)
            if keep is None:
                return {"publishes": 0, "rows": 0, "blobs": 0}
            pubs = self.execute("DELETE FROM history_publish WHERE seq < ?", (keep.seq,)).rowcount
            rows = self.execute("DELETE FROM history_row WHERE rec_to <= ?", (keep.seq,)).rowcount
            self.execute(
                "DELETE FROM history_series WHERE NOT EXISTS (SELECT 1 FROM history_row r WHERE "
                "r.layer = history_series.layer AND r.key = history_series.key "
                "AND r.rec_from = history_series.rec_from)"
            )
            unused = " AND ".join(  # by layer (a constant): that layer's partial hash index answers it
                f"NOT EXISTS (SELECT 1 FROM history_row r WHERE r.layer = '{layer}' AND r.hash = history_extent.hash)"
                for layer in rowcodec.EXTENT_INDEXED
            )
            self.execute(f"DELETE FROM history_extent WHERE {unused}")  # noqa: S608 - constants only
            used = {h for (h,) in self.execute("SELECT DISTINCT hash FROM history_row")}  # as stored
            for (data,) in self.execute("SELECT manifest FROM history_publish").fetchall():
                named = [_template_of(data)]
                for info in json.loads(self.manifest_json(data))["history"].values():
                    named += [info["schema"], info["order"]]
                used.update(self._hash(h) for h in named if h)
            stale = [(h,) for (h,) in self.execute("SELECT hash FROM history_blob") if h not in used]
            self._many("DELETE FROM history_blob WHERE hash = ?", stale)
        return {"publishes": max(pubs, 0), "rows": max(rows, 0), "blobs": len(stale)}


class _LayerFiles(Mapping):
    """The layer files of a snapshot directory, by layer: each read, and checked against the manifest's
    hash, when it is asked for."""

    def __init__(self, root: Path, manifest: dict):
        self.root, self.entries = root, manifest["layers"]

    def __getitem__(self, layer: str) -> bytes:
        path = self.root / self.entries[layer]["file"]
        data = path.read_bytes()
        if rowcodec.digest(data) != self.entries[layer]["sha256"]:
            raise HistoryError(f"{path} differs from its manifest: not recorded")
        return data

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def connect_sqlite(path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


def open_store(url: str) -> HistoryStore:
    """The store at ``url``: ``postgresql://…`` (a PostgreSQL database, shared by several hosts) or a
    SQLite file path (``sqlite:///path`` or a plain path)."""
    if url.startswith(("postgresql://", "postgres://")):
        import psycopg

        conn = psycopg.connect(url, autocommit=True)
        return HistoryStore(conn, True, "postgresql", identity=url)
    path = url[len("sqlite:///") - 1 :] if url.startswith("sqlite:///") else url
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return HistoryStore(connect_sqlite(path), False, f"sqlite:{path}")


def open_for_reading(url: str) -> HistoryStore:
    """:func:`open_store` for a reader (``urban-score --as-of``, the dossier): a SQLite file that does not
    exist is a :class:`HistoryError`, not a new empty store; a server that cannot be reached too (its
    message never shows the URL's password)."""
    if not url.startswith(("postgresql://", "postgres://")):
        path = url[len("sqlite:///") - 1 :] if url.startswith("sqlite:///") else url
        if not Path(path).is_file():
            raise HistoryError(f"no history store at {path} (the file does not exist)")
    try:
        return open_store(url)
    except HistoryError:
        raise
    except Exception as exc:  # sqlite3 / psycopg errors: say which store, never its password
        label = "the PostgreSQL history store" if "://" in url else f"the history store {url}"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise HistoryError(f"cannot open {label}: {first}") from None


def default_url(data_dir) -> str:
    """The SQLite file beside the snapshot pointer: ``<DATA_DIR>.history.sqlite``."""
    data_dir = Path(data_dir)
    return str(data_dir.parent / f"{data_dir.name}.history.sqlite")
