"""The modules one data-endpoint call passes through (docs/architecture.md): ``python -m bench.request_path``.

Traces one ``/disruptions`` (or ``--endpoint air-quality|briefing``) computation at a warm engine (the
request path, not the load path) and prints the ``geo`` modules in the order the call enters them, the
number of distinct modules and how often the call returns to a module it had already left.

With ``--app`` it traces one warm authenticated request through the whole Flask app instead (a WSGI call as
gunicorn makes it, an API key, the account store on SQLite, the default settings) and prints the same for
the ``app`` modules and the ``geo`` modules the request enters.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

PACKAGES = ("geo", "app")


def trace(fn, *args, packages: tuple[str, ...] = ("geo",)):
    """``({package: sequence of its modules entered}, result)`` for one call of ``fn(*args)``."""
    seqs: dict[str, list[str]] = {p: [] for p in packages}

    def tracer(frame, event, arg):
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            package = name.partition(".")[0]
            seq = seqs.get(package)
            if seq is not None and (not seq or seq[-1] != name):
                seq.append(name)
        return None

    sys.setprofile(tracer)
    try:
        out = fn(*args)
    finally:
        sys.setprofile(None)
    return seqs, out


def summary(seq: list[str]) -> tuple[int, int]:
    """``(distinct modules, returns to a module already left)``."""
    seen, back = set(), 0
    for i, name in enumerate(seq):
        if name in seen and seq[i - 1] != name:
            back += 1
        seen.add(name)
    return len(seen), back


def report(label: str, seqs: dict[str, list[str]]) -> None:
    for package, seq in seqs.items():
        n, back = summary(seq)
        print(f"{package}: " + " -> ".join(m.removeprefix(package + ".") for m in seq))
        print(f"{label}: {n} {package} modules, {back} returns to a module already left")


def engine_call(args) -> int:
    import importlib

    import geo

    path = os.environ.get("URBAN_DATA_DIR", "data/snapshot")
    engine = geo.load(path)
    where = {
        "disruptions": ("geo.service.disruptions", "disruptions"),
        "air-quality": ("geo.service.air", "air_quality"),
        "briefing": ("geo.service.briefing", "briefing"),
    }[args.endpoint]
    fn = getattr(importlib.import_module(where[0]), where[1])
    fn(engine, args.lat, args.lng, engine.as_of)  # warm: clock caches of this instant
    seqs, _ = trace(fn, engine, args.lat, args.lng, engine.as_of)
    report(args.endpoint, seqs)
    return 0


def app_call(args) -> int:
    """One warm authenticated request through the WSGI app (what a gunicorn worker calls)."""
    from werkzeug.test import EnvironBuilder

    from app import create_app
    from bench.deploy import prepare

    data_dir = os.environ.get("URBAN_DATA_DIR", "data/snapshot")
    instance = Path(tempfile.mkdtemp(prefix="request-path-"))
    fixture = prepare(instance, data_dir, accounts=1, locations_per_account=1, points=1)
    app = create_app(
        {"INSTANCE_PATH": str(instance), "DATA_DIR": data_dir, "ENV": "development", "SECRET_KEY": "bench"}
    )
    path = f"/api/v1/{args.endpoint}?lat={args.lat}&lng={args.lng}"
    headers = {"Authorization": f"Bearer {fixture.keys[0]}"}

    def call() -> str:
        environ = EnvironBuilder(path=path, headers=headers).get_environ()
        status = []
        body = app(environ, lambda s, h, exc_info=None: status.append(s))
        try:
            b"".join(body)
        finally:
            getattr(body, "close", lambda: None)()
        return status[0]

    for _ in range(3):  # warm: the store connection, statement caches, clock caches of this instant
        call()
    seqs, status = trace(call, packages=PACKAGES)
    if not status.startswith("200"):
        raise SystemExit(f"/{args.endpoint} answered {status}")
    report(f"GET /api/v1/{args.endpoint}", seqs)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--endpoint", default="disruptions", choices=("disruptions", "air-quality", "briefing"))
    p.add_argument("--lat", type=float, default=51.2194)
    p.add_argument("--lng", type=float, default=4.4025)
    p.add_argument("--app", action="store_true", help="trace one request through the Flask app")
    args = p.parse_args(argv)
    return app_call(args) if args.app else engine_call(args)


if __name__ == "__main__":
    sys.exit(main())
