"""``python -m bench.ab_pairs --base REF``: the works pairs kernel of another commit and of this tree, and the
GeoPandas baseline, alternated in ONE process.

On a shared machine the rounds of one tree scatter by ±20 % between processes, more than most kernel changes
move it; in one process, alternated round by round, both kernels see the same load. ``REF`` is extracted with
``git archive`` and its ``geo`` imported as the package ``geo_base``; both
:class:`geo.index.pair_table.PairTable` are built from this tree's engine (``data/snapshot``, or
``$URBAN_DATA_DIR``) with the arguments of :mod:`geo.batch.pair_rows`, so ``REF`` must take them (issue 28's
extents or later). Checks that both give the same bytes, then prints per round the CPU µs per point of each
kernel on one thread (the best of ``--best-of`` runs per round, the two kernels alternated), the wall µs per
point on 2 threads, GeoPandas (``bench.bench_score_scale._gpd_pairs``, CPU µs per point on 50,000 points, best
of ``--gpd-best-of``), the ratios, and the load average; then per set the head's ratios over the rounds
(worst, median, best).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _base_table_class(ref: str, into: Path):
    archive = subprocess.run(["git", "archive", ref, "geo"], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    spec = importlib.util.spec_from_file_location(
        "geo_base", into / "geo" / "__init__.py", submodule_search_locations=[str(into / "geo")]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["geo_base"] = module
    spec.loader.exec_module(module)
    return importlib.import_module("geo_base.index.pair_table").PairTable


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab_pairs", description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the commit to compare with (e.g. main)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--points", type=int, default=300_000)
    parser.add_argument(
        "--best-of", type=int, default=3, help="kernel runs per round (alternated), best kept"
    )
    parser.add_argument("--gpd-best-of", type=int, default=2, help="GeoPandas runs per round, best kept")
    args = parser.parse_args(argv)

    import geo
    from bench import service_points
    from bench.bench_score_scale import _gpd_pairs
    from geo.batch.pair_rows import _allowed_sides
    from geo.index.pair_table import PairTable
    from geo.rules.works import RADIUS_KM
    from geo.service.loaded import prepare

    n = args.points
    engine = geo.load(os.environ.get("URBAN_DATA_DIR", str(REPO / "data" / "snapshot")))
    w = prepare(engine).works
    rank = np.empty(w.ids.size, dtype=np.int64)
    rank[np.argsort(np.asarray([str(x) for x in w.ids], dtype=object), kind="stable")] = np.arange(w.ids.size)
    build = (w.lat, w.lng, rank, RADIUS_KM)
    extra = {"group": w.side, "allowed": _allowed_sides(), "extents": w.extents}
    with tempfile.TemporaryDirectory(prefix="ab-pairs-") as tmp:
        tables = {
            "base": _base_table_class(args.base, Path(tmp))(*build, **extra),
            "head": PairTable(*build, **extra),
        }
    sets = {
        "Flanders-wide": service_points(engine, n, seed=3),
        "Antwerp-clustered": (
            np.random.default_rng(4).normal(51.215, 0.03, n),
            np.random.default_rng(5).normal(4.41, 0.045, n),
        ),
    }
    gpd, nb = _gpd_pairs(engine), min(n, 50_000)
    print(f"base {args.base}, head = this tree; {n:,} points; µs per point (CPU, 1 thread; wall, 2 threads)")
    for name, (lat, lng) in sets.items():
        side = engine.river_side(lat, lng)
        first = {k: t.pairs(lat, lng, group=side) for k, t in tables.items()}  # builds their sub-cells
        same = all(a.tobytes() == b.tobytes() for a, b in zip(first["base"], first["head"]))
        print(f"{name}: {first['head'][0].size / n:.1f} pairs/pt, same bytes: {same}")
        ratios = []
        for r in range(args.rounds):
            got = {k: np.inf for k in tables}
            for _ in range(max(args.best_of, 1)):
                for k, t in tables.items():
                    c = time.process_time()
                    t.pairs(lat, lng, group=side)
                    got[k] = min(got[k], (time.process_time() - c) / n * 1e6)
            for k, t in tables.items():
                c = time.perf_counter()
                t.pairs(lat, lng, group=side, threads=2)
                got[k + " 2t"] = (time.perf_counter() - c) / n * 1e6
            g = np.inf
            for _ in range(max(args.gpd_best_of, 1)):
                c = time.process_time()
                gpd(lat[:nb], lng[:nb])
                g = min(g, (time.process_time() - c) / nb * 1e6)
            ratios.append(g / got["head"])
            print(
                f"  round {r + 1}: base {got['base']:.3f} (2t {got['base 2t']:.3f}), head {got['head']:.3f} "
                f"(2t {got['head 2t']:.3f}), GeoPandas {g:.2f}; ratio base {g / got['base']:.1f}x, head "
                f"{g / got['head']:.1f}x; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        print(
            f"  {name} head ratio over {len(ratios)} rounds: worst {min(ratios):.1f}x, median "
            f"{float(np.median(ratios)):.1f}x, best {max(ratios):.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
