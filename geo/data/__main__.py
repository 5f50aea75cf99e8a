"""``python -m geo.data build|verify``: build or check a snapshot directory (see docs/data.md).

The command line of :mod:`geo.data` (argparse): the only module of the package that talks to a terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..errors import SnapshotError
from .publish import build_snapshot
from .snapshot import DEFAULT_SEED, DEMO_AS_OF, read_snapshot

DESCRIPTION = (
    "Snapshot directories: build (reference files + live payloads or demo scenario), write atomically, read."
)


def _load_json(paths):
    out = []
    for p in paths:
        try:
            out.append(json.loads(Path(p).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise SystemExit(f"error: cannot read JSON payload {p}: {exc}") from None
    return out


def _merge(payloads):
    """One payload as is; several (pages) as a list of payloads."""
    if not payloads:
        return None
    return payloads[0] if len(payloads) == 1 else payloads


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m geo.data", description=DESCRIPTION)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build a snapshot directory (atomic replace)")
    b.add_argument("--reference", required=True, help="directory of the published reference files")
    b.add_argument(
        "--out",
        default=os.environ.get("URBAN_DATA_DIR", "data/snapshot"),
        help="snapshot directory to (re)place (default: $URBAN_DATA_DIR or data/snapshot)",
    )
    b.add_argument("--as-of", default=DEMO_AS_OF, help=f"snapshot time, ISO 8601 (default {DEMO_AS_OF})")
    b.add_argument("--seed", type=int, default=DEFAULT_SEED, help="demo scenario seed")
    live = b.add_argument_group(
        "live upstream payloads (JSON files in the upstream formats; "
        "absent layers fall back to the demo scenario)"
    )
    live.add_argument(
        "--works-json",
        nargs="+",
        default=[],
        metavar="FILE",
        help="GIPOD OGC API Features INNAME FeatureCollection page(s)",
    )
    live.add_argument(
        "--hindrances-json",
        nargs="+",
        default=[],
        metavar="FILE",
        help="GIPOD OGC API Features HINDER_PUNT FeatureCollection page(s) (the works' hindrances)",
    )
    live.add_argument("--stops-json", nargs="+", default=[], metavar="FILE", help="De Lijn Haltes page(s)")
    live.add_argument(
        "--stop-lines-json", metavar="FILE", help='object {"<entiteit>_<halte>": Lijnrichtingen response}'
    )
    live.add_argument(
        "--detours-json", nargs="+", default=[], metavar="FILE", help="De Lijn Omleidingen response(s)"
    )
    live.add_argument(
        "--lines-json",
        nargs="+",
        default=[],
        metavar="FILE",
        help="De Lijn /entiteiten/{e}/lijnen and /lijnen/{e}/{l} response(s): internal -> public line numbers",
    )
    live.add_argument("--regions-json", metavar="FILE", help="De Lijn /vervoerregios response (region names)")
    live.add_argument(
        "--stop-details-json",
        metavar="FILE",
        help='object {"<entiteit>_<halte>": /haltes/{e}/{h} response} for detour stops',
    )
    live.add_argument("--stations-json", metavar="FILE", help="IRCEL /stations?phenomenon=8 response")
    live.add_argument("--timeseries-json", metavar="FILE", help="IRCEL /timeseries?phenomenon=8 response")
    live.add_argument(
        "--no2-json",
        metavar="FILE",
        help="IRCEL getData values keyed by timeseries id (needs --timeseries-json)",
    )
    live.add_argument("--lez-geojson", metavar="FILE", help="Stad Antwerpen ArcGIS LEZ GeoJSON")
    live.add_argument(
        "--boundary-geojson",
        metavar="FILE",
        help="GeoJSON of the Flemish and Brussels regions (WFS/OGC API Features, WGS84)",
    )
    v = sub.add_parser("verify", help="load and validate a snapshot directory, print its manifest summary")
    v.add_argument("path", nargs="?", default=os.environ.get("URBAN_DATA_DIR", "data/snapshot"))
    return p


def _summary(manifest: dict) -> str:
    lines = [f"snapshot {manifest['snapshotId'][:16]}… asOf {manifest['asOf']}"]
    for name, e in manifest["layers"].items():
        lines.append(f"  {name:<13} {e['kind']:<9} {e['records']:>7} records  {e['file']}")
    skipped = manifest.get("skipped") or {}
    if skipped:
        lines.append("skipped upstream records (per source and reason):")
        for source, reasons in skipped.items():
            for reason, n in reasons.items():
                lines.append(f"  {source:<9} {reason:<18} {n:>7}")
    else:
        lines.append("skipped upstream records: none")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Entry point of ``python -m geo.data``."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "verify":
            _, manifest = read_snapshot(args.path)
            print(_summary(manifest))
            return 0
        if args.no2_json and not args.timeseries_json:
            raise SystemExit("error: --no2-json needs --timeseries-json (the series → station mapping)")
        raw = {
            "works": _merge(_load_json(args.works_json)),
            "hindrances": _merge(_load_json(args.hindrances_json)),
            "stops": _merge(_load_json(args.stops_json)),
            "stop_lines": _merge(_load_json([args.stop_lines_json] if args.stop_lines_json else [])),
            "detours": _merge(_load_json(args.detours_json)),
            "lines": _load_json(args.lines_json) or None,
            "regions": _merge(_load_json([args.regions_json] if args.regions_json else [])),
            "stop_details": _merge(_load_json([args.stop_details_json] if args.stop_details_json else [])),
            "stations": _merge(_load_json([args.stations_json] if args.stations_json else [])),
            "timeseries": _merge(_load_json([args.timeseries_json] if args.timeseries_json else [])),
            "no2": _merge(_load_json([args.no2_json] if args.no2_json else [])),
            "lez": _merge(_load_json([args.lez_geojson] if args.lez_geojson else [])),
            "boundary": _merge(_load_json([args.boundary_geojson] if args.boundary_geojson else [])),
        }
        manifest = build_snapshot(args.out, args.reference, as_of=args.as_of, raw=raw, seed=args.seed)
    except (SnapshotError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}\n{_summary(manifest)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
