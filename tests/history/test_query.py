"""The history resources' queries (app.history.query) against a brute-force oracle: every publish of the
simulated year rebuilt from the store (``store.snapshot(seq)``) into a live ``geo`` engine and asked, both
store backends; the read indexes filled for a store recorded before they existed."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from app.history import query as q
from app.history.store import open_store
from geo.data.engine import Engine
from geo.service.disruptions import find
from geo.service.loaded import prepare

#: the session fixtures record a simulated year: minutes on a shared 2-core machine, not the default 5
pytestmark = pytest.mark.timeout(1800)

HOUR = q.HOUR_MS
DAY = 24 * HOUR
FIELDS = q.WORK_FIELDS


@pytest.fixture(scope="module")
def store(year_store_url):
    opened = open_store(year_store_url)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def engine_of(year_engine):
    """``engine_of(seq)``: the live engine of publish ``seq``, its snapshot directory loaded (``year_engine``:
    once per worker; the store rebuilds that very snapshot on both backends, tests/history/test_store.py)."""
    return lambda seq: year_engine(seq - 1)


@pytest.fixture(scope="module")
def points(year):
    """Points with works, stops and detours around them: work and stop locations, jittered."""
    rng = random.Random(2626)
    out = [(51.2194, 4.4025)]
    for layer in ("works", "stops"):
        frame = year.base[layer]
        for i in rng.sample(range(len(frame)), 3):
            geom = frame.geometry.iloc[i].representative_point()
            out.append((geom.y + rng.uniform(-0.003, 0.003), geom.x + rng.uniform(-0.003, 0.003)))
    return out


def publishes(store) -> list:
    return store.publishes()


def windows(store) -> list[tuple[int, int]]:
    """The whole year (and a margin before the first publish), and random windows of 1 to 120 days."""
    pubs = publishes(store)
    first, last = pubs[0].as_of_ms, pubs[-1].as_of_ms
    rng = random.Random(26)
    out = [(first - 3 * DAY, last + DAY)]
    for _ in range(3):
        start = rng.randrange(first - 5 * DAY, last)
        out.append((start, start + rng.randrange(DAY, 120 * DAY)))
    return out


def served_seqs(pubs, start: int, end: int) -> list[int]:
    """The oracle's publishes served during ``[start, end)``: served at some instant of it."""
    out = []
    for i, p in enumerate(pubs):
        until = pubs[i + 1].as_of_ms if i + 1 < len(pubs) else math.inf
        if p.as_of_ms < end and until > start:
            out.append(p.seq)
    return out


def ms(value) -> int | None:
    return None if pd.isna(value) else int(pd.Timestamp(value).value // 1_000_000)


def work_state(engine: Engine) -> dict:
    """id -> (status, start, end, description) of a snapshot's works."""
    w = engine.works
    return {
        str(i): (s, ms(a), ms(b), d)
        for i, s, a, b, d in zip(w["id"], w["status"], w["start"], w["end"], w["description"])
    }


def test_works_within_2_km_and_their_change_logs_are_the_oracles(store, points, engine_of):
    pubs = publishes(store)
    as_of = {p.seq: p.as_of_ms for p in pubs}
    states = {p.seq: work_state(engine_of(p.seq)) for p in pubs}
    checked = 0
    for lat, lng in points:
        for start, end in windows(store):
            seqs = served_seqs(pubs, start, end)
            best: dict[str, float] = {}
            for seq in seqs:
                engine = engine_of(seq)
                idx, km = engine.works_near(lat, lng, 2.0)
                for i, k in zip(idx.tolist(), km.tolist()):
                    wid = str(engine.works["id"].iat[i])
                    best[wid] = min(best.get(wid, math.inf), k)
            expected = sorted(best, key=lambda w: (best[w], w))
            got = q.works_near(store, lat, lng, start, end)
            assert [w.id for w in got] == expected
            for w in got:
                assert w.distance_km == pytest.approx(best[w.id], abs=1e-9)
                carried = [p.seq for p in pubs if w.id in states[p.seq]]
                assert w.first_seen_ms == as_of[carried[0]]
                assert w.last_seen_ms == as_of[carried[-1]]
                assert w.listed == (carried[-1] == pubs[-1].seq)
                last_served = [s for s in seqs if w.id in states[s]][-1]
                current = tuple(w.current.values[f] for f in FIELDS)
                assert current == states[last_served][w.id]
                log, before = [], None
                for p in pubs:
                    now = states[p.seq].get(w.id)
                    if start <= p.as_of_ms < end:
                        if before is None and now is not None:
                            log.append((p.as_of_ms, "appeared", None, None, None))
                        elif before is not None and now is None:
                            log.append((p.as_of_ms, "disappeared", None, None, None))
                        elif before is not None:
                            for f, x, y in zip(FIELDS, before, now):
                                if x != y:
                                    log.append((p.as_of_ms, "changed", f, x, y))
                    before = now
                assert [(c.recorded_ms, c.kind, c.field, c.before, c.after) for c in w.changes] == log
                checked += len(log)
    assert checked > 20  # the logs compared are not all empty


def test_the_works_logs_show_slips_and_status_changes(store, points):
    """The simulated year has works that slipped and ran: some log lists start and status changes."""
    pubs = publishes(store)
    kinds = set()
    for lat, lng in points:
        for w in q.works_near(store, lat, lng, pubs[0].as_of_ms - DAY, pubs[-1].as_of_ms + DAY):
            kinds |= {(c.kind, c.field) for c in w.changes}
    assert {("appeared", None), ("changed", "status"), ("changed", "start")} <= kinds


def test_no2_series_is_the_nearest_stations_measured_value_per_hour(store, points, engine_of):
    pubs = publishes(store)
    latest: dict[tuple[str, int], float | None] = {}  # (station, hour) -> value of its latest version
    for p in pubs:
        n = engine_of(p.seq).no2
        for sid, t, v, kind in zip(n["station_id"], n["timestamp"], n["value"], n["kind"]):
            ok = isinstance(kind, str) and kind.strip().lower() == "measured" and np.isfinite(v)
            latest[(str(sid), ms(t))] = float(v) if ok else None
    nearest: dict[tuple[int, float, float], tuple[str, float]] = {}  # the oracle's, per publish and point

    def nearest_of(seq: int, lat: float, lng: float) -> tuple[str, float]:
        if (seq, lat, lng) not in nearest:
            engine = engine_of(seq)
            row, km = engine.nearest_station(lat, lng, "no2")
            nearest[(seq, lat, lng)] = (str(engine.stations["id"].iat[int(row[0])]), float(km[0]))
        return nearest[(seq, lat, lng)]

    nulls = values = 0
    for lat, lng in points[:3]:
        for start, end in windows(store):
            got = q.no2_series(store, lat, lng, start, end)
            hours = list(range(-(-start // HOUR) * HOUR, end, HOUR))
            assert [v.t for v in got] == hours
            for v in got:
                at = [p for p in pubs if p.as_of_ms <= v.t]
                seq = at[-1].seq if at else pubs[0].seq  # before the first: its stations
                sid, km = nearest_of(seq, lat, lng)
                assert (v.station_id, v.station_km) == (sid, pytest.approx(km))
                assert v.value == latest.get((sid, v.t))
                nulls += v.value is None
                values += v.value is not None
    assert nulls and values  # unknown hours are None (never 0), measured ones carry their value


def test_no2_series_before_the_first_publish(store, engine_of):
    """Hours long before anything was recorded are unknown; the hours the first publish carried (its last
    48) are known, with its nearest station, though no publish was served then."""
    first = publishes(store)[0].as_of_ms
    engine = engine_of(publishes(store)[0].seq)
    row, _km = engine.nearest_station(51.2194, 4.4025, "no2")
    nearest = str(engine.stations["id"].iat[int(row[0])])
    got = q.no2_series(store, 51.2194, 4.4025, first - 400 * DAY, first - 399 * DAY)
    assert len(got) == 24 and all(v.value is None and v.station_id == nearest for v in got)
    got = q.no2_series(store, 51.2194, 4.4025, first - DAY, first - 12 * HOUR)
    assert len(got) == 12 and all(v.station_id == nearest for v in got)
    assert any(v.value is not None for v in got)
    assert q.no2_series(store, 51.2194, 4.4025, first - DAY, first, upto=0) == [
        q.No2Value(t, None, None, None, None) for t in range(first - DAY, first, HOUR)
    ]


def test_detours_hitting_a_point_are_those_the_live_answer_listed(store, points, engine_of):
    pubs = publishes(store)
    checked = 0
    for lat, lng in points[:4]:
        for start, end in windows(store)[:3]:
            seqs = served_seqs(pubs, start, end)
            spans = []
            for seq in seqs:
                i = seq - pubs[0].seq
                until = pubs[i + 1].as_of_ms if i + 1 < len(pubs) else end
                spans.append((seq, max(pubs[i].as_of_ms, start), min(until, end)))
            # the answer can change only at these instants: a publish's switch, a detour's start or end,
            # a local midnight (22:00 or 23:00 UTC)
            moments = set()
            for seq, a, b in spans:
                d = prepare(engine_of(seq)).detours
                cuts = {a} | {int(t) for t in np.r_[d.start_ms, d.end_ms] if a < t < b}
                cuts |= {h for h in range(-(-a // HOUR) * HOUR, b, HOUR) if (h // HOUR) % 24 in (22, 23)}
                moments |= {(t, seq) for t in cuts}
            ordered = sorted(moments)
            listed_at = []
            for t, seq in ordered:
                engine = engine_of(seq)
                found = find(engine, lat, lng, pd.Timestamp(t, unit="ms", tz="UTC").to_pydatetime())
                listed_at.append({str(x) for x in prepare(engine).detours.ids[found.detours]})
            expected: dict[str, list[int]] = {}
            for k, ids in enumerate(listed_at):
                after = ordered[k + 1][0] if k + 1 < len(ordered) else end
                for i in ids:
                    first_last = expected.setdefault(i, [ordered[k][0], after])
                    first_last[1] = after
            got = q.detours_hitting(store, lat, lng, start, end)
            assert {h.id: [h.hit_from_ms, h.hit_to_ms] for h in got} == expected
            assert [h.id for h in got] == sorted(expected, key=lambda i: (expected[i][0], i))
            checked += len(got)
    assert checked > 0


def test_upto_pins_what_is_known(store, points):
    """Answers with ``upto`` ignore the publishes recorded after it (paging reads one history)."""
    pubs = publishes(store)
    lat, lng = points[1]
    start, end = pubs[0].as_of_ms - DAY, pubs[-1].as_of_ms + DAY
    pinned = q.works_near(store, lat, lng, start, pubs[5].as_of_ms + DAY, upto=pubs[5].seq)
    assert [w.id for w in pinned] == [w.id for w in q.works_near(store, lat, lng, start, pubs[6].as_of_ms)]
    assert all(w.last_seen_ms <= pubs[5].as_of_ms for w in pinned)
    assert q.served(store, start, end, upto=pubs[5].seq).last == pubs[5].seq


def test_read_indexes_are_filled_for_a_store_recorded_before_them(store_url, year_dirs, points):
    opened = open_store(store_url)
    for _instant, path in year_dirs[:3]:
        opened.record_dir(path)
    lat, lng = points[0]
    start, end = opened.publishes()[0].as_of_ms - DAY, opened.publishes()[-1].as_of_ms + DAY

    def answers(s):
        return (
            [(w.id, w.distance_km, w.changes) for w in q.works_near(s, lat, lng, start, end)],
            q.no2_series(s, lat, lng, start, end),
        )

    before = answers(opened)
    assert before[0] and any(v.value is not None for v in before[1])
    with opened.transaction():
        opened.execute("DELETE FROM history_series")
        opened.execute("DELETE FROM history_extent")
    assert answers(opened)[0] == []
    opened.close()
    reopened = open_store(store_url)
    assert answers(reopened) == before
    reopened.close()
