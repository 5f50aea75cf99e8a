"""``make loadtest`` (``--topology hosts|both``): one host against two hosts behind nginx, from the same run.

- one host: gunicorn with N sync workers on 127.0.0.1, SQLite account store and per-IP limits (the default);
- two hosts: two gunicorns with N/2 workers each (the same number of workers on this machine), Debian's nginx
  running ``deploy/nginx.conf`` in front, the account store on a real PostgreSQL server and the per-IP limits in
  a real redis-server, all on the same cores.

The mixed data workload of :mod:`bench.loadtest` (random enterprise keys, saved locations and points) runs
against each, alternating one-host / two-host rounds so both see the same background load, and the figures
are the median round. Every admitted call must be counted exactly once: the usage rows of each store must
sum to the 200s the servers' access logs record (warm-up included; wrk misses the answers in flight when a
run ends). Target: two hosts lose at most 15 % of one host's
throughput.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path

from bench.deploy import Gunicorn, get, prepare
from bench.services import Nginx, Postgres, Redis

TARGET_LOSS = 0.15


def _sqlite_count(instance: Path) -> int:
    import sqlite3

    with sqlite3.connect(instance / "urban.sqlite") as conn:
        return conn.execute("SELECT COALESCE(SUM(count), 0) FROM usage").fetchone()[0]


def _pg_count(url: str) -> int:
    from app.db_postgres import connect

    conn = connect(url)
    try:
        return int(conn.execute("SELECT COALESCE(SUM(count), 0) FROM usage").fetchone()[0])
    finally:
        conn.close()


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and all its live descendants."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return total / tick


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


def compare(args, wrk: str, data_dir: Path, *, run_wrk, mix_script, render) -> bool:
    """Run the comparison and print it; True when every check holds."""
    workers = max(2, args.workers)
    per_host = max(1, workers // 2)
    rounds = 3
    seconds = min(args.seconds, 10.0)
    c, t = args.connections, args.wrk_threads
    with tempfile.TemporaryDirectory(prefix="urban-topo-") as tmp, ExitStack() as stack:
        tmp = Path(tmp)
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
                        tmp / f"host{i}",
                        workers=per_host,
                        data_dir=data_dir,
                        env=env,
                        log=tmp / f"host{i}.log",
                    )
                )
            )
        nginx = stack.enter_context(Nginx([h.port for h in hosts]))
        scripts = {"one": tmp / "one.lua", "two": tmp / "two.lua"}
        scripts["one"].write_text(mix_script(one_fx))
        scripts["two"].write_text(mix_script(two_fx))
        ports = {"one": one.port, "two": nginx.port}
        # CPU of every process serving each topology, by part: the machine is shared, so CPU per request is
        # the steadier figure of what the proxy and the network stores cost
        parts = {
            "one": {"app": [one.proc.pid]},
            "two": {
                "app": [h.proc.pid for h in hosts],
                "nginx": [nginx.proc.pid],
                "postgres": [pg.proc.pid],
                "redis": [redis.proc.pid],
            },
        }
        cpu = {name: {part: 0.0 for part in p} for name, p in parts.items()}
        served = {"one": 0, "two": 0}
        seen_ok = {"one": 0, "two": 0}
        results = {"one": [], "two": []}
        for name in ("one", "two"):  # warm-up (counted too)
            seen_ok[name] += run_wrk(
                wrk, ports[name], scripts[name], path="/", connections=c, threads=t, seconds=2
            )["ok"]
        for _ in range(rounds):
            for name in ("one", "two"):
                before = {part: sum(map(tree_cpu, pids)) for part, pids in parts[name].items()}
                res = run_wrk(
                    wrk, ports[name], scripts[name], path="/", connections=c, threads=t, seconds=seconds
                )
                for part, pids in parts[name].items():
                    cpu[name][part] += sum(map(tree_cpu, pids)) - before[part]
                served[name] += res["requests"]
                res["cpu_us"] = sum(cpu[name].values()) * 1e6 / max(1, served[name])
                seen_ok[name] += res["ok"]
                results[name].append(res)
        healthy = all(get(p, "/healthz")[0] == 200 for p in ports.values())
        counted = {"one": _sqlite_count(one_fx.instance), "two": _pg_count(url)}
        for server in (one, *hosts):
            server.stop()  # flushes the access logs
        admitted = {name: admitted_in_logs(paths) for name, paths in logs.items()}
    median = {name: sorted(rs, key=lambda r: r["rps"])[len(rs) // 2] for name, rs in results.items()}
    per_req = {name: {part: v * 1e6 / max(1, served[name]) for part, v in cpu[name].items()} for name in cpu}
    for name in median:  # the CPU column: all rounds of that topology
        median[name] = {**median[name], "cpu_us": sum(per_req[name].values())}
    ratio = median["two"]["rps"] / median["one"]["rps"]
    print(
        f"\nOne host vs two hosts behind nginx (PostgreSQL + Redis), same machine, same run: "
        f"{workers} workers on one host, {per_host} on each of two; {c} connections; median of {rounds} "
        f"alternating rounds of {seconds:.0f} s\n"
    )
    print(
        render(
            [
                ("one host: gunicorn, SQLite", c, median["one"]),
                ("two hosts: nginx, PostgreSQL, Redis", c, median["two"]),
            ],
            median["one"]["rps"],
        )
    )
    print(
        "  rounds req/s, one host: "
        + ", ".join(f"{r['rps']:,.0f}" for r in results["one"])
        + "; two hosts: "
        + ", ".join(f"{r['rps']:,.0f}" for r in results["two"])
    )
    print(
        "  CPU per request (all rounds): one host "
        + ", ".join(f"{k} {v:.0f} us" for k, v in per_req["one"].items())
        + "; two hosts "
        + ", ".join(f"{k} {v:.0f} us" for k, v in per_req["two"].items())
        + f"; ratio {median['one']['cpu_us'] / median['two']['cpu_us']:.0%} (the throughput two hosts would keep "
        "on an idle machine where CPU is the limit)"
    )
    errors = sum(r["other"] + r["socket_errors"] for rs in results.values() for r in rs)
    checks = [
        (
            f"two hosts keep >= {1 - TARGET_LOSS:.0%} of one host's throughput",
            ratio >= 1 - TARGET_LOSS,
            f"{ratio:.0%} (p50 {median['one']['p50'] / 1e3:.2f} → {median['two']['p50'] / 1e3:.2f} ms, "
            f"p99 {median['one']['p99'] / 1e3:.2f} → {median['two']['p99'] / 1e3:.2f} ms)",
        ),
        (
            "every admitted call counted once, one host",
            counted["one"] == admitted["one"],
            f"{counted['one']:,} counted / {admitted['one']:,} 200s served ({seen_ok['one']:,} seen by wrk)",
        ),
        (
            "every admitted call counted once, two hosts",
            counted["two"] == admitted["two"],
            f"{counted['two']:,} counted / {admitted['two']:,} 200s served ({seen_ok['two']:,} seen by wrk)",
        ),
        ("0 unexpected errors", errors == 0, str(errors)),
        ("healthz after the runs", healthy, str(healthy)),
    ]
    print()
    for name, ok, value in checks:
        print(f"  [{'ok' if ok else 'MISS'}] {name}: {value}")
    return all(ok for _n, ok, _v in checks)
