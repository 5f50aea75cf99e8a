"""``python -m bench``: load the engine once, run every ``bench/bench_*.py``, print one table."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import time
from pathlib import Path

import bench
from bench import Row


def _fmt(value, kind):
    if value is None:
        return "-"
    if kind == "us":
        return f"{value:,.1f}"
    if kind == "rate":
        return f"{value:,.3g}" if value < 1e3 else f"{value / 1e6:,.2f} M"
    return f"{value:,.1f}x"


def machine_speed(engine) -> float:
    """CPU milliseconds of a fixed reference job (scoring 250,000 service-area points, best of 5): printed at
    the start and the end of a run, so that absolute times can be read against the machine's state (a
    shared host's cores run the same code up to a third slower at times)."""
    from geo.batch.io import score_arrow

    lat, lng = bench.service_points(engine, 250_000, seed=99)
    score_arrow((lat[:1000], lng[:1000]), engine)  # caches
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        score_arrow((lat, lng), engine)
        best = min(best, time.process_time() - t0)
    return best * 1e3


def render(rows) -> str:
    """The table as text: latency (µs), batch rate (points/s), GeoPandas baseline and ratio."""
    head = ("primitive", "single µs", "batch /s", "GeoPandas /s", "ratio", "GeoPandas single µs", "note")
    body = [
        (
            r.name,
            _fmt(r.single_us, "us"),
            _fmt(r.batch_per_s, "rate"),
            _fmt(r.baseline_per_s, "rate"),
            _fmt(r.ratio, "x"),
            _fmt(r.baseline_single_us, "us"),
            r.note,
        )
        for r in rows
    ]
    widths = [max(len(str(x[i])) for x in [head, *body]) for i in range(len(head))]
    line = lambda cells: "  ".join(
        str(c).rjust(w) if 0 < i < 6 else str(c).ljust(w)  # noqa: E731
        for i, (c, w) in enumerate(zip(cells, widths))
    ).rstrip()
    return "\n".join([line(head), line(["-" * w for w in widths]), *map(line, body)])


def render_targets(rows) -> str:
    """The rows that carry a target: target, measured figure, ratio to the baseline, met / not met."""
    rows = [r for r in rows if r.target]
    if not rows:
        return ""
    head = ("target", "required", "measured", "ratio", "met")
    verdict = {None: "n/a (not judged: other size or configuration)", True: "met", False: "NOT MET"}
    body = [(r.name.strip(), r.target, r.measured, _fmt(r.ratio, "x"), verdict[r.met]) for r in rows]
    widths = [max(len(str(x[i])) for x in [head, *body]) for i in range(len(head))]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join(["", "Targets", line(head), line(["-" * w for w in widths]), *map(line, body)])


BATCH = "bench_score"  # module-name prefix of the batch-scoring benches (--batch)


def load_average() -> str:
    """The load averages (1, 5, 15 min), as printed beside every figure."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_alone(run) -> None:
    """A bench module run on its own: its rows and targets between the load averages before and after."""
    print(f"load average at the start: {load_average()}")
    result = run()
    print(render(result))
    print(render_targets(result))
    print(f"load average at the end: {load_average()}")


def modules(keyword: str = ""):
    """Names of the benchmark modules ``bench.bench_*`` (optionally filtered), in name order."""
    path = [str(Path(bench.__file__).parent)]
    return sorted(
        f"bench.{m.name}"
        for m in pkgutil.iter_modules(path)
        if m.name.startswith("bench_") and keyword in m.name
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("-k", dest="keyword", default="", help="only modules whose name contains this")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="10^5 instead of 10^6 batch points, 10^6 instead of 10^7 rows at scale",
    )
    parser.add_argument("--batch", action="store_true", help="only the batch-scoring benches (bench_score*)")
    args = parser.parse_args(argv)
    if args.quick:
        os.environ["URBAN_BENCH_POINTS"] = "100000"
        os.environ.setdefault("URBAN_BENCH_SCALE_ROWS", "1000000")
    if args.batch:
        args.keyword = args.keyword or BATCH

    import psutil

    import geo

    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    path = os.environ.get("URBAN_DATA_DIR", "data/snapshot")
    t0 = time.perf_counter()
    engine = geo.load(path)
    load_s = time.perf_counter() - t0
    rss = proc.memory_info().rss
    print(f"engine: {engine!r} from {path}")
    print(
        f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on "
        f"{os.cpu_count()} cores"
    )
    print(
        f"engine load: {load_s:.2f} s   process RSS after load: {rss / 2**20:.0f} MB "
        f"(engine + its imports: {(rss - rss0) / 2**20:.0f} MB)"
    )
    speed0 = machine_speed(engine)
    print(f"reference job (score 250,000 points, best of 5): {speed0:.0f} CPU ms at the start\n")

    rows: list[Row] = [Row("engine load", note=f"{load_s * 1e3:.0f} ms, RSS {rss / 2**20:.0f} MB")]
    for name in modules(args.keyword):
        t = time.perf_counter()
        rows.extend(importlib.import_module(name).run(engine))
        print(f"  {name}: {time.perf_counter() - t:.1f} s", file=sys.stderr)
    print(render(rows))
    print(render_targets(rows))
    print(
        f"load average (1, 5, 15 min) at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on "
        f"{os.cpu_count()} cores"
    )
    speed1 = machine_speed(engine)
    print(
        f"reference job: {speed0:.0f} CPU ms at the start, {speed1:.0f} at the end (the same job: a higher "
        f"figure means a slower machine during the run)"
    )
    import resource

    print(f"\npeak process RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
