"""The history store at Flanders scale (issue 26): what recording a publish adds to publishing it, and the
storage a day and a year of refreshes cost, on SQLite and on PostgreSQL (Debian's server, started here).

The layers: the demo snapshot's, replicated to Flanders volumes (new ids, the same row shapes):
``URBAN_BENCH_SCALE_WORKS`` works (default 30,000: the issue's figure; one Antwerp district alone lists about
1,400), ``URBAN_BENCH_SCALE_STOPS`` stops (default 35,000), the reference's 128 IRCEL stations with the 87 NO2
ones' last 48 hours, and 340 detours (a live network-wide ``/omleidingen`` call, June 2026). Each refresh
round is one kind, as the deployed refresher (a round every 300 s, docs/operations.md) sees them:

- ``quiet``: nothing changed (a new publish: its ``asOf`` and retrieval times only);
- ``no2``: a new NO2 hour (87 values in, the oldest hour's 87 out of the 48-hour window), once an hour;
- ``works``: 10 works changed status (GIPOD is fetched every 15 minutes);
- ``detours``: one detour changed;
- ``all``: the three at once (the costliest usual round: every live layer a new file).

Recording overhead (same run, ``URBAN_BENCH_SCALE_ROUNDS`` rounds of each kind, default 3, the median
share): ``store.record_dir`` of the published version (handed the tables its verifying load parsed, as the
refresher does: ``geo.data.snapshot.tables_read``) against publishing it
without history, i.e. what the refresher does after fetching: write the version and load the full engine
that verifies it (``write_snapshot`` + ``verify_loadable``). The upstream fetches are not in the baseline,
so the share is an upper bound of what recording adds to a refresh.

Storage, measured: the store's size after the first publish, then its growth over one day of rounds at the
deployed cadences (the second day recorded, after the first and the daily ``prune``, which on PostgreSQL
ends with a ``VACUUM``; autovacuum off on the history tables so that only that one reclaims: an upper
bound), recorded (in memory, through ``HistoryStore.record``): 288 rounds (one every 300 s), a new
NO2 hour every 12th, 7 works changed every 3rd (GIPOD every 15 minutes: 672 work versions a day, about what
30,000 works listed over the open data's six months with four versions each give), one detour changed every
8th (36 a day); a year is the first publish plus 365 such days. ``URBAN_BENCH_SCALE_BACKENDS`` (default
``SQLite,PostgreSQL``) picks the backends.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from bench import Row

ROUNDS_PER_DAY = 288  # compose.yaml: refresh --every 300
KINDS = ("quiet", "no2", "works", "detours", "all")


def _replicate(frame, n: int, offset: int):
    """``frame``'s rows repeated up to ``n`` rows, the copies with new ids (``id + k * offset``)."""
    reps = -(-n // len(frame))
    parts = []
    for k in range(reps):
        part = frame.copy()
        if k:
            part["id"] = [str(int(i) + k * offset) if str(i).isdigit() else f"{i}-{k}" for i in part["id"]]
        parts.append(part)
    out = pd.concat(parts, ignore_index=True).iloc[:n]
    return out.sort_values("id", kind="stable").reset_index(drop=True)


def flanders_layers(reference_dir, works: int, stops: int) -> tuple[dict, dict]:
    """``(layers, metas)`` of the demo snapshot at Flanders volumes."""
    from geo.data.snapshot import build_layers

    layers, metas = build_layers(reference_dir)
    layers["works"] = _replicate(layers["works"], works, 100_000_000)
    layers["stops"] = _replicate(layers["stops"], stops, 10_000_000)
    layers["detours"] = _replicate(layers["detours"], 340, 100_000_000)
    return layers, metas


class Rounds:
    """The refresh rounds after the first publish: each a copy of the previous layers with one kind of
    change, ``minutes`` apart."""

    def __init__(self, layers: dict, metas: dict, as_of):
        self.layers, self.metas, self.as_of = dict(layers), metas, pd.Timestamp(as_of)
        self.hour = 0
        self.step = 0
        no2 = layers["no2"]
        self.stations = no2.drop_duplicates("station_id")

    def next(self, kind: str, works: int = 10) -> tuple[dict, dict, pd.Timestamp]:
        """The next round: ``kind`` one of :data:`KINDS` (or ``no2+works`` …), ``works`` changed."""
        self.step += 1
        self.as_of += timedelta(minutes=5)
        layers = dict(self.layers)
        if "no2" in kind or kind == "all":
            no2 = layers["no2"]
            last = no2["timestamp"].max()
            fresh = self.stations.copy()
            fresh["timestamp"] = pd.Series(last + timedelta(hours=1), index=fresh.index).astype(
                no2["timestamp"].dtype
            )
            fresh["value"] = np.round(20 + 10 * np.sin(np.arange(len(fresh)) + self.step), 1)
            fresh["kind"] = "measured"
            kept = no2[no2["timestamp"] > no2["timestamp"].min()]
            merged = pd.concat([kept, fresh], ignore_index=True)
            layers["no2"] = merged.sort_values(["station_id", "timestamp"], kind="stable").reset_index(
                drop=True
            )
        if "works" in kind or kind == "all":
            frame = layers["works"].copy()
            rows = (np.arange(works) * 2_999 + self.step * 37) % len(frame)
            statuses = np.where(frame["status"].iloc[rows] == "In uitvoering", "Uitgevoerd", "In uitvoering")
            frame.loc[frame.index[rows], "status"] = statuses
            layers["works"] = frame
        if "detours" in kind or kind == "all":
            detours = layers["detours"].copy()
            row = detours.index[self.step % len(detours)]
            detours.loc[row, "description"] = f"{detours.at[row, 'description']} (gewijzigd {self.step})"
            layers["detours"] = detours
        self.layers = layers
        stamp = self.as_of.isoformat()
        metas = {k: {**m, "retrievedAt": stamp} for k, m in self.metas.items()}
        return layers, metas, self.as_of


def _record_day(store, rounds: Rounds) -> int:
    """Record a day of rounds (module docstring) from memory; returns how many publishes were recorded."""
    from geo.data.snapshot import layer_bytes, snapshot_files

    encoded: dict[int, tuple[object, bytes]] = {}

    def encode(frame) -> bytes:  # a layer frame no round replaced keeps its bytes
        if id(frame) not in encoded or encoded[id(frame)][0] is not frame:
            encoded[id(frame)] = (frame, layer_bytes(frame))
        return encoded[id(frame)][1]

    count = 0
    for r in range(ROUNDS_PER_DAY):
        kind = (
            "+".join(k for k, every in (("no2", 12), ("works", 3), ("detours", 8)) if r % every == 0)
            or "quiet"
        )
        layers, metas, as_of = rounds.next(kind, works=7)
        manifest, files = snapshot_files(layers, metas, as_of, encode)
        live = {id(frame) for frame in layers.values()}
        for gone in [i for i in encoded if i not in live]:
            del encoded[gone]
        count += bool(store.record(manifest, files).new)
    return count


def _size(store) -> int:
    from bench.bench_history import _size as size

    return size(store)


def run(engine) -> list[Row]:
    from app.history.store import TABLES, open_store
    from bench.services import Postgres
    from geo.data.publish import verify_loadable
    from geo.data.snapshot import tables_read, write_snapshot

    reference = os.environ.get("URBAN_REFERENCE_DIR", "../shared/data")
    n_works = int(os.environ.get("URBAN_BENCH_SCALE_WORKS", "30000"))
    n_stops = int(os.environ.get("URBAN_BENCH_SCALE_STOPS", "35000"))
    n_rounds = int(os.environ.get("URBAN_BENCH_SCALE_ROUNDS", "3"))
    root = Path(tempfile.mkdtemp(prefix="urban-bench-scale-"))
    rows: list[Row] = []
    try:
        base, metas = flanders_layers(reference, n_works, n_stops)
        first_as_of = pd.Timestamp("2026-11-16T07:00:00Z")
        counts = {k: len(base[k]) for k in ("works", "stops", "stations", "detours", "no2")}
        backends = os.environ.get("URBAN_BENCH_SCALE_BACKENDS", "SQLite,PostgreSQL").split(",")
        with Postgres() as pg:
            for label, url in (("SQLite", str(root / "history.sqlite")), ("PostgreSQL", pg.url())):
                if label not in backends:
                    continue
                store = open_store(url)
                write_snapshot(base, metas, first_as_of, root / f"{label}-0")
                store.record_dir(root / f"{label}-0")
                shutil.rmtree(root / f"{label}-0")
                first = _size(store)
                rounds = Rounds(base, metas, first_as_of)
                record: dict[str, list[float]] = {k: [] for k in KINDS}
                publish: dict[str, list[float]] = {k: [] for k in KINDS}
                growth: dict[str, list[int]] = {k: [] for k in KINDS}
                load = os.getloadavg()[0]
                for _ in range(n_rounds):
                    for kind in KINDS:
                        layers, round_metas, as_of = rounds.next(kind)
                        out = root / f"{label}-{rounds.step}"
                        t0 = time.perf_counter()
                        write_snapshot(layers, round_metas, as_of, out)
                        with tables_read() as tables:  # as the refresher: handed to the recorder
                            verify_loadable(out)
                        publish[kind].append(time.perf_counter() - t0)
                        before = _size(store)
                        t0 = time.perf_counter()
                        assert store.record_dir(out, tables=tables).new
                        record[kind].append(time.perf_counter() - t0)
                        growth[kind].append(_size(store) - before)
                        shutil.rmtree(out)
                for kind in KINDS:
                    share = float(np.median(np.array(record[kind]) / np.array(publish[kind])))
                    rows.append(
                        Row(
                            f"history {label} Flanders scale: record a '{kind}' round",
                            single_us=float(np.median(record[kind]) * 1e6),
                            note=f"publishing it without history (write + verifying engine load) "
                            f"{np.median(publish[kind]):.1f} s; {n_rounds} rounds; load average {load:.1f}; "
                            + ", ".join(f"{k} {v:,}" for k, v in counts.items()),
                            target="recording adds <= 5 % to a refresh (Flanders scale)",
                            measured=f"{share * 100:.1f} % of write + verify",
                            met=share <= 0.05,
                        )
                    )
                if store.postgres:  # the measured day's figure: only the daily prune's VACUUM reclaims
                    for table in TABLES:
                        store.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
                _record_day(store, rounds)  # a first day, then the daily prune (PostgreSQL: its VACUUM)
                store.prune(rounds.as_of.to_pydatetime(), 365)
                before = _size(store)
                t0 = time.perf_counter()
                n_publishes = _record_day(store, rounds)
                day_s = time.perf_counter() - t0
                day = _size(store) - before
                year = first + 365 * day
                per = {k: float(np.median(v)) for k, v in growth.items()}
                rows.append(
                    Row(
                        f"history {label} Flanders scale: storage",
                        note=f"first publish {first / 2**20:.1f} MB; a day ({n_publishes} publishes: 24 new NO2 "
                        f"hours, 672 work and 36 detour versions; recorded in {day_s:.0f} s) "
                        f"{day / 2**20:.1f} MB; growth per timed round: "
                        + ", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in per.items()),
                        target="a year <= 1 GB (Flanders scale)",
                        measured=f"{year / 2**30:.2f} GB a year ({day / 2**20:.1f} MB a day)",
                        met=year <= 2**30,
                    )
                )
                store.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows
