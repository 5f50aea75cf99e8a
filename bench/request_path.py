"""The modules one data-endpoint call passes through (docs/architecture.md): ``python -m bench.request_path``.

Traces one ``/disruptions`` (or ``--endpoint air-quality|briefing``) computation at a warm engine (the
request path, not the load path) and prints the ``geo`` modules in the order the call enters them, the
number of distinct modules and how often the call returns to a module it had already left.
"""

from __future__ import annotations

import argparse
import os
import sys


def trace(fn, *args):
    """``(sequence of geo modules entered, result)`` for one call of ``fn(*args)``."""
    seq: list[str] = []

    def tracer(frame, event, arg):
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if (name == "geo" or name.startswith("geo.")) and (not seq or seq[-1] != name):
                seq.append(name)
        return None

    sys.setprofile(tracer)
    try:
        out = fn(*args)
    finally:
        sys.setprofile(None)
    return seq, out


def summary(seq: list[str]) -> tuple[int, int]:
    """``(distinct modules, returns to a module already left)``."""
    seen, back = set(), 0
    for i, name in enumerate(seq):
        if name in seen and seq[i - 1] != name:
            back += 1
        seen.add(name)
    return len(seen), back


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--endpoint", default="disruptions", choices=("disruptions", "air-quality", "briefing"))
    p.add_argument("--lat", type=float, default=51.2194)
    p.add_argument("--lng", type=float, default=4.4025)
    args = p.parse_args(argv)
    import importlib

    import geo

    path = os.environ.get("URBAN_DATA_DIR", "data/snapshot")
    engine = geo.load(path) if hasattr(geo, "load") else geo.Engine.load(path)
    where = {
        "disruptions": ("geo.service.disruptions", "geo.disruptions", "disruptions"),
        "air-quality": ("geo.service.air", "geo.air", "air_quality"),
        "briefing": ("geo.service.briefing", "geo.briefing", "briefing"),
    }[args.endpoint]
    mod = importlib.import_module(where[0] if hasattr(geo, "load") else where[1])  # flat before issue 14
    fn = getattr(mod, where[2])
    fn(engine, args.lat, args.lng, engine.as_of)  # warm: clock caches of this instant
    seq, _ = trace(fn, engine, args.lat, args.lng, engine.as_of)
    n, back = summary(seq)
    print(" -> ".join(m.removeprefix("geo.") for m in seq))
    print(f"{args.endpoint}: {n} modules, {back} returns to a module already left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
