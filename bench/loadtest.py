"""``make loadtest``: the real gunicorn deployment under wrk on 127.0.0.1, bounded to about 45 s.

Runs, in one go:

0. the framework's ceiling: a bare Flask "hello" app under plain gunicorn (``bench/bare_app.py``: no config,
   no hook, no access log), the same number of sync workers, the same wrk script and connections as 1.;
1. ping: ``/_bench/ping`` (trivial JSON through the whole service stack; ``URBAN_BENCH_ROUTES=1``);
2. mixed: the four data endpoints at 8 connections, random enterprise keys (authentication and the quota
   write on every call), random saved locations and random coordinates inside the service area;
3. single client: the same mix over one connection.

1.–3. run against the same server, one process tree started from ``gunicorn.conf.py`` in production mode.
Prints requests/s, p50/p95/p99, worker CPU per request and errors per run, each run as a share of the bare
app, the targets (ping >= 75 %, mixed >= 40 % of the bare app), and checks
that the account store counted exactly the 200s the client saw. Needs Debian's ``wrk``: when it is missing
and we run as root it is installed with apt-get (announced on stdout), otherwise the script stops and says
how to install it. Options: ``--workers N`` (default ``WEB_CONCURRENCY`` or 2), ``--seconds S`` per run,
``--worker-class gthread --threads T`` (for comparison).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.deploy import ROOT, Gunicorn, free_port, get, prepare, stop_process

TARGETS = {"ping_share": 0.75, "share": 0.40, "p50_ms": 5.0, "p99_ms": 15.0, "single_p50_ms": 1.0}

_LUA_COMMON = r"""
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) ok = 0; other = 0; s5xx = 0; first = "" end
function response(status, headers, body)
  if status == 200 then ok = ok + 1
  else
    other = other + 1
    if status >= 500 then s5xx = s5xx + 1 end
    if first == "" then first = status .. " " .. string.sub(body or "", 1, 200) end
  end
end
function done(summary, latency, requests)
  local o, x, f5, fb = 0, 0, 0, ""
  for _, t in ipairs(threads) do
    o = o + t:get("ok"); x = x + t:get("other"); f5 = f5 + t:get("s5xx")
    if fb == "" then fb = t:get("first") end
  end
  local e = summary.errors
  io.write(string.format(
    '\nWRKJSON {"requests":%d,"duration_us":%d,"p50":%d,"p95":%d,"p99":%d,"max":%d,"ok":%d,"other":%d,'
    .. '"s5xx":%d,"socket_errors":%d,"first_other":"%s"}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(95),
    latency:percentile(99), latency.max, o, x, f5, e.connect + e.read + e.write + e.timeout,
    string.gsub(fb, '[%c"\\]', "?")))
end
"""


def mix_script(fx) -> str:
    """The wrk Lua script of the mixed workload (keys, location ids and points embedded)."""
    keys = ",".join(f'"{k}"' for k in fx.keys)
    locs = ",".join("{" + ",".join(f'"{i}"' for i in ids) + "}" for ids in fx.locations)
    pts = ",".join(f"{{{lat!r},{lng!r}}}" for lat, lng in fx.points)
    return (
        f"""
local keys = {{{keys}}}
local locs = {{{locs}}}
local pts = {{{pts}}}
local data = {{"/api/v1/disruptions", "/api/v1/air-quality", "/api/v1/briefing"}}
math.randomseed(20261116)
function request()
  local i = math.random(#keys)
  local r = math.random(4)
  local path
  if r == 4 then
    path = "/api/v1/locations"
  elseif math.random(2) == 1 then
    local l = locs[i]
    path = data[r] .. "?locationId=" .. l[math.random(#l)]
  else
    local p = pts[math.random(#pts)]
    path = data[r] .. string.format("?lat=%.6f&lng=%.6f", p[1], p[2])
  end
  return wrk.format("GET", path, {{["Authorization"] = "Bearer " .. keys[i]}})
end
"""
        + _LUA_COMMON
    )


def ensure_wrk() -> str:
    """Path of ``wrk``; installs Debian's package (announced) when missing and running as root."""
    path = shutil.which("wrk")
    if path:
        return path
    if os.geteuid() != 0:
        sys.exit("make loadtest needs wrk: sudo apt-get install wrk")
    print("wrk not found: installing Debian's wrk (apt-get install -y wrk) ...", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "wrk"],
        check=True,
        env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
    )
    return shutil.which("wrk") or sys.exit("apt-get did not install wrk")


def run_wrk(
    wrk: str, port: int, script: Path, *, path: str, connections: int, threads: int, seconds: float
) -> dict:
    """One wrk run; the parsed WRKJSON line plus requests/s."""
    out = subprocess.run(
        [
            wrk,
            f"-t{threads}",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "5s",
            "-s",
            str(script),
            f"http://127.0.0.1:{port}{path}",
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
    )
    line = next((l for l in out.stdout.splitlines() if l.startswith("WRKJSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result:\n{out.stdout}\n{out.stderr}")
    res = json.loads(line[len("WRKJSON ") :])
    res["rps"] = res["requests"] / (res["duration_us"] / 1e6)
    return res


def workers_cpu(server) -> float:
    """CPU seconds (user + system) used so far by the server's live workers: divided by the requests of
    a run it gives the server's CPU cost per request, which a busy shared machine distorts far less than
    wall-clock latency."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in server.worker_pids():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def measured(server, wrk, port, script, **kwargs) -> dict:
    """:func:`run_wrk` plus ``cpu_us``: worker CPU microseconds per request during the run."""
    before = workers_cpu(server)
    res = run_wrk(wrk, port, script, **kwargs)
    res["cpu_us"] = (workers_cpu(server) - before) * 1e6 / max(1, res["requests"])
    return res


class BareApp:
    """``gunicorn bench.bare_app:app`` on 127.0.0.1: plain gunicorn, ``workers`` sync workers, nothing else
    (a context manager)."""

    def __init__(self, workers: int, log: Path):
        self.port, self.workers, self.log_path = free_port(), workers, log

    def __enter__(self) -> "BareApp":
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", str(self.workers), "--worker-class", "sync"]
            + ["--bind", f"127.0.0.1:{self.port}", "bench.bare_app:app"],
            cwd=ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if get(self.port, "/")[0] == 200:
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("the bare app did not start:\n" + self.log_path.read_text()[-2000:])
            time.sleep(0.1)

    def worker_pids(self) -> list[int]:
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(p) for p in path.read_text().split()]

    def __exit__(self, *exc) -> None:
        stop_process(self.proc)
        self._log.close()


def stored_count(instance: Path) -> int:
    with sqlite3.connect(instance / "urban.sqlite") as conn:
        return conn.execute("SELECT COALESCE(SUM(count), 0) FROM usage").fetchone()[0]


def render(rows, ceiling_rps: float) -> str:
    """The table of the runs; ``share`` is requests/s as a share of ``ceiling_rps``."""
    head = (
        f"{'run':<34}{'conns':>6}{'req/s':>10}{'share':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
        f"{'max ms':>9}{'cpu us':>9}{'errors':>8}"
    )
    lines = [head, "-" * len(head)]
    for name, conns, r in rows:
        errors = r["other"] + r["socket_errors"]
        lines.append(
            f"{name:<34}{conns:>6}{r['rps']:>10,.0f}{r['rps'] / ceiling_rps:>8.0%}"
            f"{r['p50'] / 1e3:>9.2f}{r['p95'] / 1e3:>9.2f}{r['p99'] / 1e3:>9.2f}"
            f"{r['max'] / 1e3:>9.1f}{r['cpu_us']:>9.0f}{errors:>8}"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loadtest", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
    parser.add_argument("--worker-class", default="sync", choices=["sync", "gthread"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10.0, help="per run (three runs + warm-up)")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--wrk-threads", type=int, default=1)
    parser.add_argument(
        "--topology",
        default="single",
        choices=["single", "hosts", "both"],
        help="single: the runs above; hosts: one host vs two hosts behind nginx with PostgreSQL "
        "and Redis (bench/topology.py); both: the one, then the other",
    )
    args = parser.parse_args(argv)
    if args.topology != "single":
        from bench import topology

        ok = True if args.topology == "hosts" else main_single(args) == 0
        wrk = ensure_wrk()
        data_dir = Path(os.environ.get("URBAN_DATA_DIR", ROOT / "data/snapshot")).resolve()
        ok = (
            topology.compare(args, wrk, data_dir, run_wrk=run_wrk, mix_script=mix_script, render=render)
            and ok
        )
        return 0 if ok else 1
    return main_single(args)


def main_single(args) -> int:
    """The single-host runs: ceiling, mixed at N connections, single client."""
    seconds = min(args.seconds, 15.0)  # keeps the whole run about a minute
    wrk = ensure_wrk()
    data_dir = Path(os.environ.get("URBAN_DATA_DIR", ROOT / "data/snapshot")).resolve()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="urban-load-") as tmp:
        tmp = Path(tmp)
        fx = prepare(tmp / "instance", data_dir)
        mix, ping = tmp / "mix.lua", tmp / "ping.lua"
        mix.write_text(mix_script(fx))
        ping.write_text(_LUA_COMMON)
        c, t = args.connections, args.wrk_threads
        with BareApp(args.workers, tmp / "bare.log") as bare:
            run_wrk(wrk, bare.port, ping, path="/", connections=c, threads=t, seconds=2)  # warm-up
            ceiling = measured(
                bare, wrk, bare.port, ping, path="/", connections=c, threads=t, seconds=seconds
            )
        env = {
            "URBAN_BENCH_ROUTES": "1",
            "GUNICORN_WORKER_CLASS": args.worker_class,
            "GUNICORN_THREADS": str(args.threads),
            "GUNICORN_ACCESSLOG": str(tmp / "access.log"),
            "URBAN_AUTH_FAILURE_LIMIT": "1000000 per minute",
        }
        with Gunicorn(
            fx.instance, workers=args.workers, data_dir=data_dir, env=env, log=tmp / "gunicorn.log"
        ) as server:
            run_wrk(wrk, server.port, mix, path="/", connections=c, threads=t, seconds=2)  # warm-up
            ping_run = measured(
                server, wrk, server.port, ping, path="/_bench/ping", connections=c, threads=t, seconds=seconds
            )
            mixed = measured(
                server, wrk, server.port, mix, path="/", connections=c, threads=t, seconds=seconds
            )
            single = measured(
                server, wrk, server.port, mix, path="/", connections=1, threads=1, seconds=seconds * 0.6
            )
            status = get(server.port, "/healthz")[0]
        counted = stored_count(fx.instance)
    elapsed = time.monotonic() - started
    seen_ok = None  # the warm-up's 200s are counted too: compare only what all mixed runs saw
    rows = [
        ("ceiling: bare Flask + gunicorn", args.connections, ceiling),
        ("service: /_bench/ping", args.connections, ping_run),
        ("mixed data endpoints (auth+quota)", args.connections, mixed),
        ("mixed, single client", 1, single),
    ]
    print(
        f"\nUrban Conditions load test: {args.workers} {args.worker_class} worker(s)"
        + (f" x {args.threads} threads" if args.worker_class == "gthread" else "")
        + f", {len(fx.keys)} enterprise keys, {sum(map(len, fx.locations))} saved locations, "
        f"{len(fx.points)} points, 127.0.0.1, wrk {args.wrk_threads} thread(s)\n"
    )
    print(render(rows, ceiling["rps"]))
    ping_share, share = ping_run["rps"] / ceiling["rps"], mixed["rps"] / ceiling["rps"]
    unexpected = sum(r["other"] + r["socket_errors"] for _n, _c, r in rows)
    checks = [
        (
            f"ping >= {TARGETS['ping_share']:.0%} of the bare app",
            ping_share >= TARGETS["ping_share"],
            f"{ping_share:.0%}",
        ),
        (f"mixed >= {TARGETS['share']:.0%} of the bare app", share >= TARGETS["share"], f"{share:.0%}"),
        (
            f"p50 <= {TARGETS['p50_ms']} ms at {args.connections} connections",
            mixed["p50"] / 1e3 <= TARGETS["p50_ms"],
            f"{mixed['p50'] / 1e3:.2f} ms",
        ),
        (
            f"p99 <= {TARGETS['p99_ms']} ms at {args.connections} connections",
            mixed["p99"] / 1e3 <= TARGETS["p99_ms"],
            f"{mixed['p99'] / 1e3:.2f} ms",
        ),
        (
            f"single-client p50 <= {TARGETS['single_p50_ms']} ms",
            single["p50"] / 1e3 <= TARGETS["single_p50_ms"],
            f"{single['p50'] / 1e3:.2f} ms",
        ),
        ("0 unexpected errors", unexpected == 0, str(unexpected)),
        ("healthz after the runs", status == 200, str(status)),
    ]
    print()
    for name, ok, value in checks:
        print(f"  [{'ok' if ok else 'MISS'}] {name}: {value}")
    firsts = [r["first_other"] for _n, _c, r in rows if r["first_other"]]
    if firsts:
        print("  first unexpected answer:", firsts[0])
    print(
        f"  quota writes: {counted:,} calls counted in the account store (every admitted call, warm-up "
        f"included; mixed + single saw {mixed['ok'] + single['ok']:,} 200s)"
    )
    del seen_ok
    print(f"  total time {elapsed:.0f} s")
    return 0 if all(ok for _n, ok, _v in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
