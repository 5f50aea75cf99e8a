"""``make loadtest`` (``--topology hosts|both``): one host against two hosts behind nginx, from the same run.

Three set-ups on the same machine, the same total number of gunicorn sync workers (``--workers``, default 2)
and the same wrk connections (``--connections``, default 8):

- one host: gunicorn with N workers on 127.0.0.1, SQLite account store and per-IP limits (the default), wrk
  straight at it;
- one host behind nginx: the same gunicorn through Debian's nginx running ``deploy/nginx.conf`` (what the hop
  alone costs);
- two hosts: two gunicorns with N/2 workers each behind that nginx, the account store on a real PostgreSQL
  server (default durability) and the per-IP limits in a real redis-server.

The mixed data workload of :mod:`bench.loadtest` (random enterprise keys, saved locations and points) runs
against each, in alternating rounds so all see the same background load, and the figures are the median
round. CPU is read from ``/proc`` for every process serving a set-up (and wrk's own, and the whole machine's)
over exactly the window of each of its rounds. Every admitted call must be counted exactly once: the usage
rows of each store must sum to the 200s the servers' access logs record (warm-up included; wrk misses the
answers in flight when a run ends). Target: two hosts lose at most 15 % of one host's throughput.

After the rounds it measures the floor of what two hosts add per call on this machine — one PostgreSQL round
trip through libpq (client + server CPU) — and prints what the target allows against what nginx and the
PostgreSQL server alone use, and the share each app host keeps when nginx and PostgreSQL run elsewhere.
"""

from __future__ import annotations

import os
import resource
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from bench.deploy import Gunicorn, get, prepare
from bench.services import Nginx, Postgres, Redis

TARGET_LOSS = 0.15
NAMES = {
    "one": "one host: gunicorn, SQLite",
    "proxied": "one host behind nginx, SQLite",
    "two": "two hosts: nginx, PostgreSQL, Redis",
}


def _sqlite_count(instance: Path) -> int:
    import sqlite3

    with sqlite3.connect(instance / "urban.sqlite") as conn:
        return conn.execute("SELECT COALESCE(SUM(count), 0) FROM usage").fetchone()[0]


def _pg_count(url: str) -> int:
    from app.store.postgres import connect

    conn = connect(url)
    try:
        return int(conn.execute("SELECT COALESCE(SUM(count), 0) FROM usage").fetchone()[0])
    finally:
        conn.close()


def _stat_cpu(pid: int) -> tuple[int, list[int]]:
    """(utime + stime + cutime + cstime in ticks, children) of ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    return sum(int(f) for f in fields[11:15]), children


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and all its descendants: the live ones'
    own time, and through each process's ``cutime``/``cstime`` the children it has reaped (PostgreSQL's
    autovacuum workers, for instance, come and go within a round)."""
    total, todo = 0, [pid]
    while todo:
        try:
            ticks, children = _stat_cpu(todo.pop())
        except OSError:
            continue
        total += ticks
        todo += children
    return total / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    """CPU seconds of this process's reaped children (wrk, once ``run_wrk`` has waited for it)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far (``/proc/stat``; idle and iowait are idle)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]
    total = sum(ticks[:8])
    hz = os.sysconf("SC_CLK_TCK")
    return (total - idle) / hz, total / hz


def admitted_in_logs(paths) -> int:
    """200 answers of the data endpoints in gunicorn's JSON access logs (what the servers admitted; wrk does
    not see the answers still in flight when a run ends)."""
    import json

    n = 0
    for path in paths:
        for line in Path(path).read_text(errors="replace").splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                n += entry.get("status") in (200, "200") and str(entry.get("path", "")).startswith("/api/v1/")
    return n


def pg_round_trip(url: str, n: int = 3000) -> tuple[float, float]:
    """(client, server) CPU microseconds of one PostgreSQL round trip on this machine: a prepared
    ``SELECT 1`` through libpq (``PQexecPrepared``, no Python in between), ``n`` times over TCP."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        pgconn = conn.pgconn
        pgconn.prepare(b"floor", b"SELECT 1")
        for _ in range(200):
            pgconn.exec_prepared(b"floor", None)
        client0, server0 = time.process_time(), tree_cpu(backend)
        for _ in range(n):
            pgconn.exec_prepared(b"floor", None)
        client, server = time.process_time() - client0, tree_cpu(backend) - server0
    return client * 1e6 / n, server * 1e6 / n


def _start(stack: ExitStack, tmp: Path, data_dir: Path, workers: int):
    """Every server of the three set-ups; returns (ports, scripts' fixtures, process parts, logs, stores)."""
    per_host = max(1, workers // 2)
    pg = stack.enter_context(Postgres(durable=True))
    redis = stack.enter_context(Redis())
    url = pg.create_database("urban")
    base_env = {"URBAN_AUTH_FAILURE_LIMIT": "1000000 per minute"}
    one_fx = prepare(tmp / "one", data_dir)
    two_fx = prepare(tmp / "seed", data_dir, database_url=url)
    logs = {"one": [tmp / "one-access.log"], "two": [tmp / "host1-access.log", tmp / "host2-access.log"]}
    one = stack.enter_context(
        Gunicorn(
            one_fx.instance,
            workers=workers,
            data_dir=data_dir,
            env={**base_env, "GUNICORN_ACCESSLOG": str(logs["one"][0])},
            log=tmp / "one.log",
        )
    )
    hosts_env = {
        **base_env,
        "URBAN_DATABASE_URL": url,
        "URBAN_REDIS_URL": redis.url,
        "URBAN_TRUSTED_PROXIES": "1",
    }
    hosts = []
    for i in (1, 2):
        (tmp / f"host{i}").mkdir()
        env = {**hosts_env, "GUNICORN_ACCESSLOG": str(logs["two"][i - 1])}
        hosts.append(
            stack.enter_context(
                Gunicorn(
                    tmp / f"host{i}", workers=per_host, data_dir=data_dir, env=env, log=tmp / f"host{i}.log"
                )
            )
        )
    nginx = stack.enter_context(Nginx([h.port for h in hosts]))
    nginx_one = stack.enter_context(Nginx([one.port]))
    ports = {"one": one.port, "proxied": nginx_one.port, "two": nginx.port}
    fixtures = {"one": one_fx, "proxied": one_fx, "two": two_fx}
    parts = {
        "one": {"app": [one.proc.pid]},
        "proxied": {"app": [one.proc.pid], "nginx": [nginx_one.proc.pid]},
        "two": {
            "app": [h.proc.pid for h in hosts],
            "nginx": [nginx.proc.pid],
            "postgres": [pg.proc.pid],
            "redis": [redis.proc.pid],
        },
    }
    return ports, fixtures, parts, logs, (one_fx, url, [one, *hosts])


def compare(args, wrk: str, data_dir: Path, *, run_wrk, mix_script, render) -> bool:
    """Run the comparison and print it; True when every check holds."""
    workers = max(2, args.workers)
    per_host = max(1, workers // 2)
    rounds = 3
    seconds = min(args.seconds, 8.0)
    c, t = args.connections, args.wrk_threads
    with tempfile.TemporaryDirectory(prefix="urban-topo-") as tmp_name, ExitStack() as stack:
        tmp = Path(tmp_name)
        ports, fixtures, parts, logs, (one_fx, url, servers) = _start(stack, tmp, data_dir, workers)
        scripts = {}
        for name, fx in fixtures.items():
            scripts[name] = tmp / f"{name}.lua"
            scripts[name].write_text(mix_script(fx))
        cpu = {name: {part: 0.0 for part in [*p, "wrk"]} for name, p in parts.items()}
        busy = {name: [0.0, 0.0] for name in parts}  # machine busy / elapsed CPU seconds in the rounds
        served = dict.fromkeys(parts, 0)
        seen_ok = {"one": 0, "two": 0}
        results: dict[str, list[dict]] = {name: [] for name in parts}
        for name in parts:  # warm-up (counted too)
            ok = run_wrk(wrk, ports[name], scripts[name], path="/", connections=c, threads=t, seconds=2)["ok"]
            seen_ok["two" if name == "two" else "one"] += ok
        for _ in range(rounds):
            for name in parts:
                before = {part: sum(map(tree_cpu, pids)) for part, pids in parts[name].items()}
                wrk0, (busy0, total0) = children_cpu(), machine_cpu()
                res = run_wrk(
                    wrk, ports[name], scripts[name], path="/", connections=c, threads=t, seconds=seconds
                )
                for part, pids in parts[name].items():
                    cpu[name][part] += sum(map(tree_cpu, pids)) - before[part]
                cpu[name]["wrk"] += children_cpu() - wrk0
                busy1, total1 = machine_cpu()
                busy[name][0] += busy1 - busy0
                busy[name][1] += total1 - total0
                served[name] += res["requests"]
                seen_ok["two" if name == "two" else "one"] += res["ok"]
                results[name].append(res)
        healthy = all(get(p, "/healthz")[0] == 200 for p in ports.values())
        counted = {"one": _sqlite_count(one_fx.instance), "two": _pg_count(url)}
        floor = pg_round_trip(url)
        for server in servers:
            server.stop()  # flushes the access logs
        admitted = {name: admitted_in_logs(paths) for name, paths in logs.items()}
    per_req = {name: {part: v * 1e6 / max(1, served[name]) for part, v in cpu[name].items()} for name in cpu}
    median = {name: sorted(rs, key=lambda r: r["rps"])[len(rs) // 2] for name, rs in results.items()}
    for name in median:  # the CPU column: the servers' CPU over all rounds of that set-up (wrk apart)
        median[name] = {**median[name], "cpu_us": sum(v for k, v in per_req[name].items() if k != "wrk")}
    ratio = median["two"]["rps"] / median["one"]["rps"]
    print(
        f"\nOne host vs two hosts behind nginx (PostgreSQL + Redis), same machine, same run: {workers} sync "
        f"workers on the one host, {per_host} on each of the two; {c} wrk connections for each; median of "
        f"{rounds} alternating rounds of {seconds:.0f} s\n"
    )
    print(render([(NAMES[n], c, median[n]) for n in parts], median["one"]["rps"]))
    print()
    for name in parts:
        share = busy[name][0] / max(1e-9, busy[name][1])
        print(
            f"  {NAMES[name]:<38} rounds req/s "
            + ", ".join(f"{r['rps']:,.0f}" for r in results[name])
            + "; CPU us/request "
            + ", ".join(f"{k} {v:.0f}" for k, v in per_req[name].items())
            + f"; machine busy {share:.0%}"
        )
    checks = _explain(per_req, median, floor, ratio) + [
        (
            "every admitted call counted once, one host (direct + behind nginx)",
            counted["one"] == admitted["one"],
            f"{counted['one']:,} counted / {admitted['one']:,} 200s served ({seen_ok['one']:,} seen by wrk)",
        ),
        (
            "every admitted call counted once, two hosts",
            counted["two"] == admitted["two"],
            f"{counted['two']:,} counted / {admitted['two']:,} 200s served ({seen_ok['two']:,} seen by wrk)",
        ),
        ("0 unexpected errors", _errors(results) == 0, str(_errors(results))),
        ("healthz after the runs", healthy, str(healthy)),
    ]
    print()
    for name, ok, value in checks:
        print(f"  [{'ok' if ok else 'MISS'}] {name}: {value}")
    return all(ok for _n, ok, _v in checks)


def _errors(results) -> int:
    return sum(r["other"] + r["socket_errors"] for rs in results.values() for r in rs)


def _explain(per_req, median, floor, ratio) -> list:
    """Print where the two-host CPU goes against the target; returns the throughput check."""
    one, two, proxied = per_req["one"], per_req["two"], per_req["proxied"]
    total_one = sum(one.values())  # servers + wrk: the whole machine's work per request
    total_two = sum(two.values())
    allowed = total_one / (1 - TARGET_LOSS) - total_one
    client, server = floor
    print(
        f"\n  Where two hosts' extra CPU goes (us per request, wrk included): one host {total_one:.0f}, two hosts "
        f"{total_two:.0f} (+{total_two - total_one:.0f}): app {two['app'] - one['app']:+.0f}, "
        f"nginx {two.get('nginx', 0):+.0f}, PostgreSQL server {two.get('postgres', 0):+.0f}, "
        f"Redis {two.get('redis', 0):+.0f}, wrk {two['wrk'] - one['wrk']:+.0f}"
    )
    print(
        f"  CPU-bound ratio on these 2 cores: {total_one / total_two:.0%}; the nginx hop alone (one host behind "
        f"nginx): {total_one / max(1e-9, sum(proxied.values())):.0%} "
        f"(nginx {proxied.get('nginx', 0):.0f} us, app {proxied['app'] - one['app']:+.0f}, "
        f"wrk {proxied['wrk'] - one['wrk']:+.0f})"
    )
    print(
        f"  Floor on this machine: one PostgreSQL round trip through libpq costs {client:.0f} us client + "
        f"{server:.0f} us server CPU; the {TARGET_LOSS:.0%} target allows two hosts {allowed:.0f} us more per "
        f"request than one host, nginx and the PostgreSQL server alone use "
        f"{two.get('nginx', 0) + two.get('postgres', 0):.0f}"
    )
    print(
        f"  On separate machines (nginx and PostgreSQL on their own cores) each app host keeps "
        f"{one['app'] / two['app']:.0%} of a single host's throughput (app CPU {one['app']:.0f} -> "
        f"{two['app']:.0f} us per request)"
    )
    return [
        (
            f"two hosts keep >= {1 - TARGET_LOSS:.0%} of one host's throughput",
            ratio >= 1 - TARGET_LOSS,
            f"{ratio:.0%} (p50 {median['one']['p50'] / 1e3:.2f} → {median['two']['p50'] / 1e3:.2f} ms, "
            f"p99 {median['one']['p99'] / 1e3:.2f} → {median['two']['p99'] / 1e3:.2f} ms)",
        )
    ]
