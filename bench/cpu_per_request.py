"""CPU cost per request, counted in instructions: ``python -m bench.cpu_per_request``.

Wall-clock throughput needs a quiet machine (``make loadtest``); instruction counts do not. Each case runs in
its own Python process under ``valgrind --tool=callgrind``, builds its WSGI app, warms it, then makes ``n``
direct WSGI calls (what a gunicorn worker calls, one prebuilt environ copied per call). Every case runs twice,
with ``n`` and ``2n`` calls; the difference of the two totals divided by ``n`` is the cost of one request,
free of start-up and imports. Cases, in the same run:

- ``bare``: ``bench/bare_app.py`` (a bare Flask app, ``GET /`` answering ``{"status":"ok"}``): the baseline;
- ``ping``: the service's ``/_bench/ping`` (production settings plus ``BENCH_ROUTES``): every hook of ours;
- ``mixed``: the data endpoints of ``make loadtest``'s mix in a fixed rotation (``/disruptions``,
  ``/air-quality``, ``/briefing`` by point and by ``locationId``, ``/locations``), Enterprise keys
  (authentication and the quota write on every call), the same settings: per request, the mix's mean;
- ``load``: ``make loadtest``'s own mix (``bench.loadtest.mix_script``: its 40 keys, 120 saved locations
  and 200 points, each request drawn as its wrk script draws it, from a fixed seed), the same settings.

Prints instructions per request and the bare app's share of each (``bare / case``: the throughput share the
case would reach if only the WSGI call cost CPU; gunicorn, the kernel and the access log, the same or nearly
for both apps under ``make loadtest``, make the real share higher). Needs Debian's ``valgrind``.

``--base REF`` runs every case also on ``REF`` (``git archive`` into a temporary folder; its children run
this harness with that tree's ``app`` and ``geo``), in the same run, and prints each case's ``head / base``;
``--head REF`` runs ``REF`` as the head instead of the work tree (so editing the tree cannot touch a run).

``--clock`` measures CPU time instead of instructions, without valgrind: one long-lived process per tree
and case (this tree, and ``REF`` with ``--base``), each warmed as above, then ``--rounds`` rounds in which
every process makes the same ``n`` WSGI calls in turn (the order reversed every other round, so a load
change hits both trees alike) and reports the process CPU time they took. Prints CPU µs per request per
round, each case's median, the rounds' ``head / base`` ratios (worst, median, best) and the load average
before and after: on a shared machine the µs scatter with the load, the same-round ratio far less.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARM = 30
#: warm-up rounds of the mixed rotation: enough that the index parts the engine builds after a number of
#: queries (the nearest-station grid after ``geo.index.point_index.FEW_QUERIES`` look-ups) are built before
#: the count starts, in the ``n`` run as in the ``2n`` one
WARM_MIXED = 100
#: requests of the ``load`` mix made before the count starts: past the nearest-station grid's build and
#: past the second call of nearly every one of its 200 points (their kept parts, ``POINT_CACHE``), as a
#: worker is a few seconds into ``make loadtest``'s mixed run
WARM_LOAD = 5000

#: issue 29's targets for ``bare / case`` (set on ``make loadtest``'s requests per second, same run)
TARGETS = {"ping": 0.75, "mixed": 0.40, "load": 0.40}

#: instructions per request recorded in docs/architecture.md (n = 200): (commit, bare, ping, mixed)
RECORDED = (
    ("6b9602b", 315_442, 778_109, 2_897_710),
    ("Flask-Limiter off the path", 314_333, 533_607, 2_619_057),
    ("s35: kept per-IP windows, sources plan", 315_689, 515_550, 2_434_776),
    ("s36: main 20a7604, mixed warmed past the nearest grid", 316_794, 516_270, 2_467_461),
    ("s36: works and stops search in Python floats", 315_552, 513_730, 1_638_973),
    ("s37: admission without an IN list or PRAGMAs (load mix 1,703,270)", 315_581, 512_361, 1_554_434),
)


#: the ``mixed`` rotation: (path, query), ``{loc}`` a saved location of the calling key
MIX = (
    ("/api/v1/disruptions", "lat={lat}&lng={lng}"),
    ("/api/v1/air-quality", "locationId={loc}"),
    ("/api/v1/briefing", "lat={lat}&lng={lng}"),
    ("/api/v1/locations", ""),
    ("/api/v1/disruptions", "locationId={loc}"),
    ("/api/v1/air-quality", "lat={lat}&lng={lng}"),
    ("/api/v1/briefing", "locationId={loc}"),
    ("/api/v1/locations", ""),
)


def _load_requests(instance: Path, data_dir: str, count: int) -> list[tuple[str, str, dict[str, str]]]:
    """``count`` requests of ``make loadtest``'s mix, drawn as ``bench.loadtest.mix_script`` draws them (a
    key; one of the three data endpoints or ``/locations``; by saved location or by point, half each)."""
    import random

    from bench.deploy import prepare

    fx = prepare(instance, data_dir)
    rng = random.Random(20261116)
    data = ("/api/v1/disruptions", "/api/v1/air-quality", "/api/v1/briefing")
    out = []
    for _ in range(count):
        key = rng.randrange(len(fx.keys))
        kind = rng.randrange(4)
        if kind == 3:
            path, query = "/api/v1/locations", ""
        elif rng.randrange(2) == 0:
            path, query = data[kind], f"locationId={rng.choice(fx.locations[key])}"
        else:
            lat, lng = rng.choice(fx.points)
            path, query = data[kind], f"lat={lat:.6f}&lng={lng:.6f}"
        headers = {"Host": "127.0.0.1:8000", "Authorization": f"Bearer {fx.keys[key]}"}
        out.append((path, query, headers))
    return out


def _requests(case: str, instance: Path, data_dir: str, n: int = 0) -> list[tuple[str, str, dict[str, str]]]:
    """The requests of ``case`` in the order they are made (path, query string, headers)."""
    host = {"Host": "127.0.0.1:8000"}
    if case == "bare":
        return [("/", "", host)]
    if case == "ping":
        return [("/_bench/ping", "", host)]
    if case == "load":
        return _load_requests(instance, data_dir, WARM_LOAD + n)
    from bench.deploy import prepare

    fx = prepare(instance, data_dir, accounts=4, locations_per_account=2, points=len(MIX))
    out = []
    for i, (path, query) in enumerate(MIX):
        key, (lat, lng) = i % len(fx.keys), fx.points[i]
        loc = fx.locations[key][i % len(fx.locations[key])]
        headers = {**host, "Authorization": f"Bearer {fx.keys[key]}"}
        out.append((path, query.format(lat=f"{lat:.6f}", lng=f"{lng:.6f}", loc=loc), headers))
    return out


def _app(case: str, instance: Path):
    if case == "bare":
        from bench.bare_app import app

        return app
    from app import create_app

    return create_app(
        {
            "INSTANCE_PATH": str(instance),
            "DATA_DIR": _data_dir(),
            "ENV": "production",
            "SECRET_KEY": "bench-cpu-per-request",
            "BENCH_ROUTES": True,
            "PUBLIC_URL": "http://127.0.0.1:8000",
        }
    )


def _data_dir() -> str:
    return os.environ.get("URBAN_DATA_DIR", str(ROOT / "data" / "snapshot"))


def _caller(case: str, n: int):
    """Build the app of ``case`` and its requests, warm it; ``(call, statuses)``: ``call()`` makes the next
    WSGI call of the rotation (``n`` the requests drawn past the warm-up, for ``load``)."""
    from werkzeug.test import EnvironBuilder

    instance = Path(tempfile.mkdtemp(prefix="cpu-per-request-"))
    templates = []
    for path, query, headers in _requests(case, instance, _data_dir(), n):
        environ = EnvironBuilder(path=path, query_string=query, headers=headers).get_environ()
        environ["REMOTE_ADDR"] = "127.0.0.1"
        templates.append(environ)
    app = _app(case, instance)
    statuses: list[str] = []
    calls = 0

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    def call():
        nonlocal calls
        template = templates[calls % len(templates)]
        calls += 1
        body = app(dict(template), start_response)
        try:
            for _chunk in body:
                pass
        finally:
            getattr(body, "close", lambda: None)()

    warm = {"mixed": WARM_MIXED * len(templates), "load": WARM_LOAD}.get(case, WARM * len(templates))
    for _ in range(warm):
        call()
    return call, statuses


def _all_ok(case: str, statuses: list[str]) -> None:
    if any(not s.startswith("200") for s in statuses):
        raise SystemExit(f"{case}: {sorted(set(statuses))}")


def child(case: str, n: int) -> None:
    """Build the app of ``case``, warm it, make ``n`` WSGI calls; exit 1 unless every answer is 200."""
    call, statuses = _caller(case, n)
    # instrument from here on: start-up and warm-up run uninstrumented (several times faster)
    subprocess.run(
        ["callgrind_control", "--instr=on", str(os.getpid())], check=True, stdout=subprocess.DEVNULL
    )
    for _ in range(n):
        call()
    _all_ok(case, statuses)


def serve(case: str, n: int) -> None:
    """The ``--clock`` child: build and warm as :func:`child`, print ``ready``, then for each line ``k`` on
    stdin make ``k`` calls and print the process CPU seconds they took (answers on the original stdout;
    anything the app prints goes to stderr)."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    call, statuses = _caller(case, n)
    _all_ok(case, statuses)
    print("ready", file=out)
    for line in sys.stdin:
        k = int(line)
        start = time.process_time()
        for _ in range(k):
            call()
        spent = time.process_time() - start
        _all_ok(case, statuses)
        print(f"{spent!r}", file=out)


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }


def instructions(case: str, n: int, out_dir: Path, root: Path = ROOT) -> int:
    """Total instructions (``Ir``) of one child process under callgrind, with the tree at ``root``."""
    out = out_dir / f"callgrind.{root.name}.{case}.{n}"
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            "--dump-instr=no",
            sys.executable,
            "-m",
            "bench.cpu_per_request",
            "--child",
            case,
            str(n),
        ],
        check=True,
        env=_env(root),
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"no instruction total in {out}")
    return int(match.group(1))


def per_request(case: str, n: int, out_dir: Path, root: Path = ROOT) -> float:
    """Instructions of one request of ``case``: (total at 2n − total at n) / n."""
    return (instructions(case, 2 * n, out_dir, root) - instructions(case, n, out_dir, root)) / n


def export(ref: str, into: Path, name: str) -> Path:
    """``ref``'s tree extracted into ``into/name``, with this harness in place of its own."""
    root = into / name
    root.mkdir()
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    shutil.copyfile(Path(__file__), root / "bench" / "cpu_per_request.py")
    return root


class _Server:
    """One ``--clock`` child: a tree's app for one case, warmed, making calls on request."""

    def __init__(self, case: str, n: int, root: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.cpu_per_request", "--serve", case, str(n)],
            env=_env(root),
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._expect("ready")

    def _expect(self, what: str | None = None) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line or (what is not None and line != what):
            raise SystemExit(f"a --clock child failed (exit {self.proc.wait()}): {line!r}")
        return line

    def cpu_us(self, k: int) -> float:
        """CPU µs per request of the next ``k`` calls."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{k}\n")
        self.proc.stdin.flush()
        return float(self._expect()) / k * 1e6

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def clock(cases: list[str], n: int, rounds: int, trees: dict[str, Path]) -> int:
    """The ``--clock`` run: CPU µs per request of every case and tree, rounds alternated."""
    load_before = os.getloadavg()
    servers = {(case, tree): _Server(case, n, root) for case in cases for tree, root in trees.items()}
    got: dict[tuple[str, str], list[float]] = {key: [] for key in servers}
    try:
        for r in range(rounds):
            order = list(servers) if r % 2 == 0 else list(reversed(servers))
            for key in order:
                got[key].append(servers[key].cpu_us(n))
            line = "  ".join(f"{case} {tree} {got[case, tree][-1]:,.0f}" for case, tree in servers)
            print(f"round {r + 1}: {line}  (load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for server in servers.values():
            server.close()
    print(
        f"CPU µs per request, median of {rounds} rounds of {n:,} calls; load average "
        f"{load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    for case in cases:
        medians = {tree: statistics.median(got[case, tree]) for tree in trees}
        text = "  ".join(f"{tree} {us:,.1f}" for tree, us in medians.items())
        if "base" in trees:
            ratios = sorted(h / b for h, b in zip(got[case, "head"], got[case, "base"]))
            text += (
                f"  head / base: worst {ratios[-1]:.3f}, median {statistics.median(ratios):.3f}, "
                f"best {ratios[0]:.3f}"
            )
        print(f"  {case:<8}{text}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "-n",
        type=int,
        default=200,
        help="requests of the shorter run (the longer makes 2n); with --clock, the calls of a round",
    )
    p.add_argument(
        "--cases", nargs="+", default=["bare", "ping", "mixed"], choices=["bare", "ping", "mixed", "load"]
    )
    p.add_argument("--base", metavar="REF", help="also run every case on this commit, in the same run")
    p.add_argument("--head", metavar="REF", help="run this commit as the head instead of the work tree")
    p.add_argument("--clock", action="store_true", help="CPU time per request instead of instructions")
    p.add_argument("--rounds", type=int, default=6, help="with --clock: rounds of n calls per process")
    p.add_argument("--child", nargs=2, metavar=("CASE", "N"), help=argparse.SUPPRESS)
    p.add_argument("--serve", nargs=2, metavar=("CASE", "N"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    if args.serve:
        serve(args.serve[0], int(args.serve[1]))
        return 0
    if not args.clock and shutil.which("valgrind") is None:
        raise SystemExit("valgrind is missing: apt-get install valgrind")
    cases = ["bare", *(case for case in args.cases if case != "bare")]  # the baseline, in every run
    with tempfile.TemporaryDirectory(prefix="cpu-per-request-") as tmp:
        if not os.environ.get("URBAN_DATA_DIR"):  # the demo snapshot, built once outside valgrind
            from geo.data.publish import build_snapshot
            from geo.data.snapshot import DEFAULT_SEED, DEMO_AS_OF

            reference = os.environ.get("URBAN_REFERENCE_DIR", str(ROOT.parent / "shared" / "data"))
            os.environ["URBAN_DATA_DIR"] = str(Path(tmp) / "snapshot")
            build_snapshot(Path(tmp) / "snapshot", Path(reference), as_of=DEMO_AS_OF, seed=DEFAULT_SEED)
        trees = {"head": export(args.head, Path(tmp), "head") if args.head else ROOT}
        if args.base:
            trees["base"] = export(args.base, Path(tmp), "base")
        if args.clock:
            return clock(cases, args.n, args.rounds, trees)
        counts = {
            (case, tree): per_request(case, args.n, Path(tmp), root)
            for case in cases
            for tree, root in trees.items()
        }
    print(f"load average: {os.getloadavg()[0]:.2f} (instruction counts do not depend on it)")
    print(f"{'case':<14}{'instructions/request':>22}{'bare / case':>13}{'target':>9}")
    for (case, tree), count in counts.items():
        bare = counts["bare", tree]
        target = TARGETS.get(case)
        met = "" if target is None else f"{target:.0%} {'met' if bare / count >= target else 'not met'}"
        versus = f"  head / base {count / counts[case, 'base']:.3f}" if tree == "head" and args.base else ""
        name = case if not args.base else f"{case} ({tree})"
        print(f"{name:<14}{count:>22,.0f}{bare / count:>13.1%}  {met}{versus}")
    print("recorded (docs/architecture.md):")
    for label, *recorded in RECORDED:
        shares = "  ".join(
            f"{case} {count:,} ({recorded[0] / count:.1%})"
            for case, count in zip(("ping", "mixed"), recorded[1:])
            if count  # 0: not measured
        )
        print(f"  {label}: bare {recorded[0]:,}  {shares}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
