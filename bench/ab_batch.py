"""``python -m bench.ab_batch --base REF``: the batch-scoring kernels of this tree against another commit, in one run.

Lighter than ``make bench-batch``: no 10^7-row files, no Dask. Each tree (``REF`` extracted with ``git
archive``, and the working tree as committed at ``HEAD``) builds its own demo snapshot with its own code, then
rounds alternate between the trees, each round a fresh process per tree that loads its engine and measures:

* the score table (``geo.batch.io.score_arrow``) of 10^6 Flanders-wide and of 10^6 Antwerp-clustered points,
  CPU seconds per 10^6 points;
* the works pairs kernel (``works_pairs``) on 10^6 points of each set, on every core and on one thread;
* the GeoPandas pairs baseline of that tree (``bench.bench_score_scale._gpd_pairs``: each tree's own
  definition of a work's distance) on 50,000 points, and so the issue-17 ratio of each tree;
* the per-process caches: the works count tables, the pair table, the single-point lookup tables.

Best of ``--repeat`` within a round, best over the rounds. Prints one table: each figure for both trees and
their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import run_in

REPO = Path(__file__).resolve().parents[1]

MEASURE = r"""
import json, os, sys, time
import numpy as np
import geo
from bench import service_points
from geo.batch.io import score_arrow
from geo.batch.pair_rows import works_pairs, usable_cores
from bench.bench_score_scale import _gpd_pairs

repeat = int(os.environ["AB_REPEAT"])
n = int(os.environ["AB_POINTS"])
out = {}
t0 = time.process_time()
engine = geo.load("data/snapshot")
out["load_cpu_s"] = time.process_time() - t0
sets = {
    "flanders": service_points(engine, n, seed=3),
    "antwerp": (np.random.default_rng(4).normal(51.215, 0.03, n), np.random.default_rng(5).normal(4.41, 0.045, n)),
}

def best(fn, k=repeat):
    times = []
    for _ in range(k):
        t = time.process_time(); w = time.perf_counter(); fn(); times.append((time.process_time() - t, time.perf_counter() - w))
    return min(c for c, _ in times), min(w for _, w in times)

t = time.process_time()
score_arrow((sets["flanders"][0][:1000], sets["flanders"][1][:1000]), engine)  # the score caches
out["score_caches_cpu_s"] = time.process_time() - t
t = time.process_time()
side = engine.river_side(sets["flanders"][0][:1000], sets["flanders"][1][:1000])
works_pairs(engine, sets["flanders"][0][:1000], sets["flanders"][1][:1000], side, 1)  # the pair table
out["pair_table_cpu_s"] = time.process_time() - t
for name, (lat, lng) in sets.items():
    out[f"score_{name}_cpu_s"], out[f"score_{name}_wall_s"] = best(lambda: score_arrow((lat, lng), engine))
    side = engine.river_side(lat, lng)
    n_pairs = works_pairs(engine, lat, lng, side, 1)[0].size
    out[f"pairs_{name}_per_pt"] = n_pairs / n
    cores = usable_cores()
    out[f"pairs_{name}_wall_s"] = best(lambda: works_pairs(engine, lat, lng, side, cores))[1]
    out[f"pairs_{name}_1t_wall_s"] = best(lambda: works_pairs(engine, lat, lng, side, 1))[1]
    base = _gpd_pairs(engine)
    nb = min(n, 50_000)
    out[f"gpd_{name}_wall_s_per_pt"] = best(lambda: base(lat[:nb], lng[:nb]), 3)[1] / nb
    out[f"ratio_{name}_vs_gpd"] = out[f"gpd_{name}_wall_s_per_pt"] * n / out[f"pairs_{name}_wall_s"]
from geo.service.disruptions import disruptions
lat, lng = sets["antwerp"][0][:2000].tolist(), sets["antwerp"][1][:2000].tolist()
for a, b in zip(lat[:50], lng[:50]):
    disruptions(engine, a, b, engine.as_of)
samples = []
for _ in range(3):
    w = time.perf_counter()
    for a, b in zip(lat, lng):
        try:
            disruptions(engine, a, b, engine.as_of)
        except Exception:
            pass
    samples.append((time.perf_counter() - w) / len(lat) * 1e6)
out["disruptions_us_antwerp"] = min(samples)
print("AB" + json.dumps(out))
"""


def _extract(ref: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _measure(tree: Path, points: int, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "AB_POINTS": str(points), "AB_REPEAT": str(repeat)}
    run = subprocess.run(
        [sys.executable, "-c", MEASURE], cwd=tree, env=env, capture_output=True, text=True, check=True
    )
    line = next(x for x in run.stdout.splitlines() if x.startswith("AB"))
    return json.loads(line[2:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab_batch", description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the commit to compare with (e.g. main)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--points", type=int, default=10**6)
    parser.add_argument(
        "--reference", default=os.environ.get("URBAN_REFERENCE_DIR", str(REPO.parent / "shared" / "data"))
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ab-batch-") as tmp:
        trees = {
            "base": _extract(args.base, Path(tmp) / "base"),
            "head": _extract("HEAD", Path(tmp) / "head"),
        }
        for tree in trees.values():
            run_in(
                tree,
                "-m",
                "geo.data",
                "build",
                "--reference",
                str(Path(args.reference).resolve()),
                "--out",
                "data/snapshot",
            )
        results: dict = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                results[name].append(_measure(tree, args.points, args.repeat))
    best = {
        name: {k: (max if k.startswith("ratio") else min)(r[k] for r in runs) for k in runs[0]}
        for name, runs in results.items()
    }
    print(f"{'figure':34} {'base (' + args.base + ')':>16} {'HEAD':>12} {'HEAD / base':>12}")
    for key in best["head"]:
        a, b = best["base"].get(key), best["head"][key]
        ratio = f"{b / a:.2f}" if a else "-"
        print(f"{key:34} {a if a is None else round(a, 4):>16} {round(b, 4):>12} {ratio:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
