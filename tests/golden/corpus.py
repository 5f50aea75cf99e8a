"""Golden corpus of ``/disruptions``, ``/air-quality`` and ``/briefing`` response bodies (issue 14).

The bodies are made exactly as the views in ``app/api/data.py`` make them (the same ``geo`` computation, the
same ``location`` member, the app's JSON text), over the demo snapshot (``DEMO_AS_OF``, ``DEFAULT_SEED``), a
fixed set of points (inside and outside the service area, near works, stops, stations, the Antwerp river
zone) and a fixed set of instants (around the snapshot time and across both DST changes).

Stored in ``tests/golden/corpus.jsonl.gz``: one line per response, ``{"endpoint", "lat", "lng", "now",
"status", "sha256", "bytes"}``, plus the full body for every ``SAMPLE_EVERY``-th line.

Regenerate (after an intended change of output, e.g. a new demo scenario generator)::

    make golden        # = .venv/bin/python tests/golden/corpus.py --write

and commit the new ``tests/golden/corpus.jsonl.gz`` with the change that explains it.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CORPUS = HERE / "corpus.jsonl.gz"
SAMPLE_EVERY = 37
ENDPOINTS = ("/disruptions", "/air-quality", "/briefing")
REGENERATE = "make golden   (= .venv/bin/python tests/golden/corpus.py --write)"


def instants(as_of: datetime) -> list[datetime]:
    """The clocks: around the snapshot time, and hour by hour across both 2026 DST changes
    (29 March 01:00 UTC spring forward, 25 October 01:00 UTC fall back) and the 2027 spring change."""
    out = [
        as_of + timedelta(minutes=m) for m in (-90, -1, 0, 1, 59, 60, 61, 180, 600, 1440, 2 * 1440, 7 * 1440)
    ]
    for change in (
        datetime(2026, 3, 29, 1, tzinfo=UTC),
        datetime(2026, 10, 25, 1, tzinfo=UTC),
        datetime(2027, 3, 28, 1, tzinfo=UTC),
    ):
        out += [change + timedelta(minutes=m) for m in (-1440, -61, -1, 0, 30, 60)]
    return out


def points(engine, n_random: int = 60) -> list[tuple[float, float]]:
    """Seeded random points over Flanders and Brussels (and beyond), plus points near layer features."""
    from geo.data.engine import point_coords

    rng = np.random.default_rng(14)
    pts = list(zip(rng.uniform(50.60, 51.55, n_random).round(6), rng.uniform(2.45, 5.95, n_random).round(6)))
    pts += [
        (51.2194, 4.4025),
        (51.2213, 4.3838),
        (50.8467, 4.3525),
        (51.0543, 3.7174),
        (52.3676, 4.9041),
        (50.6326, 5.5797),
        (51.2500, 4.3700),
        (51.1900, 4.3800),
    ]
    for frame, step in ((engine.works, 7), (engine.stops, 23), (engine.stations, 5)):
        lat, lng = point_coords(frame)
        for i in range(0, len(lat), step)[:12]:
            if np.isfinite(lat[i]):
                pts.append((round(float(lat[i]) + 0.004, 6), round(float(lng[i]) - 0.003, 6)))
    return [(float(a), float(b)) for a, b in pts]


def responses(engine):
    """Yield ``(endpoint, lat, lng, now, status, body_bytes)`` in a fixed order. Each 200 is also made as
    the API makes its JSON text (``app.api.data.answer_text``), which must give the same bytes."""
    from app import create_app
    from app.api.data import answer_text
    from app.api.data import by_path
    from app.api.targeting import Target
    from app.sources.serving import answer_sources, sources_text
    from geo.service.air import air_quality
    from geo.service.briefing import briefing
    from geo.service.disruptions import disruptions
    from geo.errors import GeoError

    app = create_app({"TESTING": True, "ENGINE": engine, "INSTANCE_PATH": tempfile.mkdtemp(prefix="golden-")})
    body = app.json.body
    settings = app.extensions["urban_sources"]["settings"]
    for now in instants(engine.as_of):
        for lat, lng in points(engine):
            for endpoint in ENDPOINTS:
                try:
                    if endpoint == "/disruptions":
                        obj = {
                            "location": Target(lat, lng).location_json(),
                            **disruptions(engine, lat, lng, now),
                        }
                    elif endpoint == "/air-quality":
                        obj = air_quality(engine, lat, lng, now)
                    else:
                        obj = briefing(engine, lat, lng, now)
                    layers = by_path(endpoint).layers
                    spliced = answer_text(engine, obj, sources_text(engine, layers, now, settings))
                    obj["sources"] = answer_sources(engine, layers, now, settings)
                    status = 200
                except GeoError as exc:
                    obj, status = {"error": type(exc).__name__, "message": str(exc)}, 422
                text = body(obj)
                if status == 200 and spliced != text:
                    raise AssertionError(f"{endpoint} at {lat}, {lng}, {now}: the API's text differs")
                yield endpoint, lat, lng, now, status, text.encode()


def demo_engine(tmp: Path):
    from geo.data.engine import Engine
    from geo.data.publish import build_snapshot
    from geo.data.snapshot import DEFAULT_SEED, DEMO_AS_OF

    reference = Path(os.environ.get("URBAN_REFERENCE_DIR", REPO.parent / "shared" / "data"))
    build_snapshot(tmp / "snapshot", reference, as_of=DEMO_AS_OF, seed=DEFAULT_SEED)
    return Engine.load(tmp / "snapshot")


def lines(engine) -> list[dict]:
    out = []
    for i, (endpoint, lat, lng, now, status, raw) in enumerate(responses(engine)):
        row = {
            "endpoint": endpoint,
            "lat": lat,
            "lng": lng,
            "now": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "status": status,
            "sha256": hashlib.sha256(raw).hexdigest(),
            "bytes": len(raw),
        }
        if i % SAMPLE_EVERY == 0:
            row["body"] = raw.decode()
        out.append(row)
    return out


def write(rows: list[dict], path: Path = CORPUS) -> None:
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    with open(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) as gz:
        gz.write(text.encode())


def read(path: Path = CORPUS) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {CORPUS.relative_to(REPO)}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rows = lines(demo_engine(Path(tmp)))
    if args.write:
        write(rows)
        print(f"wrote {len(rows)} responses to {CORPUS.relative_to(REPO)}")
        return 0
    old = read()
    bad = sum(a != b for a, b in zip(old, rows)) + abs(len(old) - len(rows))
    print(f"{len(rows)} responses, {bad} differ from {CORPUS.relative_to(REPO)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
