"""A local stand-in for the internet: GIPOD, De Lijn Kern, IRCEL SOS, the Antwerp LEZ layer and a regional
boundary WFS (GeoJSON output of the three Belgian regions) on 127.0.0.1.

It speaks each upstream's real format (``../shared/data/UPSTREAM_FORMATS.md`` and the De Lijn OpenAPI file),
counts hits per path, and injects faults on request: an HTTP status (optionally with ``Retry-After``), a slow
answer, malformed JSON, a truncated body, an oversized body, valid JSON of the wrong shape, a dropped connection.

Run it by hand with ``python -m tests.sources.fakeupstream --port 8765 --env-file fake.env`` (prints the
``URBAN_*`` settings, and writes them to ``fake.env`` for ``. fake.env``).
"""

from __future__ import annotations

import collections
import json
import math
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

GIPOD_BASE = "/gipod/ogc/features/v1"
GIPOD_WORKS = GIPOD_BASE + "/collections/INNAME/items"  # the works (a fault here spares the hindrances)
DELIJN_BASE = "/delijn/DLKernOpenData/api/v1"
IRCEL_BASE = "/ircel/sos/api/v1"
LEZ_BASE = "/lez/arcgissql/rest/services/P_Portal/portal_publiek4/MapServer/283"
BOUNDARY_BASE = "/boundary/wfs"
BOUNDARY_QUERY = (
    "service=WFS&version=2.0.0&request=GetFeature&typeNames=AU:AdministrativeUnit_Region"
    "&outputFormat=application/json&srsName=EPSG:4326"
)
DELIJN_KEY = "fake-delijn-key"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@dataclass
class Fault:
    """One injected misbehaviour.

    kind: ``status`` (``status``, optional ``retry_after``), ``slow`` (``delay`` s before answering),
    ``malformed``, ``truncated``, ``oversized`` (``size`` bytes, ``declared`` = send Content-Length),
    ``wrongshape``, ``drop`` (close without answering), ``body`` (200 with ``payload`` as JSON).
    """

    kind: str
    status: int = 500
    retry_after: str | None = None
    delay: float = 0.0
    size: int = 0
    declared: bool = False
    payload: object = None


# --------------------------------------------------------------------------------------------- scenario
def _dt(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _occurrence_id(gid: int, start: datetime, collection: str = "INNAME") -> str:
    """GIPOD's feature id of one record: ``INNAME.<GipodId>-<yyMMddHHmm>`` (UTC start)."""
    return f"{collection}.{gid}-{start.astimezone(timezone.utc).strftime('%y%m%d%H%M')}"


def _box(lon: float, lat: float, dlon: float, dlat: float) -> dict:
    """A GeoJSON Polygon: the box of half-sides ``dlon`` x ``dlat`` around (lon, lat), counterclockwise."""
    x0, x1, y0, y1 = (round(v, 7) for v in (lon - dlon, lon + dlon, lat - dlat, lat + dlat))
    return {"type": "Polygon", "coordinates": [[[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]]}


#: hindrance consequences as GIPOD publishes them (upstream-samples/README.md)
CONSEQUENCES = (
    "Geen doorgang voor gemotoriseerd verkeer",
    "Beperkte doorgang voor voetgangers",
    "Versmalde rijstroken",
)


#: internal lijnnummer -> (lijnnummerPubliek, vervoerRegioCode, omschrijving, vervoertype, vervoerslaag) of the
#: fake's entity-1 lines; as in the real list (``upstream-samples/delijn/lines_by_entity.json``) the internal
#: number may differ (908 -> 8) and public numbers repeat: bus 40 is public "12" like tram 12 (the real bus 40
#: is public "2" like tram 2)
LINES = {
    "907": ("7", "AN", "Sportpaleis - Mortsel", "TRAM", "Kernnet"),
    "12": ("12", "AN", "Sportpaleis - Bist", "TRAM", "Kernnet"),
    "30": ("30", "AN", "Luchtbal - Zuid", "BUS", "Aanvullend net"),
    "40": ("12", "AN", "Hoboken Lelieplaats - Zwaantjes", "BUS", "Aanvullend net"),
}
#: the stop served by bus 40 (public "12") instead of tram 12
BUS_40_STOP = "101011"
#: a detour of another entity (made here, on the real sample's line and stop numbers) and its line
OTHER_LINES = {"3": {"620": ("620", "VR", "Meer - Hoogstraten - Antwerpen", "BUS", "")}}
#: an entity-1 line that the line list lacks (it ended before today) but ``/lijnen/1/699`` still answers, and
#: one that no call knows (``/lijnen/1/698`` answers 404): both named by the detour 30611
ENDED_LINES = {"699": ("29", "AN", "Centraal Station - Berchem", "BUS", "Aanvullend net", "2026-11-15")}
UNKNOWN_LINE = "698"
OTHER_STOP = {
    "entiteitnummer": "3",
    "haltenummer": "308530",
    "omschrijving": "Aristide Briand",
    "omschrijvingLang": "Anderlecht Aristide Briand",
    "gemeentenummer": 21001,
    "omschrijvingGemeente": "Anderlecht",
    "geoCoordinaat": {"latitude": 50.8346, "longitude": 4.2984},
    "halteToegankelijkheden": [],
    "hoofdHalte": None,
    "taal": "?",
    "links": [],
}


def build_scenario(now: datetime) -> dict:
    """Deterministic upstream data around Antwerp, in each upstream's own shapes (the real samples win)."""
    works, hindrances = [], []
    # the four work statuses GIPOD publishes; the server's filter leaves out the two ended ones
    statuses = ["In uitvoering", "Concreet gepland", "In uitvoering", "Concreet gepland", "Uitgevoerd"]
    for i in range(25):
        lon = 4.38 + 0.004 * (i % 5) + 0.0005 * i
        lat = 51.20 + 0.003 * (i // 5)
        start = now - timedelta(days=30) + timedelta(days=3 * i)
        end = None if i % 7 == 3 else start + timedelta(days=400 + 10 * i)
        gid = 1143400 + i
        kind = "Evenement" if i == 24 else ("Werk" if i % 4 == 0 else "Grondwerk")
        status = "Niet uitgevoerd" if i % 10 == 9 else statuses[i % 5]
        # the extent: a street stretch of 70 x 14 m, and for work 7 a road 3.3 km long running north
        extent = _box(lon, lat, 0.0005, 0.00006) if i != 7 else _box(lon, lat + 0.015, 0.0001, 0.015)
        if i % 3 == 0 and kind != "Evenement":  # a validated hindrance (work 6: two zones)
            for z in range(2 if i == 6 else 1):
                hindrances.append(
                    {
                        "type": "Feature",
                        "id": f"HINDER_PUNT.{1200400 + 10 * i + z}",
                        "geometry": {"type": "Point", "coordinates": [round(lon, 6), round(lat, 6)]},
                        "properties": {
                            "GipodId": gid,
                            "ZoneId": 5500 + 10 * i + z,
                            "ZoneType": "Hinderzone",
                            "SevereHindrance": i % 6 == 0 and z == 0,
                            "Consequences": ";".join(CONSEQUENCES[: 1 + (i + z) % 3]),
                            "HindranceGipodId": 1200400 + 10 * i + z,
                            "HindranceStatus": "Gevalideerd",
                            "HindranceDescription": f"Hinder {gid}",
                        },
                    }
                )
        # as GIPOD does: a work with several occurrences is one feature per occurrence (same id and place)
        n_occ = 3 if i % 6 == 1 else 1
        for k in range(n_occ):
            o_start = start + timedelta(days=7 * k) if n_occ > 1 else start
            o_end = (o_start + timedelta(hours=9)) if n_occ > 1 else end
            works.append(
                {
                    "type": "Feature",
                    "id": _occurrence_id(gid, o_start),
                    "geometry": extent,
                    "properties": {
                        "GipodId": gid,
                        "Uri": f"https://gipod.api.vlaanderen.be/api/v1/public-domain-occupancies/{gid}",
                        "Description": [
                            "Heraanleg riolering",
                            "Vernieuwing gasleiding",
                            "Aanleg fietspad",
                            "Proefwerk riolering",
                            "Herstelling voetpad",
                        ][i % 5],
                        "Reference": f"REF-{gid}",
                        "Type": kind,
                        "PublicDomainOccupancyTypes": "Grondwerk;Signalisatie"
                        if kind != "Evenement"
                        else "Markt",
                        "Status": status if kind != "Evenement" else "Lopende",
                        "Start": _dt(o_start),
                        "End": _dt(o_end) if o_end else None,
                        "Owner": ["water-link", "Fluvius", "Stad Antwerpen"][i % 3],
                        "ContactOrganisations": None,
                    },
                }
            )
    # one work far away (Gent) so bbox filtering shows
    works.append(
        {
            "type": "Feature",
            "id": _occurrence_id(1199999, now - timedelta(days=5)),
            "geometry": _box(3.7250, 51.0540, 0.0004, 0.0001),
            "properties": {
                "GipodId": 1199999,
                "Description": "Heraanleg Korenmarkt",
                "Type": "Grondwerk",
                "Status": "In uitvoering",
                "Start": _dt(now - timedelta(days=5)),
                "End": None,
                "Owner": "Stad Gent",
                "Uri": "https://gipod.api.vlaanderen.be/x/1199999",
            },
        }
    )

    stops = []
    for i in range(12):
        lat = 51.205 + 0.002 * i
        lon = 4.40 + 0.0015 * (i % 4)
        coord = f"{lat},{lon}" if i % 2 == 0 else {"latitude": lat, "longitude": lon}
        stops.append(
            {
                "entiteitnummer": "1",
                "haltenummer": str(101000 + i),
                "omschrijving": f"Halte {i} Antwerpen",
                "omschrijvingLang": f"Antwerpen Halte {i}",
                "gemeentenummer": 1,
                "omschrijvingGemeente": "Antwerpen",
                "geoCoordinaat": coord,
                "halteToegankelijkheden": ["VISUELE_BEPERKING"],
                "hoofdHalte": None,
                "taal": "?",
                "links": [{"rel": "detail", "url": f"https://api.delijn.be/x/haltes/1/{101000 + i}"}],
            }
        )
    serving = {
        s["haltenummer"]: [n for j, n in enumerate(("907", "12", "30")) if (idx + j) % 2 == 0]
        for idx, s in enumerate(stops)
    }
    serving[BUS_40_STOP] = ["40" if n == "12" else n for n in serving[BUS_40_STOP]]

    def lijnrichting(internal: str, entity: str = "1", richting: str = "HEEN") -> dict:
        # as the real service: the internal lijnnummer only, no public number, no colours
        name = (
            ({**LINES, **ENDED_LINES} if entity == "1" else OTHER_LINES[entity]).get(internal)
            or ("", "", "?")
        )[2]
        return {
            "entiteitnummer": entity,
            "lijnnummer": internal,
            "richting": richting,
            "omschrijving": name,
            "links": [
                {
                    "rel": "lijnrichting",
                    "url": "https://api.delijn.be/DLKernOpenData/api/v1/lijnen/"
                    f"{entity}/{internal}/lijnrichtingen/{richting}",
                }
            ],
        }

    def halte_ref(entity: str, number: str) -> dict:
        # as the real detour stops: entity and number only, no coordinates, no name
        return {
            "entiteitnummer": entity,
            "haltenummer": number,
            "halteToegankelijkheden": [],
            "hoofdHalte": None,
            "links": [
                {
                    "rel": "halte",
                    "url": f"https://api.delijn.be/DLKernOpenData/api/v1/haltes/{entity}/{number}",
                }
            ],
        }

    local = lambda t: t.astimezone(timezone(timedelta(hours=1))).strftime("%Y-%m-%dT%H:%M:%S")  # noqa: E731
    detours = [
        {
            "titel": "Antwerpen: Werken Brabo 2 Fr. Rooseveltplaats Werken",
            "omschrijving": "Periode : ... Niet-bediende haltes : Halte 1 ... vervanghaltes: ...",
            "periode": {
                "startDatum": local(now - timedelta(days=3)),
                "eindDatum": local(now + timedelta(days=40)),
            },
            "lijnrichtingen": [lijnrichting("12")],
            "haltes": [halte_ref("1", "101001"), halte_ref("1", "101003")],
            "referentieOmleiding": 30506,
            "type": "werken",
            "omleidingsDagen": ["MAANDAG", "DINSDAG"],
            "links": [
                {"rel": "omleidingen", "url": "https://api.delijn.be/DLKernOpenData/api/v1/omleidingen/30506"}
            ],
        },
        {
            "titel": "Antwerpen: Evenement Meir",
            "omschrijving": "Omleiding wegens evenement.",
            "periode": {"startDatum": local(now - timedelta(hours=2))},  # eindDatum absent: open-ended
            "lijnrichtingen": [
                lijnrichting("907"),
                lijnrichting("30", richting="TERUG"),
                lijnrichting("699"),
                lijnrichting(UNKNOWN_LINE),
            ],
            "haltes": [],
            "referentieOmleiding": 30611,
            "type": "EVENEMENT",
            "omleidingsDagen": [],
            "links": [],
        },
        {
            "titel": "Werken thv de halte Aristide Briand",
            "omschrijving": "Niet-bediende halte: Aristide Briand",
            "periode": {"startDatum": local(now - timedelta(days=30))},
            "lijnrichtingen": [lijnrichting("620", "3", "TERUG")],
            "haltes": [halte_ref("3", "308530")],
            "referentieOmleiding": 873876,
            "omleidingsDagen": [
                "MAANDAG",
                "DINSDAG",
                "WOENSDAG",
                "DONDERDAG",
                "VRIJDAG",
                "ZATERDAG",
                "ZONDAG",
            ],
            "links": [],
        },
    ]

    stations = _stations()
    series = {}
    procedures = ["Unknown device", "", "THIS 42C", "DAILY CORRECTION TEOM"]  # labels the real service sends
    for k, st in enumerate(stations):
        ts_id = str(6500 + k)
        series[ts_id] = {"station": st, "values": _hourly(now, k), "procedure": procedures[k % 4]}
    lez = _lez()
    return {
        "now": now,
        "works": works,
        "hindrances": hindrances,
        "stops": stops,
        "lines": LINES,
        "serving": serving,
        "lijnrichting": lijnrichting,
        "detours": detours,
        "series": series,
        "lez": lez,
        "boundary": _regions(),
    }


def listed_works(works: list) -> set:
    """The GipodIds a works request with our CQL2 filter returns (works only, in the listed statuses)."""
    from geo.data.upstream_gipod import REQUESTED_STATUSES, WORK_TYPES

    return {
        str(f["properties"]["GipodId"])
        for f in works
        if f["properties"]["Type"] in WORK_TYPES and f["properties"]["Status"] in REQUESTED_STATUSES
    }


def single_works(fake) -> list:
    """Features of the fake's works published as one occurrence (events excluded), in order."""
    count: dict = collections.Counter(f["properties"]["GipodId"] for f in fake.data["works"])
    return [
        f
        for f in fake.data["works"]
        if f["properties"]["Type"] != "Evenement" and count[f["properties"]["GipodId"]] == 1
    ]


def _positions(geometry: dict) -> list:
    """Every [lon, lat] of a GeoJSON geometry (Point to MultiPolygon)."""
    coords = geometry["coordinates"]
    if not isinstance(coords[0], list):
        return [coords]
    while isinstance(coords[0][0], list):
        coords = [c for part in coords for c in part]
    return coords


def _meets(geometry: dict, x0: float, y0: float, x1: float, y1: float) -> bool:
    xy = _positions(geometry)
    return (
        min(p[0] for p in xy) <= x1
        and max(p[0] for p in xy) >= x0
        and min(p[1] for p in xy) <= y1
        and (max(p[1] for p in xy) >= y0)
    )


def _punt(feature: dict) -> dict:
    """The ``INNAME_PUNT`` form of an ``INNAME`` record: the centre of its polygon as a point."""
    xy = _positions(feature["geometry"])
    lon = (min(p[0] for p in xy) + max(p[0] for p in xy)) / 2
    lat = (min(p[1] for p in xy) + max(p[1] for p in xy)) / 2
    return {
        **feature,
        "id": feature["id"].replace("INNAME.", "INNAME_PUNT.", 1),
        "geometry": {"type": "Point", "coordinates": [round(lon, 7), round(lat, 7)]},
    }


def _cql2_match(expr: str, props: dict) -> bool:
    """The CQL2-text subset the consumers of GIPOD were seen sending: ``A = 'x'`` and ``A IN ('x','y')``
    joined by AND (no ``<>``)."""
    for part in re.split(r"\s+AND\s+", expr.strip()):
        if m := re.fullmatch(r"(\w+)\s*=\s*'((?:[^']|'')*)'", part.strip()):
            if str(props.get(m.group(1))) != m.group(2).replace("''", "'"):
                return False
        elif m := re.fullmatch(r"(\w+)\s+IN\s*\((.*)\)", part.strip()):
            values = [v.replace("''", "'") for v in re.findall(r"'((?:[^']|'')*)'", m.group(2))]
            if str(props.get(m.group(1))) not in values:
                return False
        else:
            raise ValueError(f"unsupported CQL2 expression {part!r}")
    return True


def _stations() -> list[dict]:
    """NO2 stations around Antwerp from the shared station list (CC BY 4.0), else two fixed ones."""
    path = SHARED / "air" / "irceline_stations.csv"
    out = []
    if path.exists():
        import csv

        with path.open(encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                lon, lat = float(row["lon"]), float(row["lat"])
                if row.get("no2_2015") in ("1", "True", "true") and 4.2 < lon < 4.6 and 51.1 < lat < 51.35:
                    out.append({"id": 1000 + len(out), "label": row["label"], "lon": lon, "lat": lat})
    if not out:
        out = [
            {"id": 1112, "label": "42R801 - Borgerhout", "lon": 4.431821, "lat": 51.209663},
            {"id": 1030, "label": "40AL01 - Linkeroever", "lon": 4.385224, "lat": 51.236194},
        ]
    return out


def _hourly(now: datetime, k: int) -> list[dict]:
    end = now.replace(minute=0, second=0, microsecond=0)
    values = []
    for h in range(48, -1, -1):
        t = end - timedelta(hours=h)
        v = None if (h + k) % 11 == 5 else round(20 + 10 * math.sin((h + 3 * k) / 5.0), 1)
        values.append({"timestamp": int(t.timestamp() * 1000), "value": v})
    return values


def _lez() -> dict:
    path = SHARED / "lez" / "antwerp_lez_official_simplified.geojson"
    if path.exists():
        src = json.loads(path.read_text(encoding="utf-8"))
        geom = src["features"][0]["geometry"]
    else:
        geom = {
            "type": "MultiPolygon",
            "coordinates": [[[[4.38, 51.19], [4.44, 51.19], [4.44, 51.24], [4.38, 51.24], [4.38, 51.19]]]],
        }
    return {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "id": 1,
                "geometry": geom,
                "properties": {"OBJECTID": 1, "NAAM": "LEZ Antwerpen", "Shape__Area": 0},
            }
        ],
    }


def _regions() -> dict:
    """WFS GeoJSON output of the Belgian regions, built from the reference file ``be_regions.geojson``
    (Flanders, Brussels, Wallonia; properties as an INSPIRE administrative-unit answer would carry them)."""
    path = SHARED / "boundaries" / "be_regions.geojson"
    src = json.loads(path.read_text(encoding="utf-8"))
    feats = [
        {
            "type": "Feature",
            "id": f"AdministrativeUnit_Region.{f['properties']['nis']}",
            "geometry": f["geometry"],
            "properties": {
                "nationalCode": f["properties"]["nis"],
                "iso_3166_2": f["properties"]["iso_3166_2"],
                "name_nl": f["properties"]["name_nl"],
                "name_fr": f["properties"]["name_fr"],
            },
        }
        for f in src["features"]
    ]
    return {
        "type": "FeatureCollection",
        "numberMatched": len(feats),
        "numberReturned": len(feats),
        "features": feats,
    }


def openapi_examples(path: Path = SHARED / "transit" / "delijn_kern_opendata_v1.openapi.json") -> list:
    """(path regex, example payload) for every GET of the De Lijn OpenAPI file that publishes a 200 example."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for template, ops in spec["paths"].items():
        for content in (ops.get("get", {}).get("responses", {}).get("200", {}).get("content") or {}).values():
            if "example" in content:
                regex = re.compile(re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template)) + "$")
                out.append((regex, content["example"]))
                break
    return out


def ircel_samples(path: Path = SHARED / "UPSTREAM_FORMATS.md") -> dict:
    """The IRCEL SOS JSON samples of UPSTREAM_FORMATS.md section 3a: stations, timeseries and getData."""
    text = path.read_text(encoding="utf-8")
    section = text[text.index("## 3. IRCEL") :]
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", section, re.S)]
    return {
        "stations": next(b for b in blocks if isinstance(b, list) and "properties" in b[0]),
        "timeseries": next(b for b in blocks if isinstance(b, list) and "uom" in b[0]),
        "getData": next(b for b in blocks if isinstance(b, dict) and "values" in b),
    }


# --------------------------------------------------------------------------------------------- server
class FakeUpstream:
    """The fake upstream server. ``with FakeUpstream() as fake: fake.settings()`` gives the ``URBAN_*`` URLs."""

    def __init__(self, now: datetime | None = None, port: int = 0, examples: bool = False):
        self.now = now or datetime(2026, 11, 16, 7, 0, tzinfo=timezone.utc)
        self.data = build_scenario(self.now)
        # examples=True: De Lijn answers with the OpenAPI file's examples, IRCEL with the documented samples
        self.examples = (openapi_examples(), ircel_samples()) if examples else None
        self.hits: collections.Counter = collections.Counter()
        self.requests: list[tuple[str, dict, dict]] = []
        self.posted: list[tuple[str, object]] = []  # (path, JSON body) of every POST
        self._faults: list[list] = []  # [prefix, Fault, remaining or None]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self
        self._thread: threading.Thread | None = None

    # lifecycle
    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> "FakeUpstream":
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def settings(self) -> dict[str, str]:
        """``URBAN_*`` settings pointing every source at this server."""
        return {
            "URBAN_GIPOD_URL": self.base + GIPOD_BASE,
            "URBAN_DELIJN_URL": self.base + DELIJN_BASE,
            "URBAN_DELIJN_KEY": DELIJN_KEY,
            "URBAN_IRCEL_URL": self.base + IRCEL_BASE,
            "URBAN_LEZ_URL": self.base + LEZ_BASE,
            "URBAN_BOUNDARY_URL": f"{self.base}{BOUNDARY_BASE}?{BOUNDARY_QUERY}",
        }

    # faults
    def inject(self, prefix: str, fault: Fault, times: int | None = 1) -> None:
        """Apply ``fault`` to the next ``times`` requests whose path starts with ``prefix`` (None: until cleared)."""
        with self._lock:
            self._faults.append([prefix, fault, times])

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for entry in self._faults:
                prefix, fault, left = entry
                if path.startswith(prefix):
                    if left is not None:
                        entry[2] -= 1
                        if entry[2] <= 0:
                            self._faults.remove(entry)
                    return fault
        return None

    def hits_under(self, prefix: str) -> int:
        return sum(n for p, n in self.hits.items() if p.startswith(prefix))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out as two writes: without TCP_NODELAY, Nagle holds the body back until the
    # client's delayed ACK (~40 ms) on every answer of a kept-alive connection
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet
        pass

    @property
    def fake(self) -> FakeUpstream:
        return self.server.fake

    def do_GET(self):  # noqa: N802
        self._answer(None)

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            sent = json.loads(raw) if raw else {}
        except ValueError:
            sent = None
        self._answer(sent)

    def _answer(self, sent):
        """Count, record, apply a fault or route; ``sent`` is a POST's parsed JSON body (None for a GET)."""
        parts = urlsplit(self.path)
        path, query = parts.path, {k: v[-1] for k, v in parse_qs(parts.query).items()}
        fake = self.fake
        with fake._lock:
            fake.hits[path] += 1
            fake.requests.append((path, query, dict(self.headers)))
            if sent is not None:
                fake.posted.append((path, sent))
        fault = fake._take_fault(path)
        if fault is not None and self._apply(fault):
            return
        try:
            if sent is None and self.command == "POST":
                status, body, ctype = 400, {"userMessage": "body is not JSON"}, "application/json"
            else:
                status, body, ctype = self._route(path, query, sent)
        except Exception as exc:  # noqa: BLE001 - a fake: report as the upstream would
            status, body, ctype = 500, {"error": str(exc)}, "application/json"
        self._send(status, json.dumps(body, ensure_ascii=False).encode(), ctype)

    # faults
    def _apply(self, fault: Fault) -> bool:
        if fault.kind == "status":
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            self._send(
                fault.status,
                json.dumps({"statusCode": fault.status, "message": "injected"}).encode(),
                "application/json",
                extra,
            )
            return True
        if fault.kind == "slow":
            self.fake._stop.wait(fault.delay)
            return False  # then answer normally
        if fault.kind == "malformed":
            self._send(
                200,
                b'{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": ',
                "application/json",
            )
            return True
        if fault.kind == "body":
            self._send(200, json.dumps(fault.payload).encode(), "application/json")
            return True
        if fault.kind == "wrongshape":
            self._send(200, b'{"message": "onverwacht antwoord", "items": 3}', "application/json")
            return True
        if fault.kind == "truncated":
            body = json.dumps({"type": "FeatureCollection", "features": [], "padding": "x" * 4000}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return True
        if fault.kind == "oversized":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if fault.declared:
                self.send_header("Content-Length", str(fault.size))
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b" " * 65536
            sent = 0
            try:
                while sent < fault.size and not self.fake._stop.is_set():
                    n = min(len(chunk), fault.size - sent)
                    self.wfile.write(chunk[:n])
                    sent += n
            except OSError:
                pass  # the client aborted the read: that is the point
            self.close_connection = True
            return True
        if fault.kind == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass
            return True
        raise ValueError(f"unknown fault {fault.kind}")

    def _send(self, status: int, body: bytes, ctype: str, extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    # routes
    def _route(self, path: str, q: dict, sent=None):
        d = self.fake.data
        if sent is not None and not path.startswith(IRCEL_BASE):
            return 405, {"error": "method not allowed"}, "application/json"
        if path.startswith(GIPOD_BASE):
            return self._gipod(path[len(GIPOD_BASE) :], q, d)
        if path.startswith(DELIJN_BASE):
            if (
                self.headers.get("Ocp-Apim-Subscription-Key") != DELIJN_KEY
                and q.get("subscription-key") != DELIJN_KEY
            ):
                return (
                    401,
                    {
                        "statusCode": 401,
                        "message": "Access denied due to missing subscription key. "
                        "Make sure to include subscription key when making requests to an API.",
                    },
                    "application/json",
                )
            if self.fake.examples:
                sub = path[len(DELIJN_BASE) :]
                for regex, example in self.fake.examples[0]:
                    if regex.match(sub):
                        return 200, example, "application/json"
                return 404, {"statusCode": 404, "message": "Resource not found"}, "application/json"
            return self._delijn(path[len(DELIJN_BASE) :], q, d)
        if path.startswith(IRCEL_BASE):
            if self.fake.examples:
                sub, samples = path[len(IRCEL_BASE) :], self.fake.examples[1]
                if sub == "/timeseries/getData" and sent is not None:
                    return (
                        200,
                        {i: samples["getData"] for i in sent.get("timeseries", [])},
                        "application/json",
                    )
                key = {"/stations": "stations", "/timeseries": "timeseries"}.get(
                    sub, "getData" if sub.endswith("/getData") else None
                )
                return (200, samples[key], "application/json") if key else (404, {}, "application/json")
            return self._ircel(path[len(IRCEL_BASE) :], q, d, sent)
        if path.startswith(LEZ_BASE):
            if path[len(LEZ_BASE) :] == "/query" and q.get("f") == "geojson":
                return 200, d["lez"], "application/geo+json"
            return (
                400,
                {"error": {"code": 400, "message": "Invalid or missing input parameters."}},
                "application/json",
            )
        if path == BOUNDARY_BASE:
            if q.get("request") == "GetFeature" and q.get("outputFormat") == "application/json":
                return 200, d["boundary"], "application/json"
            return (
                400,
                {"exceptions": [{"code": "InvalidParameterValue", "text": "bad request"}]},
                "application/json",
            )
        return 404, {"error": "not found"}, "application/json"

    def _gipod(self, sub: str, q: dict, d: dict):
        m = re.fullmatch(r"/collections/([A-Z_]+)/items", sub)
        if not m:
            return 404, {"code": "NotFound", "description": sub}, "application/json"
        collection = m.group(1)
        feats = {"INNAME": d["works"], "INNAME_PUNT": [_punt(f) for f in d["works"]]}.get(
            collection, d["hindrances"] if collection == "HINDER_PUNT" else []
        )
        if "filter" in q:
            if q.get("filter-lang") != "cql2-text":
                return (
                    400,
                    {"code": "InvalidParameterValue", "description": "filter-lang"},
                    "application/json",
                )
            try:
                feats = [f for f in feats if _cql2_match(q["filter"], f["properties"])]
            except ValueError as exc:
                return 400, {"code": "InvalidParameterValue", "description": str(exc)}, "application/json"
        if "bbox" in q:  # features whose geometry's bounding box meets the bbox
            x0, y0, x1, y1 = (float(v) for v in q["bbox"].split(","))
            feats = [f for f in feats if _meets(f["geometry"], x0, y0, x1, y1)]
        limit, offset = int(q.get("limit", 10)), int(q.get("offset", 0))
        page = feats[offset : offset + limit]
        self_url = f"{self.fake.base}{GIPOD_BASE}{sub}"
        keep = {k: v for k, v in q.items() if k not in ("offset",)}
        links = [{"href": f"{self_url}?{_qs(q)}", "rel": "self", "type": "application/geo+json"}]
        if offset + limit < len(feats):
            links.append(
                {
                    "href": f"{self_url}?{_qs({**keep, 'offset': offset + limit})}",
                    "rel": "next",
                    "type": "application/geo+json",
                    "title": "Next page",
                }
            )
        return (
            200,
            {
                "type": "FeatureCollection",
                "features": page,
                "links": links,
                "numberMatched": len(feats),
                "numberReturned": len(page),
                "timeStamp": _dt(self.fake.now),
            },
            "application/geo+json",
        )

    def _delijn(self, sub: str, q: dict, d: dict):
        if m := re.fullmatch(r"/entiteiten/(\d+)/haltes", sub):
            stops = [s for s in d["stops"] if s["entiteitnummer"] == m.group(1)]
            return 200, {"haltes": stops, "links": []}, "application/json"
        if m := re.fullmatch(r"/haltes/(\d+)/(\d+)/lijnrichtingen", sub):
            lines = d["serving"].get(m.group(2))
            if lines is None:
                return 404, {"statusCode": 404, "message": "halte niet gevonden"}, "application/json"
            return (
                200,
                {"lijnrichtingen": [d["lijnrichting"](n) for n in lines], "links": []},
                "application/json;charset=UTF-8",
            )
        if m := re.fullmatch(r"/haltes/(\d+)/(\d+)", sub):
            known = [
                s for s in d["stops"] + [OTHER_STOP] if (s["entiteitnummer"], s["haltenummer"]) == m.groups()
            ]
            if not known:
                return 404, {"statusCode": 404, "message": "halte niet gevonden"}, "application/json"
            return 200, known[0], "application/json;charset=UTF-8"
        if m := re.fullmatch(r"/entiteiten/(\d+)/lijnen", sub):
            book = d["lines"] if m.group(1) == "1" else OTHER_LINES.get(m.group(1), {})
            lijnen = [_lijn(m.group(1), n, *row) for n, row in book.items()]
            return 200, {"lijnen": lijnen, "links": []}, "application/json"
        if m := re.fullmatch(r"/lijnen/(\d+)/(\d+)", sub):
            e, n = m.groups()
            row = (d["lines"] if e == "1" else OTHER_LINES.get(e, {})).get(n)
            if row is None and e == "1" and n in ENDED_LINES:
                row = ENDED_LINES[n]
            if row is None:
                return 404, {"statusCode": 404, "message": "lijn is niet gevonden"}, "application/json"
            return 200, _lijn(e, n, *row), "application/json;charset=UTF-8"
        if sub == "/vervoerregios":
            return 200, _vervoerregios(), "application/json;charset=UTF-8"
        if m := re.fullmatch(r"/lijnen/(\d+)/(\d+)/lijnrichtingen/(HEEN|TERUG)/haltes", sub):
            internal = m.group(2) if m.group(1) == "1" and m.group(2) in d["lines"] else None
            if internal is None or (m.group(3) == "TERUG" and internal == "30"):  # line 30 runs one way only
                return 404, {"statusCode": 404, "message": "lijnrichting niet gevonden"}, "application/json"
            stops = [s for s in d["stops"] if internal in d["serving"][s["haltenummer"]]]
            return 200, {"haltes": stops, "links": []}, "application/json;charset=UTF-8"
        if sub == "/omleidingen":
            return 200, {"omleidingen": d["detours"], "storingen": [], "links": []}, "application/json"
        return 404, {"statusCode": 404, "message": "Resource not found"}, "application/json"

    def _ircel(self, sub: str, q: dict, d: dict, sent=None):
        if sub == "/timeseries/getData":
            if not isinstance(sent, dict) or not isinstance(sent.get("timeseries"), list):
                return (
                    400,
                    {"userMessage": "POST a JSON body with 'timeseries' and 'timespan'"},
                    "application/json",
                )
            return (
                200,
                {
                    str(i): {"values": _in_timespan(d["series"][str(i)]["values"], sent.get("timespan"))}
                    for i in sent["timeseries"]
                    if str(i) in d["series"]
                },
                "application/json",
            )
        if sent is not None:
            return 405, {"userMessage": "method not allowed"}, "application/json"
        listed = self._ircel_list(sub, q, d)
        if listed is not None:
            return 200, _page(listed, q), "application/json"
        if m := re.fullmatch(r"/timeseries/(\d+)/getData", sub):
            s = d["series"].get(m.group(1))
            if s is None:
                return 404, {"userMessage": "timeseries not found"}, "application/json"
            return 200, {"values": _in_timespan(s["values"], q.get("timespan"))}, "application/json"
        return 404, {"userMessage": "not found"}, "application/json"

    def _ircel_list(self, sub: str, q: dict, d: dict) -> list | None:
        """The whole ``/stations`` or ``/timeseries`` list (None for another path); paged by the caller."""
        if sub == "/stations":
            out = []
            for ts_id, s in d["series"].items():
                st = s["station"]
                props = {"id": st["id"], "label": st["label"]}
                if q.get("expanded") == "true":
                    proc = f"{ts_id} - {s['procedure']} - procedure"
                    bc_id = str(int(ts_id) + 5000)
                    props["timeseries"] = {
                        ts_id: {
                            "service": {"id": "1", "label": "IRCEL - CELINE: timeseries-api (SOS 2.0)"},
                            "offering": {"id": ts_id, "label": proc},
                            "feature": {"id": str(st["id"]), "label": st["label"]},
                            "procedure": {"id": ts_id, "label": proc},
                            "phenomenon": {"id": "8", "label": "Nitrogen dioxide"},
                            "category": {"id": "8", "label": "Nitrogen dioxide"},
                        },
                        bc_id: {  # as the real /stations: other phenomena at the same station
                            "service": {"id": "1", "label": "IRCEL - CELINE: timeseries-api (SOS 2.0)"},
                            "offering": {"id": bc_id, "label": f"{bc_id} - THIS 42C - procedure"},
                            "feature": {"id": str(st["id"]), "label": st["label"]},
                            "procedure": {"id": bc_id, "label": f"{bc_id} - THIS 42C - procedure"},
                            "phenomenon": {"id": "391", "label": "Black Carbon"},
                            "category": {"id": "391", "label": "Black Carbon"},
                        },
                    }
                out.append(
                    {
                        "properties": props,
                        "type": "Feature",
                        "geometry": {"coordinates": [st["lon"], st["lat"], "NaN"], "type": "Point"},
                    }
                )
            return out
        if sub == "/timeseries":
            out = []
            for ts_id, s in d["series"].items():
                st = s["station"]
                last = next((v for v in reversed(s["values"]) if v["value"] is not None), None)
                out.append(
                    {
                        "id": ts_id,
                        "label": f"Nitrogen dioxide {ts_id} - procedure, {st['label']}",
                        "uom": "µg/m³",
                        "station": {
                            "properties": {"id": st["id"], "label": st["label"]},
                            "geometry": {"type": "Point", "coordinates": [st["lon"], st["lat"], "NaN"]},
                            "type": "Feature",
                        },
                        "parameters": {
                            "service": {"id": "1", "label": "IRCEL - CELINE: timeseries-api (SOS 2.0)"},
                            "phenomenon": {"id": "8", "label": "Nitrogen dioxide"},
                            "category": {"id": "8", "label": "Nitrogen dioxide"},
                            "procedure": {"id": ts_id, "label": f"{ts_id} - {s['procedure']} - procedure"},
                        },
                        "firstValue": s["values"][0],
                        "lastValue": last,
                        # as the real expanded items (the README of the samples): colour bands and extras
                        "statusIntervals": [
                            {"lower": "0.0", "upper": "40.0", "name": "goed", "color": "#00FF00"},
                            {"lower": "40.0", "upper": "400.0", "name": "slecht", "color": "#FF0000"},
                        ],
                        "extras": ["license", "statusIntervals"],
                        "referenceValues": [],
                    }
                )
            return out
        return None


def _lijn(entity, number, public, region, name, mode, network, valid_to="2099-12-01") -> dict:
    """A ``Lijn`` as the real service sends it (``vervoerslaag`` as the current OpenAPI adds it)."""
    out = {
        "entiteitnummer": entity,
        "lijnnummer": number,
        "lijnnummerPubliek": public,
        "omschrijving": name,
        "vervoerRegioCode": region,
        "publiek": True,
        "vervoertype": mode,
        "bedieningtype": "NORMAAL",
        "lijnGeldigVan": "2026-01-01",
        "lijnGeldigTot": valid_to,
        "links": [],
    }
    if network:
        out["vervoerslaag"] = network
    return out


def _vervoerregios() -> dict:
    """``GET /vervoerregios``: the real recorded answer when the samples are there, else two regions."""
    path = SHARED / "upstream-samples" / "delijn" / "vervoerregios.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    return {
        "vervoerRegios": [
            {"code": "AN", "naam": "Antwerpen", "nr": "02", "links": []},
            {"code": "VR", "naam": "Vlaamse Rand", "nr": "13", "links": []},
        ],
        "links": [],
    }


def _page(items: list, q: dict) -> list:
    """``limit``/``offset`` as the SOS REST API applies them (no limit: everything)."""
    offset = int(q.get("offset", 0))
    return items[offset : offset + int(q["limit"])] if "limit" in q else items[offset:]


def _in_timespan(values: list, timespan: str | None) -> list:
    """The values inside an ISO ``PT{n}H/{end}`` timespan (all without one)."""
    if not timespan:
        return values
    period, _, end = timespan.partition("/")
    hours = int(re.fullmatch(r"PT(\d+)H", period).group(1))
    end_ms = int(datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp() * 1000)
    return [v for v in values if end_ms - hours * 3600_000 <= v["timestamp"] <= end_ms]


def _qs(q: dict) -> str:
    return "&".join(f"{k}={quote(str(v), safe=',')}" for k, v in q.items())


if __name__ == "__main__":  # pragma: no cover - manual use
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--env-file", help="also write the export lines to this file (once the server listens)")
    args = ap.parse_args()
    fake = FakeUpstream(now=datetime.now(timezone.utc), port=args.port).start()
    lines = "".join(f"export {k}='{v}'\n" for k, v in fake.settings().items())
    print(lines, end="", flush=True)
    if args.env_file:
        tmp = Path(args.env_file + ".tmp")
        tmp.write_text(lines, encoding="utf-8")
        tmp.replace(args.env_file)  # appears complete or not at all
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()
