"""``python -m bench.ab_asof --base REF``: cold ``asOf`` answers of fresh processes over a year-long simulated
history, the code of another commit against this tree, alternated in ONE run, on SQLite and PostgreSQL.

The history (``app.history.simulate``: ``--days`` days, one refresh every ``--cadence`` minutes, demo scale)
is recorded once into ``--store`` (a SQLite file and the last refresh's snapshot directory, reused by later
runs); each run copies it into a throw-away PostgreSQL server (``bench.services.Postgres``). ``REF``'s ``app``
and ``geo`` are extracted with ``git archive``. Per round, backend and code, a fresh process loads the last
snapshot as the live engine (a serving worker: it answered a live ``/briefing``), then answers ``--answers``
random instants of the history with ``asOf`` ``/briefing`` at one point; the CPU time of each answer
(``time.process_time``: the publish looked up, its engine rebuilt, the answer) is recorded, the first of
each process apart (a process's first answer: the p99), and the warm answer (the same instant again) against
the live answer at that clock. The same seeds for both codes. Prints the percentiles and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POINT = (51.2194, 4.4025)


def build(store: Path, days: float, cadence: int) -> None:
    """Record the simulated history into ``store`` once (resumable: publishes recorded are skipped)."""
    from app.history.simulate import SimulatedHistory
    from app.history.store import open_store

    store.mkdir(parents=True, exist_ok=True)
    if (store / "live.pkl").exists():
        return
    sim = SimulatedHistory(
        os.environ.get("URBAN_REFERENCE_DIR", "../shared/data"), days=days, cadence_min=cadence
    )
    history = open_store(str(store / "history.sqlite"))
    done = {p.as_of_ms for p in history.publishes()}
    instants = sim.instants()
    t0 = time.perf_counter()
    for k, instant in enumerate(instants):
        if int(instant.timestamp() * 1000) not in done:
            history.record(*sim.publish_at(instant))
        if k % 100 == 0:
            print(f"recorded {k}/{len(instants)} in {time.perf_counter() - t0:.0f} s", flush=True)
    history.close()
    sim.write_at(instants[-1], store / "live" / "snapshot")
    (store / "live.pkl").write_bytes(pickle.dumps(instants[-1]))


def copy_to_postgres(sqlite_path: Path, url: str) -> None:
    """Every history table of the SQLite store into the (empty) PostgreSQL store at ``url``, column by column
    (a hex text into a ``bytea`` column as its bytes)."""
    import sqlite3

    import psycopg

    from app.history.store import TABLES, open_store

    open_store(url).close()  # the tables, as the code of this tree makes them
    source = sqlite3.connect(str(sqlite_path))
    with psycopg.connect(url, autocommit=True) as conn:
        for table in TABLES:
            kinds: dict[str, str] = dict(
                conn.execute(
                    "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s",
                    (table,),
                ).fetchall()
            )
            names = [r[1] for r in source.execute(f"PRAGMA table_info({table})")]
            binary = [kinds.get(n) == "bytea" for n in names]
            with conn.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(names)}) FROM STDIN") as copy:  # noqa: S608
                for row in source.execute(f"SELECT {', '.join(names)} FROM {table}"):  # noqa: S608
                    copy.write_row(
                        [bytes.fromhex(v) if b and isinstance(v, str) else v for v, b in zip(row, binary)]
                    )
        conn.execute("ANALYZE")
    source.close()


def child(url: str, live: str, as_of_pickle: str, seed: int, answers: int) -> None:
    """One fresh process: the live engine, then ``answers`` random instants (prints one JSON line)."""
    from datetime import timedelta

    import geo
    from app.history import asof
    from app.history.asof import engine_of, publish_index
    from app.history.store import ms, open_store
    from geo.service.briefing import briefing

    history = open_store(url)
    served = geo.load(live)
    end = pickle.loads(Path(as_of_pickle).read_bytes())
    briefing(served, *POINT, end)
    first, _last = history.first_last()
    assert first is not None, "an empty history store"
    rng = random.Random(seed)
    span = (end - first.as_of).total_seconds()
    out: dict[str, list[float]] = {"cold": [], "warm": [], "live": []}
    for _ in range(answers):
        instant = first.as_of + timedelta(seconds=rng.uniform(0, span))
        for kind in ("cold", "warm"):
            c = time.process_time()
            index = publish_index(history)
            publish = index.at(history, ms(instant))
            assert publish is not None
            if hasattr(asof, "engine_at"):  # the code answers from the rows near the point when it can
                engine = asof.engine_at(history, publish, served, POINT, index.until(publish))
            else:
                engine = engine_of(history, publish, served)
            briefing(engine, *POINT, instant)
            out[kind].append(time.process_time() - c)
        c = time.process_time()
        briefing(served, *POINT, instant)
        out["live"].append(time.process_time() - c)
    print(json.dumps(out))


def _tree(ref: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", ref, "app", "geo"], cwd=REPO, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab_asof", description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the commit to compare with (e.g. main)")
    parser.add_argument("--store", default="/tmp/urban-ab-asof", help="where the simulated history is kept")
    parser.add_argument("--days", type=float, default=365)
    parser.add_argument("--cadence", type=int, default=360, help="minutes between refreshes")
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per code and backend")
    parser.add_argument("--answers", type=int, default=8, help="instants answered per process")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        url, live, as_of, seed, answers = args.child
        child(url, live, as_of, int(seed), int(answers))
        return 0

    import numpy as np

    from bench.services import Postgres

    store = Path(args.store)
    build(store, args.days, args.cadence)
    backends = args.backends.split(",")
    results: dict[tuple[str, str], dict[str, list[float]]] = {}
    loads = [os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="ab-asof-") as tmp, Postgres() as pg:
        trees = {"base": _tree(args.base, Path(tmp)), "head": REPO}
        urls = {"sqlite": str(store / "history.sqlite")}
        if "postgresql" in backends:
            t0 = time.perf_counter()
            copy_to_postgres(store / "history.sqlite", pg.url())
            urls["postgresql"] = pg.url()
            print(f"copied into PostgreSQL in {time.perf_counter() - t0:.0f} s", flush=True)
        print(
            f"base {args.base}, head = this tree; {args.rounds} processes x {args.answers} answers",
            flush=True,
        )
        for r in range(args.rounds):
            for backend in backends:
                for label, tree in trees.items():
                    command = [sys.executable, str(Path(__file__).resolve()), "--base", args.base, "--child"]
                    command += [urls[backend], str(store / "live" / "snapshot"), str(store / "live.pkl")]
                    command += [str(1000 + r), str(args.answers)]
                    env = dict(os.environ, PYTHONPATH=str(tree))
                    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
                    if done.returncode:
                        print(done.stderr[-3000:], file=sys.stderr)
                        return 1
                    got = json.loads(done.stdout.strip().splitlines()[-1])
                    into = results.setdefault(
                        (backend, label), {"first": [], "later": [], "warm": [], "live": []}
                    )
                    into["first"].append(got["cold"][0])
                    into["later"].extend(got["cold"][1:])
                    into["warm"].extend(got["warm"])
                    into["live"].extend(got["live"])
                    print(
                        f"round {r + 1} {backend} {label}: first {got['cold'][0] * 1e3:.0f} ms, later p50 "
                        f"{np.median(got['cold'][1:]) * 1e3:.1f} ms; load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
                    loads.append(os.getloadavg())
    print("CPU ms (time.process_time of the answering process)")
    for (backend, label), t in results.items():
        cold = np.array(t["first"] + t["later"]) * 1e3
        first = np.array(t["first"]) * 1e3
        ratio = np.median(t["warm"]) / np.median(t["live"])
        print(
            f"{backend:10s} {label}: first answers p50 {np.median(first):.0f}, max {first.max():.0f} "
            f"(n={first.size}); all cold p50 {np.percentile(cold, 50):.1f}, p95 {np.percentile(cold, 95):.0f}, "
            f"p99 {np.percentile(cold, 99):.0f} (n={cold.size}); warm / live {ratio:.2f}"
        )
    print("load averages", [tuple(round(x, 1) for x in load) for load in loads])
    return 0


if __name__ == "__main__":
    sys.exit(main())
