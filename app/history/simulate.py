"""A deterministic simulated history: the demo scenario evolved refresh by refresh up to its clock.

The last instant is the demo snapshot itself (``geo.data.snapshot.build_layers`` at ``end``: the same
``snapshotId``); every earlier instant is a pure function of ``(seed, instant)``, so any refresh can be
made without the ones before it, in any order, with the same bytes. What changes, and how:

- works: each demo work appears in the feed some days to weeks before its start (works started before the
  window are there from the first instant), is ``Concreet gepland`` until its start, ``In uitvoering`` until
  its end, then ``Uitgevoerd``; about a third slipped once (before the slip their start and end were earlier);
  cancelled ones were planned until their cancellation. Earlier works (copies of demo works moved back by
  months, new ids) run and leave the feed two weeks after their end.
- detours: each demo detour is announced up to two weeks before its start; earlier copies (monthly) come
  and go.
- NO2: the last 48 hours per station, one value per hour, fixed once measured; about 4 % of the hours are
  missing. The hours of the demo's own window keep the demo's values.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from geo.data.snapshot import (
    DEFAULT_SEED,
    DEMO_AS_OF,
    build_layers,
    layer_bytes,
    snapshot_files,
    write_snapshot,
)

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
NO2_HOURS = 48
#: id offsets of the earlier copies of works and detours
COPY_OFFSET = 90_000_000


def _mix(*parts) -> np.ndarray:
    """A 64-bit hash (splitmix64) of integer arrays, elementwise: the generator's only randomness."""
    x = np.zeros(np.broadcast(*[np.asarray(p) for p in parts]).shape, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for p in parts:
            x = x ^ np.asarray(p).astype(np.uint64)
            x = x + np.uint64(0x9E3779B97F4A7C15)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            x = x ^ (x >> np.uint64(31))
    return x


def _uniform(*parts) -> np.ndarray:
    return (_mix(*parts) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def _ms(series: pd.Series) -> np.ndarray:
    """Epoch ms of a UTC time column (NaT: the far future)."""
    values = series.astype("datetime64[ms, UTC]").to_numpy(dtype="datetime64[ms]").astype(np.int64)
    return np.where(series.isna().to_numpy(), np.iinfo(np.int64).max, values)


def _times(values_ms: np.ndarray, like: pd.Series) -> pd.Series:
    far = values_ms == np.iinfo(np.int64).max
    out = pd.Series(pd.to_datetime(np.where(far, 0, values_ms), unit="ms", utc=True), index=like.index)
    out = out.astype(like.dtype)
    out[far] = pd.NaT
    return out


class SimulatedHistory:
    """The simulated refreshes of the ``days`` before ``end``, every ``cadence_min`` minutes.

    Examples
    --------
    >>> sim = SimulatedHistory("../shared/data", days=30)           # doctest: +SKIP
    >>> layers, metas = sim.layers_at(sim.instants()[0])            # doctest: +SKIP
    """

    def __init__(
        self,
        reference_dir,
        *,
        end=DEMO_AS_OF,
        days: float = 365,
        cadence_min: int = 60,
        seed: int = DEFAULT_SEED,
    ):
        self.reference_dir = reference_dir
        self.end = (
            pd.Timestamp(end).tz_convert("UTC") if pd.Timestamp(end).tzinfo else pd.Timestamp(end, tz="UTC")
        )
        self.end_ms = int(self.end.value // 1_000_000)
        self.start_ms = self.end_ms - int(days * DAY_MS)
        self.cadence_ms = int(cadence_min) * 60_000
        self.seed = int(seed)
        self.base, self.metas = build_layers(reference_dir, as_of=self.end, seed=seed)
        self._bytes: dict[int, bytes] = {}  # id of a base frame -> its layer bytes (publish_at)
        self._plan_works()
        self._plan_detours()
        self._plan_no2()

    # --- instants ------------------------------------------------------------------------------------
    def instants(self) -> list[datetime]:
        """Every refresh instant, oldest first; the last is ``end``."""
        steps = range(self.end_ms, self.start_ms - 1, -self.cadence_ms)
        return [datetime.fromtimestamp(t / 1000, UTC) for t in reversed(steps)]

    # --- works ---------------------------------------------------------------------------------------
    def _plan_works(self) -> None:
        w = self.base["works"]
        n = len(w)
        idx = np.arange(n)
        start, end = _ms(w["start"]), _ms(w["end"])
        lead = (3 + 60 * _uniform(self.seed, 1, idx)) * DAY_MS
        self.w_appear = np.where(start - lead < self.start_ms, self.start_ms, start - lead).astype(np.int64)
        slipped = _uniform(self.seed, 2, idx) < 0.33
        self.w_slip_days = np.where(
            slipped, 3 + (_mix(self.seed, 3, idx) % np.uint64(28)).astype(np.int64), 0
        )
        early_start = start - self.w_slip_days * DAY_MS
        # the slip is learnt between the appearance and the earlier planned start (and before the end)
        window_end = np.minimum(early_start, self.end_ms)
        self.w_slip_at = self.w_appear + (
            _uniform(self.seed, 4, idx) * np.maximum(window_end - self.w_appear, 0)
        )
        self.w_slip_days = np.where(window_end > self.w_appear, self.w_slip_days, 0)
        self.w_cancel_at = self.w_appear + _uniform(self.seed, 5, idx) * np.maximum(
            self.end_ms - self.w_appear, 0
        )
        # earlier works: every third demo work, moved back 60-330 days, gone 14 days after its end
        pick = idx[idx % 3 == 0]
        shift = (60 + (_mix(self.seed, 6, pick) % np.uint64(270)).astype(np.int64)) * DAY_MS
        duration = np.clip(end[pick] - start[pick], DAY_MS, 120 * DAY_MS)
        c_start = self.end_ms - shift
        c_end = c_start + duration
        keep = (c_end + 14 * DAY_MS < self.end_ms) & (c_end + 14 * DAY_MS > self.start_ms)
        self.c_rows = pick[keep]
        self.c_start, self.c_end = c_start[keep], c_end[keep]
        self.c_appear = self.c_start - ((3 + 40 * _uniform(self.seed, 7, self.c_rows)) * DAY_MS).astype(
            np.int64
        )

    def _status(self, t: int, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        return np.where(t < start, "Concreet gepland", np.where(t < end, "In uitvoering", "Uitgevoerd"))

    def works_at(self, t: int) -> pd.DataFrame:
        w = self.base["works"]
        present = self.w_appear <= t
        start, end = _ms(w["start"]), _ms(w["end"])
        before_slip = t < self.w_slip_at
        shift = np.where(before_slip, self.w_slip_days * DAY_MS, 0)
        far = np.iinfo(np.int64).max
        s_t = np.where(start == far, far, start - shift)
        e_t = np.where(end == far, far, end - shift)
        final = w["status"].to_numpy()
        status = self._status(t, s_t, e_t)
        status = np.where((final == "Geannuleerd") & (t >= self.w_cancel_at), "Geannuleerd", status)
        status = np.where((final == "Geannuleerd") & (t < self.w_cancel_at), "Concreet gepland", status)
        status = np.where(final == "Lopende", "Lopende", status)
        now = w.copy()
        now["start"], now["end"] = _times(s_t, w["start"]), _times(e_t, w["end"])
        now["status"] = pd.Series(status, index=w.index, dtype=w["status"].dtype)
        now = now[present]
        alive = (self.c_appear <= t) & (t < self.c_end + 14 * DAY_MS)
        rows = self.c_rows[alive]
        copies = w.iloc[rows].copy()
        copies["id"] = [str(COPY_OFFSET + int(r)) for r in rows]
        copies["start"] = _times(self.c_start[alive], w["start"].iloc[rows])
        copies["end"] = _times(self.c_end[alive], w["end"].iloc[rows])
        copies["status"] = pd.Series(
            self._status(t, self.c_start[alive], self.c_end[alive]),
            index=copies.index,
            dtype=w["status"].dtype,
        )
        return pd.concat([now, copies]).sort_values("id", kind="stable")

    # --- detours -------------------------------------------------------------------------------------
    def _plan_detours(self) -> None:
        d = self.base["detours"]
        idx = np.arange(len(d))
        start, end = _ms(d["start"]), _ms(d["end"])
        lead = ((1 + 13 * _uniform(self.seed, 8, idx)) * DAY_MS).astype(np.int64)
        self.d_appear = np.maximum(start - lead, self.start_ms)
        # monthly earlier copies: k = 1, 2, … months back while they end inside the window
        copies = []
        for k in range(1, 14):
            c_start = start - k * 30 * DAY_MS
            c_end = np.where(end == np.iinfo(np.int64).max, c_start + 20 * DAY_MS, end - k * 30 * DAY_MS)
            for i in idx:
                if self.start_ms < c_end[i] < min(self.d_appear[i], self.end_ms):
                    copies.append((k, int(i), int(c_start[i] - lead[i]), int(c_start[i]), int(c_end[i])))
        self.d_copies = copies

    def detours_at(self, t: int) -> pd.DataFrame:
        d = self.base["detours"]
        now = d[self.d_appear <= t]
        alive = [c for c in self.d_copies if c[2] <= t < c[4]]
        if not alive:
            return now
        rows = [c[1] for c in alive]
        copies = d.iloc[rows].copy()
        copies["id"] = [str(COPY_OFFSET * c[0] + int(d["id"].iat[c[1]])) for c in alive]
        copies["start"] = _times(np.array([c[3] for c in alive]), d["start"].iloc[rows])
        copies["end"] = _times(np.array([c[4] for c in alive]), d["end"].iloc[rows])
        return pd.concat([now, copies]).sort_values("id", kind="stable")

    # --- NO2 -----------------------------------------------------------------------------------------
    def _plan_no2(self) -> None:
        n = self.base["no2"]
        self.n_ts = _ms(n["timestamp"])
        self.n_first = int(self.n_ts.min()) if len(n) else self.end_ms
        first = n.drop_duplicates("station_id")
        self.stations = first["station_id"].to_numpy()
        self.station_geom = first.geometry.to_numpy()
        means = n[n["kind"] == "measured"].groupby("station_id")["value"].mean()
        self.station_mean = np.array([float(means.get(s, 25.0)) for s in self.stations])

    def no2_at(self, t: int) -> pd.DataFrame:
        n = self.base["no2"]
        last = t - t % HOUR_MS
        first = last - (NO2_HOURS - 1) * HOUR_MS
        from_base = n[(self.n_ts >= first) & (self.n_ts <= last)]
        hours = np.arange(first, min(last, self.n_first - HOUR_MS) + 1, HOUR_MS, dtype=np.int64)
        if len(hours) == 0:
            return from_base
        st = np.repeat(np.arange(len(self.stations)), len(hours))
        hh = np.tile(hours, len(self.stations))
        local = ((hh // HOUR_MS) + 1) % 24
        shape = (
            0.8 + 0.5 * np.exp(-(((local - 8.5) / 1.6) ** 2)) + 0.4 * np.exp(-(((local - 18.0) / 2.0) ** 2))
        )
        noise = 0.75 + 0.5 * _uniform(self.seed, 9, st, hh // HOUR_MS)
        values = np.round(np.clip(self.station_mean[st] * shape * noise, 1.0, None), 1)
        keep = _uniform(self.seed, 10, st, hh // HOUR_MS) >= 0.04
        made = pd.DataFrame(
            {
                "station_id": pd.Series(self.stations[st[keep]], dtype=n["station_id"].dtype),
                "timestamp": _times(
                    hh[keep], pd.Series(index=range(int(keep.sum())), dtype=n["timestamp"].dtype)
                ),
                "value": values[keep],
                "kind": pd.Series(["measured"] * int(keep.sum()), dtype=n["kind"].dtype),
            }
        )
        made = n.iloc[:0].__class__(made, geometry=list(self.station_geom[st[keep]]), crs=n.crs)
        out = pd.concat([made, from_base], ignore_index=True)
        return out.sort_values(["station_id", "timestamp"], kind="stable")

    # --- snapshots -----------------------------------------------------------------------------------
    def layers_at(self, instant: datetime) -> tuple[dict, dict]:
        """``(layers, metas)`` of the refresh at ``instant`` (the demo's own at ``end`` and after)."""
        t = int(round(instant.timestamp() * 1000))
        if t >= self.end_ms:
            return dict(self.base), self.metas
        layers = dict(self.base)
        layers["works"] = self.works_at(t).reset_index(drop=True)
        layers["detours"] = self.detours_at(t).reset_index(drop=True)
        layers["no2"] = self.no2_at(t).reset_index(drop=True)
        stamp = instant.isoformat()
        metas = {k: {**m, "retrievedAt": stamp} if m["kind"] == "demo" else m for k, m in self.metas.items()}
        return layers, metas

    def write_at(self, instant: datetime, out_dir) -> dict:
        """Write the snapshot of ``instant`` into ``out_dir``; returns its manifest."""
        layers, metas = self.layers_at(instant)
        return write_snapshot(layers, metas, instant, out_dir)

    def publish_at(self, instant: datetime) -> tuple[dict, dict[str, bytes]]:
        """``(manifest, files)`` of the refresh at ``instant`` in memory, as ``write_at`` would write them
        (what :meth:`app.history.store.HistoryStore.record` takes); the layers the simulation never changes
        are encoded once per instance."""
        layers, metas = self.layers_at(instant)

        def encode(frame) -> bytes:
            if not any(frame is kept for kept in self.base.values()):
                return layer_bytes(frame)
            if id(frame) not in self._bytes:
                self._bytes[id(frame)] = layer_bytes(frame)
            return self._bytes[id(frame)]

        return snapshot_files(layers, metas, instant, encode)

    def snapshots(self, instants=None) -> Iterator[tuple[datetime, Path]]:
        """``(instant, snapshot directory)`` of each refresh (a temporary directory, removed after use)."""
        for instant in self.instants() if instants is None else instants:
            tmp = Path(tempfile.mkdtemp(prefix="urban-sim-"))
            try:
                self.write_at(instant, tmp / "snapshot")
                yield instant, tmp / "snapshot"
            finally:
                shutil.rmtree(tmp, ignore_errors=True)


def days_before(end, days: float) -> datetime:
    """``end`` minus ``days`` (aware UTC)."""
    return pd.Timestamp(end).to_pydatetime().astimezone(UTC) - timedelta(days=days)


def seed_demo(
    store, reference_dir, snapshot_dir, *, days: float, cadence_min: int, seed: int = DEFAULT_SEED
) -> int:
    """Record the simulated refreshes before the demo snapshot at ``snapshot_dir``, then that snapshot
    (its ``asOf`` is the simulation's end); returns how many publishes were recorded."""
    from geo.data.snapshot import read_manifest

    end = read_manifest(snapshot_dir)["asOf"]
    sim = SimulatedHistory(reference_dir, end=end, days=days, cadence_min=cadence_min, seed=seed)
    count = 0
    for _instant, directory in sim.snapshots(sim.instants()[:-1]):
        count += bool(store.record_dir(directory).new)
    return count + bool(store.record_dir(snapshot_dir).new)
