"""Start-up of each process the service and its tests start: CPU, wall time and peak RSS of the import
(or ``--help``) of each entry point in a fresh interpreter, and which heavy packages it loaded.

Every case runs alone in its own process through :func:`bench.rusage.run_measured` (the peak RSS is the
command's own); the figure is the best of ``--repeat`` runs. The baseline is ``python -c pass`` in the same
run: ``start / python`` is the CPU of a case over the bare interpreter's. ``--root DIR`` measures another
checkout of the repository (``git archive <commit> | tar -x -C DIR``), so a before and an after come from
the same run of this file. ``python -m bench.bench_startup [--root DIR] [--repeat N]``; docs/architecture.md
(Start-up: what each process imports) has the figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from bench import Row
from bench.rusage import run_measured

ROOT = Path(__file__).resolve().parents[1]

#: the packages a process should load only when it computes (the engine, batch scoring, upstream calls)
HEAVY = ("pandas", "geopandas", "scipy", "pyarrow", "shapely", "requests_cache", "flask")

#: (name, how the process starts: ``("-c", code)`` or ``("-m", module, *args)``)
CASES = (
    ("python -c pass", ("-c", "pass")),
    ("import wsgi (no engine)", ("-c", "import wsgi")),
    ("gunicorn worker class", ("-c", "import app.server.worker")),
    ("import app.cli", ("-c", "import app.cli")),
    ("python -m app.admin --help", ("-m", "app.admin", "--help")),
    ("python -m app.serve --help", ("-m", "app.serve", "--help")),
    ("python -m app.sources --help", ("-m", "app.sources", "--help")),
    ("python -m app.history --help", ("-m", "app.history", "--help")),
    ("urban-score --help", ("-m", "urban_score", "--help")),
    ("urban --help", ("-m", "urban_client", "--help")),
    ("urban mcp (import)", ("-c", "import urban_client.mcp_server")),
    ("import geo", ("-c", "import geo")),
)

#: runs the case, then writes the heavy packages loaded and the module count to $STARTUP_REPORT at exit
#: (also after ``--help``'s SystemExit)
WRAPPER = r"""
import atexit, os, sys
def _report(heavy={heavy!r}):
    with open(os.environ["STARTUP_REPORT"], "w") as out:
        out.write(" ".join([str(len(sys.modules))] + [m for m in heavy if m in sys.modules]))
atexit.register(_report)
kind, *rest = sys.argv[1:]
if kind == "-c":
    sys.argv = ["-c"]
    exec(compile(rest[0], "<case>", "exec"), {{"__name__": "__main__"}})
else:
    import runpy
    sys.argv = [rest[0], *rest[1:]]
    runpy.run_module(rest[0], run_name="__main__", alter_sys=True)
"""


def measure(root: Path, how: tuple[str, ...], repeat: int) -> dict:
    """Best CPU and wall seconds, peak RSS (MB), module count and heavy packages of one case under ``root``."""
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        report = os.path.join(tmp, "report")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(root), str(root / "client")]),
            "STARTUP_REPORT": report,
            "URBAN_INSTANCE_PATH": tmp,
            "URBAN_LOAD_ENGINE": "0",  # the engine's own load is bench_engine's; here: the imports
            "URBAN_ENV": "development",
        }
        runs = []
        for _ in range(repeat):
            usage = run_measured(
                [sys.executable, "-c", WRAPPER.format(heavy=HEAVY), *how], env=env, cwd=str(root)
            )
            if usage.returncode != 0:
                raise RuntimeError(f"{how}: exit {usage.returncode}: {usage.stderr[-400:]!r}")
            runs.append(usage)
        count, *heavy = Path(report).read_text().split()
    return {
        "cpu_ms": min(u.cpu_s for u in runs) * 1e3,
        "wall_ms": min(u.seconds for u in runs) * 1e3,
        "peak_mb": min(u.peak_mb for u in runs),
        "modules": int(count),
        "heavy": heavy,
    }


def table(root: Path, repeat: int) -> list[tuple[str, dict]]:
    return [(name, measure(root, how, repeat)) for name, how in CASES]


def run(engine=None, root: Path = ROOT, repeat: int = 3) -> list[Row]:
    """``python -m bench`` rows: one per entry point, its CPU and RSS in the note."""
    rows = table(root, repeat)
    floor = rows[0][1]["cpu_ms"]
    return [
        Row(
            f"start-up: {name}",
            note=f"{m['cpu_ms']:.0f} CPU ms ({m['cpu_ms'] / floor:.1f}x python), {m['peak_mb']:.0f} MB, "
            f"{m['modules']} modules, heavy: {','.join(m['heavy']) or 'none'}",
        )
        for name, m in rows
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_startup", description=__doc__)
    parser.add_argument(
        "--root", type=Path, action="append", help="checkout(s) to measure (default: this one)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    roots = args.root or [ROOT]
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results = [(root, table(root, args.repeat)) for root in roots]
    head = f"{'entry point':32} " + " ".join(
        f"{'CPU ms':>8} {'wall ms':>8} {'MB':>5} {'mods':>5}" for _ in roots
    )
    print("\n".join(f"[{i}] {root}" for i, root in enumerate(roots)))
    print(head + "  heavy packages loaded (last root)")
    for i, (name, _how) in enumerate(CASES):
        cells = []
        for _root, rows in results:
            m = rows[i][1]
            cells.append(f"{m['cpu_ms']:8.0f} {m['wall_ms']:8.0f} {m['peak_mb']:5.0f} {m['modules']:5d}")
        print(f"{name:32} " + " ".join(cells) + "  " + (",".join(results[-1][1][i][1]["heavy"]) or "-"))
    if len(roots) == 2:
        print("\nCPU ratio last/first per entry point:")
        for i, (name, _how) in enumerate(CASES):
            before, after = results[0][1][i][1], results[1][1][i][1]
            print(f"  {name:32} {after['cpu_ms'] / before['cpu_ms']:.2f}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
