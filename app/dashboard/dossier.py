"""The evidence dossier of a saved location (Pro, Enterprise): what the history store knows about the place over
a chosen period of whole Brussels days and a radius, as a PDF and as a bundle an authority or insurer can check.

It holds every work within the radius with its days running and its recorded changes, the detours that hit the
place, the hourly NO2 series and its summary, and the sources, licences and retrieval times of the snapshots
served during the period. The data comes from :mod:`app.history.query` (the history resources' queries) and is
serialised by the history API's own functions (:mod:`app.api.history`), so the bundle's CSV files read like the
API's. The bundle is a zip: the data files, ``dossier.json``, ``README.txt``, ``SHA256SUMS`` (``sha256sum -c``)
and ``MANIFEST.json``; the PDF prints the manifest's sha256. Both are built together, once per dossier (the same
location, period, radius and newest recorded publish give the same bytes), bounded like the PDF reports
(:mod:`app.dashboard.limits`: the account's dossier window, the host's build slots) and rendered with the
reports' URL fetcher that fetches nothing. docs/dashboard.md → Evidence dossier.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from flask import current_app, g, render_template

from app.api.history import (
    CSV_COLUMNS,
    MAX_WINDOW_DAYS,
    csv_cell,
    csv_rows,
    detour_json,
    no2_json,
    render_csv,
    render_geojson,
    work_json,
)
from app.history import query
from app.history.asof import reading
from app.history.errors import InvalidWindow, WindowOutOfRange, WindowTooLong
from app.sources.catalog import SOURCES
from app.web.clock import wall_now
from app.web.errors import InvalidRequest
from app.web.redact import echo
from geo.rules.airrules import EU_NO2, WHO_NO2
from geo.rules.timefmt import iso_utc_ms

from . import limits
from .report import ReportCache, built_cache, html_to_pdf

PLANS = ("pro", "enterprise")
PRO_DAYS = 30  # how far back a Pro dossier reaches (Enterprise: HISTORY_DAYS, the plan's 365-day history)
DEFAULT_DAYS = 30
RADIUS_KM = (0.05, 5.0, 2.0)  # least, most, default
LOCAL = ZoneInfo("Europe/Brussels")
LAYERS = ("works", "detours", "stops", "no2", "stations")  # the snapshot layers a dossier reads
NOT_CARRIED_OUT = "Niet uitgevoerd"
RUNNING = "In uitvoering"
FORMAT = "urban-conditions-dossier/1"
#: a zip entry's fixed time: the same dossier gives the same bytes
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class Period:
    """Whole Europe/Brussels days ``first``–``last`` (inclusive) as ``[start_ms, end_ms)``; a period that ends
    today ends at the start of the current hour."""

    first: date
    last: date
    start_ms: int
    end_ms: int
    radius_km: float


def _midnight_ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=LOCAL).timestamp() * 1000)


def _day(name: str, raw: str | None) -> date:
    if not (raw or "").strip():
        which = "first" if name == "from" else "last"
        raise InvalidWindow(f"{name} is missing: give the {which} day of the period, like 2026-11-01")
    try:
        if raw is None or len(raw.strip()) != 10:
            raise ValueError
        return date.fromisoformat(raw.strip())
    except ValueError:
        raise InvalidWindow(f"{name}={echo(raw or '')} is not a day like 2026-11-01") from None


def local_day(now: datetime) -> date:
    """Today in Brussels."""
    return now.astimezone(LOCAL).date()


def history_days(plan: str) -> int:
    """How many days back a dossier of ``plan`` may reach."""
    return int(current_app.config.get("HISTORY_DAYS", 365)) if plan == "enterprise" else PRO_DAYS


def default_period(now: datetime) -> dict:
    """The form's defaults: the last 30 whole days up to yesterday, the API's 2 km."""
    today = local_day(now)
    return {
        "from": (today - timedelta(days=DEFAULT_DAYS)).isoformat(),
        "to": (today - timedelta(days=1)).isoformat(),
        "radius": f"{RADIUS_KM[2]:g}",
    }


def parse_period(args, plan: str, now: datetime) -> Period:
    """The period and radius asked (``from``, ``to``: days; ``radius``: km) for an account of ``plan``: 400
    ``invalid_window`` or ``invalid_request``, 422 ``window_out_of_range`` or ``window_too_long``."""
    first, last = _day("from", args.get("from")), _day("to", args.get("to"))
    if last < first:
        raise InvalidWindow(f"to={last} is before from={first}")
    today = local_day(now)
    if last > today:
        raise WindowOutOfRange(f"to={last} is after today ({today}): a dossier covers days that have begun")
    days = history_days(plan)
    if first < today - timedelta(days=days):
        reach = (
            "the Enterprise plan's history"
            if plan == "enterprise"
            else "a Pro dossier (Enterprise: 365 days)"
        )
        raise WindowOutOfRange(f"from={first} lies more than {days} days back, the reach of {reach}")
    if (last - first).days + 1 > MAX_WINDOW_DAYS:
        raise WindowTooLong(f"{first} – {last} is longer than {MAX_WINDOW_DAYS} days; make two dossiers")
    raw = (args.get("radius") or f"{RADIUS_KM[2]:g}").strip()
    try:
        radius = float(raw)
    except ValueError:
        radius = float("nan")
    if not RADIUS_KM[0] <= radius <= RADIUS_KM[1]:
        raise InvalidRequest(
            f"radius={echo(raw)} must be a number of km from {RADIUS_KM[0]:g} to {RADIUS_KM[1]:g}"
        )
    hour = int(now.timestamp() * 1000) // 3_600_000 * 3_600_000
    end = min(_midnight_ms(last + timedelta(days=1)), hour)
    if end <= _midnight_ms(first):
        raise WindowOutOfRange(f"the period {first} – {last} has no whole hour yet; choose an earlier day")
    return Period(first, last, _midnight_ms(first), end, radius)


# --- what the store knows ------------------------------------------------------------------------------
def _local_days(start_ms: int, end_ms: int) -> set[date]:
    """The Brussels days that ``[start_ms, end_ms)`` touches."""
    if end_ms <= start_ms:
        return set()
    first = datetime.fromtimestamp(start_ms / 1000, LOCAL).date()
    last = datetime.fromtimestamp((end_ms - 1) / 1000, LOCAL).date()
    return {first + timedelta(days=i) for i in range((last - first).days + 1)}


def work_days(work: query.WorkHistory, period: Period, as_of: dict[int, int], newest_end: int) -> dict:
    """A work's days: ``daysInPeriod`` the period's days within its start–end as last recorded in the period
    (0 when it was ``Niet uitgevoerd``; open-ended: up to the period's end), ``daysPublishedRunning`` the
    period's days on which a snapshot served then listed it ``In uitvoering``, ``durationDays`` its whole
    start–end in days (null when open-ended)."""
    v = work.current.values
    start, end = v.get("start"), v.get("end")
    inside = set()
    if start is not None and v.get("status") != NOT_CARRIED_OUT:
        inside = _local_days(
            max(start, period.start_ms), min(end if end is not None else period.end_ms, period.end_ms)
        )
    running = set()
    for version in work.versions:
        if version.values.get("status") != RUNNING:
            continue
        shown_until = as_of.get(version.rec_to, 0) if version.rec_to is not None else newest_end
        running |= _local_days(
            max(as_of.get(version.rec_from, 0), period.start_ms), min(shown_until, period.end_ms)
        )
    duration = None if start is None or end is None else len(_local_days(start, end))
    return {"daysInPeriod": len(inside), "daysPublishedRunning": len(running), "durationDays": duration}


def no2_summary(values: list[dict]) -> dict:
    """The period's NO2 figures: hours, measured hours, mean, highest (when, where), hours above 40 µg/m³, the
    stations that were nearest (hours each). Unknown hours count as unknown, never as 0."""
    measured = [v for v in values if v["value"] is not None]
    top = max(measured, key=lambda v: (v["value"], v["timestamp"]), default=None)
    mean = round(sum(v["value"] for v in measured) / len(measured), 1) if measured else None
    stations = Counter(
        (v["stationId"], v["stationName"], v["stationDistanceKm"]) for v in values if v["stationId"]
    )
    return {
        "hours": len(values),
        "measuredHours": len(measured),
        "coveragePercent": round(100 * len(measured) / len(values), 1) if values else None,
        "mean": mean,
        "max": None
        if top is None
        else {k: top[k] for k in ("value", "timestamp", "stationId", "stationName")},
        "hoursAboveEu40": sum(v["value"] > EU_NO2 for v in measured),
        "meanAboveWho10": None if mean is None else mean > WHO_NO2,
        "meanAboveEu40": None if mean is None else mean > EU_NO2,
        "note": "WHO 10 and EU 40 µg/m³ are annual figures; a period mean is shown against them for reference",
        "stations": [
            {"id": s, "name": n, "distanceKm": km, "hours": hours}
            for (s, n, km), hours in sorted(stations.items())
        ],
    }


def sources_of(history, seqs) -> tuple[list[dict], list[dict]]:
    """``(sources, snapshots)`` of the publishes ``seqs`` served during the period: per source its credit line,
    licence, kinds, layers, the first and last retrieval and how many snapshots carried it; per snapshot its
    publish number, id and ``asOf``."""
    found: dict[str, dict] = {}
    snapshots = []
    for seq in seqs:
        manifest = history.manifest(seq)
        snapshots.append({"publish": seq, "snapshotId": manifest["snapshotId"], "asOf": manifest["asOf"]})
        for layer in LAYERS:
            entry = manifest["layers"].get(layer)
            if entry is None:
                continue
            src = found.setdefault(
                entry["source"],
                {
                    "source": entry["source"],
                    "licences": set(),
                    "kinds": set(),
                    "layers": set(),
                    "seqs": set(),
                    "t": [],
                },
            )
            src["licences"].add(entry["licence"])
            src["kinds"].add(entry["kind"])
            src["layers"].add(layer)
            src["seqs"].add(seq)
            src["t"].append(entry["retrievedAt"])
    out = []
    for name, src in sorted(found.items()):
        known = SOURCES.get(name)
        out.append(
            {
                "source": name,
                "attribution": known.attribution if known else name,
                "label": known.label if known else name,
                "licence": "; ".join(sorted(src["licences"])),
                "kinds": sorted(src["kinds"]),
                "layers": sorted(src["layers"]),
                "firstRetrievedAt": min(src["t"]),
                "lastRetrievedAt": max(src["t"]),
                "snapshots": len(src["seqs"]),
            }
        )
    return out, snapshots


def collect(history, location: dict, period: Period, upto: int | None = None) -> dict:
    """Everything a dossier shows, as JSON-ready members (the history API's serialisation), knowing the
    publishes recorded up to ``upto`` (default: the newest)."""
    upto = query.newest_seq(history) if upto is None else upto
    span = query.served(history, period.start_ms, period.end_ms, upto)
    lat, lng = location["lat"], location["lng"]
    works = query.works_near(history, lat, lng, period.start_ms, period.end_ms, period.radius_km, upto=upto)
    detours = query.detours_hitting(history, lat, lng, period.start_ms, period.end_ms, upto=upto)
    series = query.no2_series(history, lat, lng, period.start_ms, period.end_ms, upto=upto)
    as_of = {p.seq: p.as_of_ms for p in history.publishes()} if works else {}
    work_rows = [{**work_json(w), **work_days(w, period, as_of, period.end_ms)} for w in works]
    sources, snapshots = sources_of(history, span.seqs() if span else [])
    newest = history.manifest(upto) if upto else None
    values = [no2_json(v) for v in series]
    return {
        "format": FORMAT,
        "location": {k: location.get(k) for k in ("id", "name", "address", "label", "lat", "lng")},
        "period": {
            "from": period.first.isoformat(),
            "to": period.last.isoformat(),
            "timeZone": "Europe/Brussels",
            "start": iso_utc_ms(period.start_ms),
            "end": iso_utc_ms(period.end_ms),
        },
        "radiusKm": period.radius_km,
        "knowledge": None
        if newest is None
        else {"publish": upto, "snapshotId": newest["snapshotId"], "asOf": newest["asOf"]},
        "works": work_rows,
        "geometries": [w.current.values.get("geometry") for w in works],
        "detours": [detour_json(h) for h in detours],
        "no2": values,
        "no2Summary": no2_summary(values),
        "sources": sources,
        "snapshots": snapshots,
    }


# --- the bundle -------------------------------------------------------------------------------------------
DAY_COLUMNS = ("daysInPeriod", "daysPublishedRunning", "durationDays")


def works_csv(content: dict) -> str:
    """The history API's works CSV (one row per change) with the dossier's day columns after it."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow((*CSV_COLUMNS["works"], *DAY_COLUMNS))
    for work in content["works"]:
        for row in csv_rows("works", {"works": [work]}):
            writer.writerow([csv_cell(v) for v in (*row, *(work[c] for c in DAY_COLUMNS))])
    return out.getvalue()


def snapshots_csv(content: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(("publish", "snapshotId", "asOf"))
    writer.writerows((s["publish"], s["snapshotId"], s["asOf"]) for s in content["snapshots"])
    return out.getvalue()


def summary_json(content: dict) -> dict:
    """``dossier.json``: what the dossier is about and its figures (the lists are in their own files)."""
    return {
        "format": FORMAT,
        "location": content["location"],
        "period": content["period"],
        "radiusKm": content["radiusKm"],
        "knowledge": content["knowledge"],
        "counts": {
            "works": len(content["works"]),
            "changes": sum(len(w["changes"]) for w in content["works"]),
            "detours": len(content["detours"]),
            "snapshots": len(content["snapshots"]),
        },
        "no2Summary": content["no2Summary"],
        "sources": content["sources"],
        "files": {
            "works.csv": "works within the radius, one row per recorded change (GET /api/v1/history/works columns, "
            "then the day columns)",
            "works.geojson": "the same works with their extents (kind: work), and the place (kind: location)",
            "detours.csv": "detours that hit the place (GET /api/v1/history/detours columns)",
            "no2.csv": "hourly measured NO2 at the nearest station (GET /api/v1/history/air-quality columns)",
            "snapshots.csv": "the snapshots served during the period: publish number, snapshotId, asOf",
        },
    }


README = """Evidence dossier of the Urban Conditions Service
================================================

Place:   {name} ({lat}, {lng}), saved location {id}
Period:  {first} to {last} (whole days, Europe/Brussels; {start} to {end} UTC)
Radius:  {radius} km (road works); detours: those the service listed at the place
Knowledge: every snapshot recorded up to publish {publish} (asOf {as_of})

Files: dossier.json (summary, NO2 figures, sources and licences), works.csv, works.geojson, detours.csv,
no2.csv, snapshots.csv. Times are UTC (RFC 3339) unless a column says otherwise; upstream texts are as
published (Dutch). An empty NO2 value is an hour without a measurement: unknown, not zero.

How to verify
-------------
1. Integrity: every file is listed in SHA256SUMS and MANIFEST.json with its sha256 and size. In this folder:
       sha256sum -c SHA256SUMS
   must print OK for every file. The sha256 of MANIFEST.json is printed in the dossier's PDF, which ties the
   PDF to this bundle.
2. Against the service: the works, detours and NO2 files have the columns of the service's history API
   (GET /api/v1/history/works, /history/detours, /history/air-quality with locationId, from and to as in
   dossier.json; Enterprise plan). Any instant of the period can be asked as the service answered it then
   (asOf=...): snapshots.csv lists the snapshots that were served and when each began.
3. Sources: dossier.json -> sources names each upstream source, its licence and when its data was retrieved.
   The same location, period, radius and knowledge give a byte-identical bundle.
"""


def _readme(content: dict) -> str:
    loc, period, knowledge = content["location"], content["period"], content["knowledge"] or {}
    return README.format(
        name=loc["name"],
        lat=loc["lat"],
        lng=loc["lng"],
        id=loc["id"],
        first=period["from"],
        last=period["to"],
        start=period["start"],
        end=period["end"],
        radius=f"{content['radiusKm']:g}",
        publish=knowledge.get("publish", "-"),
        as_of=knowledge.get("asOf", "-"),
    )


def bundle_files(content: dict) -> dict[str, bytes]:
    """The bundle's files by name, ``SHA256SUMS`` and ``MANIFEST.json`` last."""
    body = {
        "location": {"lat": content["location"]["lat"], "lng": content["location"]["lng"]},
        "works": content["works"],
    }
    files = {
        "README.txt": _readme(content),
        "dossier.json": json.dumps(summary_json(content), ensure_ascii=False, indent=2, sort_keys=False)
        + "\n",
        "works.csv": works_csv(content),
        "works.geojson": render_geojson(body, content["geometries"]),
        "detours.csv": render_csv("detours", {"detours": content["detours"]}),
        "no2.csv": render_csv("values", {"values": content["no2"]}),
        "snapshots.csv": snapshots_csv(content),
    }
    data = {name: text.encode("utf-8") for name, text in files.items()}
    digests = {name: hashlib.sha256(raw).hexdigest() for name, raw in data.items()}
    data["SHA256SUMS"] = "".join(f"{digests[n]}  {n}\n" for n in data).encode()
    manifest = {
        "format": FORMAT,
        "algorithm": "sha256",
        "files": [{"name": n, "sha256": digests[n], "bytes": len(data[n])} for n in files],
    }
    data["MANIFEST.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    return data


def zip_bytes(files: dict[str, bytes], folder: str) -> bytes:
    """A deterministic zip of ``files`` in ``folder/`` (fixed times and modes)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(f"{folder}/{name}", date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return out.getvalue()


def folder_name(location: dict, period: Period) -> str:
    return f"dossier-{location['id']}-{period.first.isoformat()}-{period.last.isoformat()}"


def build(content: dict, location: dict, period: Period) -> tuple[bytes, bytes]:
    """``(pdf, zip)`` of one dossier's content (:func:`collect`)."""
    files = bundle_files(content)
    manifest_sha = hashlib.sha256(files["MANIFEST.json"]).hexdigest()
    html = render_template(
        "dashboard/dossier.html",
        d=content,
        counts=summary_json(content)["counts"],
        manifest_sha=manifest_sha,
        folder=folder_name(location, period),
        who=WHO_NO2,
        eu=EU_NO2,
    )
    return html_to_pdf(html), zip_bytes(files, folder_name(location, period))


def _cache() -> ReportCache:
    return built_cache("dossiers")


def dossier(account_id: int, location: dict, period: Period, kind: str) -> bytes:
    """The dossier's ``kind`` (``pdf`` or ``zip``): from the cache, or built (both at once) when the account's
    dossier window and one of the host's build slots allow it (429 / 503 otherwise)."""
    scope = limits.DOSSIER_SCOPE
    now = wall_now()
    with reading("dossier") as history:
        upto = query.newest_seq(history)
    key = (account_id, tuple(sorted((k, repr(v)) for k, v in location.items())), period, upto)
    kept = _cache().get((key, kind), now)
    if kept is not None:
        g.rate = limits.report_window(account_id, hit=False, scope=scope)
        return kept
    limits.admit_report_build(account_id, hit=False, scope=scope)
    with limits.build_slot():
        limits.admit_report_build(account_id, hit=True, scope=scope)
        with reading("dossier") as history:  # a store error is 503 history_unavailable; rendering's are not
            content = collect(history, location, period, upto)
        pdf, bundle = build(content, location, period)
    _cache().put((key, "pdf"), now, pdf)
    _cache().put((key, "zip"), now, bundle)
    return pdf if kind == "pdf" else bundle
