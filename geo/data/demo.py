"""Deterministic demo scenario on the real geography, produced in the real upstream payload shapes.

No real road works, stops, detours or NO2 series are available offline, so :class:`Scenario` generates them
as the live APIs would return them (GIPOD FeatureCollections, De Lijn Haltes/Lijnrichtingen/Omleidingen,
IRCEL timeseries/getData). The snapshot builder passes these payloads through the same normalisers as live
data (``geo.data.upstream``). Same reference files + ``as_of`` + ``seed`` = identical payloads.

Examples
--------
>>> s = Scenario("../shared/data", as_of="2026-11-16T07:00:00Z", seed=1)  # doctest: +SKIP
>>> pages = s.works_pages()                                                  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
from functools import cached_property

import numpy as np
import pandas as pd
import shapely
from scipy.spatial import cKDTree

from . import reference, river

N_WORKS = 3000
N_RECURRING = 150  # works repeated with the same description a few metres away
N_RIVERSIDE = 40  # extra works per Scheldt bank within 2 km of the centreline
N_LONG = 60  # long road works (1.5-5 km strips), a fifth of them around Antwerp
N_PARTS = 40  # works published as two records ("deelrecords") covering two stretches of one street
N_EVENTS = 40  # GIPOD occupations of type "Evenement" (dropped by the normaliser)
N_SERIES = 24  # works published as several occurrences of one GipodId (as GIPOD does)
PAGE_SIZE = 1000
HINDRANCE_SHARE = 0.45  # listed works with a validated hindrance (HINDER_PUNT)
SEVERE_SHARE = 0.3  # of those, severe (SevereHindrance)
N_DETOURS_ANTWERP = 40
N_DETOURS_ELSEWHERE = 8
EMPTY_WINDOW_STATION = "44R710"  # NO2 station whose last two hourly values are null
LAST_HOUR_GAP_STATION = "41R012"  # NO2 station whose last hourly value is null
HOURS = 48

FLEMISH_BRUSSELS = ("02000", "04000")
ANTWERP_CENTRE = (4.4011, 51.2189)  # Groenplaats (lon, lat)
# province NIS -> De Lijn entity (1 Antwerpen, 2 Oost-Vlaanderen, 3 Vlaams-Brabant, 4 Limburg,
# 5 West-Vlaanderen); Brussels (no province) is served from Vlaams-Brabant
ENTITY_OF_PROVINCE = {"10000": "1", "40000": "2", "20001": "3", "70000": "4", "30000": "5"}
ENTITY_NAME = {
    "1": "Antwerpen",
    "2": "Oost-Vlaanderen",
    "3": "Vlaams-Brabant",
    "4": "Limburg",
    "5": "West-Vlaanderen",
}

STATUS_P = {"In uitvoering": 0.42, "Concreet gepland": 0.38, "Uitgevoerd": 0.12, "Niet uitgevoerd": 0.08}
#: hindrance consequences seen in real GIPOD HINDER records (upstream-samples/README.md)
CONSEQUENCES = [
    "Geen doorgang voor gemotoriseerd verkeer",
    "Geen doorgang voor fietsers",
    "Beperkte doorgang voor voetgangers",
    "Geen doorgang voor voetgangers",
    "Handelaars moeilijk bereikbaar",
    "Wisselend verkeer via verkeersborden",
    "Vermindering van rijstroken",
    "Versmalde rijstroken",
]
LONG_WORKS = ["Heraanleg", "Herasfaltering", "Vernieuwing fietspaden", "Aanleg gescheiden riolering langs"]
WORKS = [
    "Vernieuwing riolering",
    "Heraanleg voetpaden",
    "Aanleg glasvezel",
    "Vervanging gasleiding",
    "Herstelling waterleiding",
    "Asfalteringswerken",
    "Aanleg fietspad",
    "Onderhoud rijweg",
    "Plaatsing laadpalen",
    "Vernieuwing openbare verlichting",
    "Nutswerken Fluvius",
    "Aansluiting riolering",
    "Heraanleg kruispunt",
    "Bodemonderzoek (boringen)",
    "Werken aan tramsporen",
    "Vervanging drinkwaterleiding",
    "Heraanleg pleinomgeving",
    "Snoeiwerken en groenonderhoud",
    "Herstelling brugdek",
    "Aanleg ondergrondse containers",
]
EVENTS = ["Wekelijkse markt", "Braderie", "Wielerwedstrijd", "Buurtfeest", "Kerstmarkt"]
OWNERS = [
    "water-link",
    "Fluvius",
    "Proximus",
    "Telenet",
    "De Watergroep",
    "Aquafin",
    "Farys",
    "Pidpa",
    "Agentschap Wegen en Verkeer",
    "Vivaqua",
    "Sibelga",
]
STREETS = [
    "Kerkstraat",
    "Stationsstraat",
    "Dorpsstraat",
    "Molenstraat",
    "Nieuwstraat",
    "Schoolstraat",
    "Kapelstraat",
    "Markt",
    "Steenweg",
    "Beekstraat",
    "Veldstraat",
    "Lindenlaan",
    "Kasteelstraat",
    "Stationsplein",
    "Bosstraat",
    "Hoogstraat",
    "Kouterstraat",
    "Nijverheidsstraat",
    "Driesstraat",
    "Leopoldlaan",
    "Koningin Astridlaan",
    "Groenstraat",
    "Langestraat",
    "Hoeksken",
    "Meir",
    "Frankrijklei",
    "Italiëlei",
    "Turnhoutsebaan",
    "Kiel",
    "Blancefloerlaan",
    "Halewijnlaan",
    "Sint-Bernardsesteenweg",
    "Kapelsestraat",
    "Noorderlaan",
    "Kennedytunnel",
    "Scheldekaai",
]
ANTWERP_LINES = [
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "8",
    "9",
    "10",
    "11",
    "12",
    "15",
    "24",
    "007",
    "013",
    "017",
    "018",
    "019",
    "021",
    "022",
    "023",
    "030",
    "032",
    "034",
    "036",
    "090",
    "091",
    "180",
    "181",
    "183",
    "410",
    "411",
    "420",
    "500",
    "600",
    "640",
    "650",
    "700",
    "750",
    "760",
]
#: demo transport regions (``vervoerRegioCode``, real codes) per entity; entity 1 = AN (Antwerp lines), KE, ME
REGION_OF_ENTITY = {"2": "GE", "3": "LV", "4": "LI", "5": "BR"}
#: De Lijn's transport regions (``GET /vervoerregios``: code -> naam, as in the real answer)
REGION_NAME = {
    "AA": "Aalst",
    "AN": "Antwerpen",
    "BR": "Brugge",
    "GE": "Gent",
    "KE": "Kempen",
    "KO": "Kortrijk",
    "LV": "Leuven",
    "LI": "Limburg",
    "ME": "Mechelen",
    "OO": "Oostende",
    "RO": "Midwest (Roeselare)",
    "VA": "Vlaamse Ardennen",
    "VR": "Vlaamse Rand",
    "WA": "Waasland",
    "WH": "Westhoek",
}
#: entity-1 regional routes (by their index among them) whose public number repeats an Antwerp tram's, as
#: in the real list (public "2" is tram 2 and bus 948, public "3" is tram 3 and bus 947, all region AN):
#: index -> (public, internal lijnnummer)
REPEATED_PUBLIC = {0: ("2", "948"), 1: ("3", "947")}
DAYS = ["MAANDAG", "DINSDAG", "WOENSDAG", "DONDERDAG", "VRIJDAG", "ZATERDAG", "ZONDAG"]
DETOUR_REASONS = [
    ("werken", "Werken"),
    ("werken", "Rioleringswerken"),
    ("werken", "Wegenwerken"),
    ("werken", "Heraanleg"),
    ("evenement", "Evenement"),
    ("evenement", "Markt"),
    ("evenement", "Stadsloop"),
]

_LAT0 = 51.0
_KX = 111.320 * math.cos(math.radians(_LAT0))
_KY = 110.574


def _km_xy(lon, lat):
    return np.column_stack([np.asarray(lon) * _KX, np.asarray(lat) * _KY])


def sample_points(geom, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` uniform random (lon, lat) points inside ``geom`` (rejection sampling on its bounds)."""
    out = np.empty((0, 2))
    if n <= 0:
        return out
    shapely.prepare(geom)
    minx, miny, maxx, maxy = geom.bounds
    while len(out) < n:
        m = max(64, 3 * (n - len(out)))
        xy = np.column_stack([rng.uniform(minx, maxx, m), rng.uniform(miny, maxy, m)])
        out = np.vstack([out, xy[shapely.contains_xy(geom, xy[:, 0], xy[:, 1])]])
    return out[:n]


def _iso_z(ts: pd.Timestamp) -> str:
    return ts.tz_convert("UTC").strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso_local(ts: pd.Timestamp) -> str:
    return ts.tz_convert("Europe/Brussels").strftime("%Y-%m-%dT%H:%M:%S")


class Scenario:
    """Demo payloads for ``as_of`` (aware or ISO, UTC) and ``seed``; each payload has its own RNG stream."""

    def __init__(self, reference_dir, *, as_of, seed: int):
        self.reference_dir = reference_dir
        t = pd.Timestamp(as_of)
        self.as_of = t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
        self.seed = int(seed)

    def _rng(self, stream: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, stream])

    @cached_property
    def municipalities(self):
        """Flemish and Brussels municipalities (NIS order)."""
        m = reference.municipalities(self.reference_dir)
        return m[m["reg_nis"].isin(FLEMISH_BRUSSELS)].reset_index(drop=True)

    @cached_property
    def _muni_tree(self):
        return shapely.STRtree(list(self.municipalities.geometry))

    def municipality_of(self, xy: np.ndarray) -> np.ndarray:
        """Index into :attr:`municipalities` of each (lon, lat) point, -1 when outside all of them."""
        pts = shapely.points(xy[:, 0], xy[:, 1])
        src, dst = self._muni_tree.query(pts, predicate="within")
        out = np.full(len(xy), -1, dtype=np.int64)
        out[src[::-1]] = dst[::-1]  # first match wins
        return out

    @cached_property
    def river(self):
        return river.reference_river_layer(self.reference_dir)

    # --- GIPOD ----------------------------------------------------------------------------------------

    def _work_dates(self, status: str, rng) -> tuple:
        day = pd.Timedelta(days=1)
        base = self.as_of.normalize() + pd.Timedelta(hours=6)
        if status == "In uitvoering":
            start = base - int(rng.integers(1, 500)) * day
            r = rng.random()
            if r < 0.04:
                end = base - int(rng.integers(1, 60)) * day  # overdue: still running
            elif r < 0.08:
                end = None
            elif r < 0.28:
                end = base + int(rng.integers(365, 1460)) * day  # multi-year
            else:
                end = base + int(rng.integers(3, 300)) * day
        elif status == "Concreet gepland":
            start = base + int(rng.integers(1, 14 if rng.random() < 0.3 else 240)) * day
            end = start + int(rng.integers(5, 1200 if rng.random() < 0.2 else 200)) * day
        elif status == "Uitgevoerd":
            start = base - int(rng.integers(60, 900)) * day
            end = min(start + int(rng.integers(5, 200)) * day, base - day)
        else:
            start = base + int(rng.integers(-300, 300)) * day
            end = start + int(rng.integers(5, 150)) * day
        return start + pd.Timedelta(hours=int(rng.integers(0, 3))), (
            None if end is None else end + pd.Timedelta(hours=10)
        )

    @staticmethod
    def _feature(gid, geom, props, collection: str = "INNAME"):
        """One GIPOD record: ``geom`` (Shapely, lon/lat) at 7 decimals, id ``<collection>.<GipodId>-<start>``."""
        geom = shapely.transform(geom, lambda xy: np.round(xy, 7))
        stamp = pd.Timestamp(props["Start"]).tz_convert("UTC").strftime("%y%m%d%H%M")
        return {
            "type": "Feature",
            "id": f"{collection}.{gid}-{stamp}",
            "geometry": json.loads(shapely.to_geojson(geom)),
            "properties": {
                "GipodId": gid,
                "Uri": f"https://gipod.api.vlaanderen.be/api/v1/public-domain-occupancies/{gid}",
                **props,
            },
        }

    @staticmethod
    def street(lon, lat, bearing, length_km, width_km, turns=(), centred=True):
        """A road-work polygon: a strip ``width_km`` wide along a path of ``length_km`` from (or centred on)
        (``lon``, ``lat``) heading ``bearing`` (radians from north), turning by each angle of ``turns`` at
        equal steps; flat ends and mitred bends (a few vertices, as drawn in GIPOD)."""
        step = length_km / (len(turns) + 1)
        xy, b = [(0.0, 0.0)], bearing
        for turn in (*turns, 0.0):
            x, y = xy[-1]
            xy.append((x + step * math.sin(b), y + step * math.cos(b)))
            b += turn
        path = np.array(xy)
        if centred:
            path -= (
                path[len(path) // 2]
                if len(path) % 2
                else (path[len(path) // 2 - 1] + path[len(path) // 2]) / 2
            )
        strip = shapely.buffer(shapely.LineString(path), width_km / 2, cap_style="flat", join_style="mitre")
        kx = _KX * math.cos(math.radians(lat)) / math.cos(math.radians(_LAT0))
        return shapely.transform(strip, lambda p: np.column_stack([lon + p[:, 0] / kx, lat + p[:, 1] / _KY]))

    def _site(self, lon, lat, wide: bool, rng):
        """The extent of an ordinary work: a street stretch of 15-250 m (a wider site of 30-80 m when
        ``wide``)."""
        bearing = rng.uniform(0, math.pi)
        if wide:
            return self.street(lon, lat, bearing, rng.uniform(0.03, 0.08), rng.uniform(0.02, 0.04))
        return self.street(
            lon,
            lat,
            bearing,
            math.exp(rng.uniform(math.log(0.015), math.log(0.25))),
            rng.uniform(0.004, 0.012),
        )

    def works_pages(self) -> list[dict]:
        """GIPOD OGC API Features ``INNAME`` FeatureCollection pages (``links`` next): one record per
        occurrence or part of a work, each with its polygon."""
        return _pages(list(self._work_records), "INNAME")

    @cached_property
    def _work_records(self) -> list[dict]:
        rng = self._rng(1)
        shapes = self._rng(7)
        muni = self.municipalities
        pop = muni["population"].to_numpy(dtype=float)
        counts = rng.multinomial(N_WORKS - 2 * N_RIVERSIDE - N_RECURRING, pop / pop.sum())
        pts, names = [], []
        for i, n in enumerate(counts):
            if n:
                pts.append(sample_points(muni.geometry.iat[i], int(n), rng))
                names += [muni["name_nl"].iat[i]] * int(n)
        # works on both banks of the Scheldt, within 2 km of the centreline
        line = self.river.geometry.iat[0]
        near = shapely.buffer(line, 0.02)
        for part in (1, 2):
            side = shapely.intersection(self.river.geometry.iat[part], near)
            xy = sample_points(side, N_RIVERSIDE, rng)
            pts.append(xy)
            idx = self.municipality_of(xy)
            names += [muni["name_nl"].iat[j] if j >= 0 else "Antwerpen" for j in idx]
        xy = np.vstack(pts)
        statuses = list(STATUS_P)
        features, sites = [], []
        gid = 1_100_000
        for (lon, lat), town in zip(xy.tolist(), names):
            gid += int(rng.integers(1, 40))
            status = statuses[rng.choice(len(statuses), p=list(STATUS_P.values()))]
            start, end = self._work_dates(status, rng)
            owner = (
                (
                    f"Stad {town}"
                    if town in ("Antwerpen", "Gent", "Brussel", "Leuven", "Mechelen", "Brugge")
                    else f"Gemeente {town}"
                )
                if rng.random() < 0.35
                else OWNERS[rng.integers(len(OWNERS))]
            )
            grond = rng.random() < 0.7
            props = {
                "Description": f"{WORKS[rng.integers(len(WORKS))]} {STREETS[rng.integers(len(STREETS))]}",
                "Type": "Grondwerk" if grond else "Werk",
                "Status": status,
                "Start": _iso_z(start),
                "End": None if end is None else _iso_z(end),
                "Owner": owner,
                "GroundworkCategory": "Nutswerken" if grond else None,
                "GroundworkPartOfTrenchSynergy": bool(rng.random() < 0.1),
                "LastModifiedOn": _iso_z(self.as_of - pd.Timedelta(hours=int(rng.integers(1, 2000)))),
            }
            site = self._site(lon, lat, rng.random() < 0.1, shapes)
            sites.append(site)
            features.append(self._feature(gid, site, props))
        # recurring occurrences: same description, a few metres away, a later period
        for k in rng.choice(len(features), N_RECURRING, replace=False):
            src = features[int(k)]
            lat = float(shapely.point_on_surface(sites[int(k)]).y)
            dist_m, bearing = rng.uniform(3, 25), rng.uniform(0, 2 * math.pi)
            dlon = (
                dist_m
                / 1000
                * math.sin(bearing)
                / (_KX * math.cos(math.radians(lat)) / math.cos(math.radians(_LAT0)))
            )
            dlat = dist_m / 1000 * math.cos(bearing) / _KY
            gid += int(rng.integers(1, 40))
            props = dict(src["properties"])
            props.pop("GipodId"), props.pop("Uri")
            shift = pd.Timedelta(days=int(rng.choice([7, 14, 28, 91])))
            props["Start"] = _iso_z(pd.Timestamp(props["Start"]) + shift)
            if props["End"]:
                props["End"] = _iso_z(pd.Timestamp(props["End"]) + shift)
            features.append(
                self._feature(gid, shapely.transform(sites[int(k)], lambda p, d=(dlon, dlat): p + d), props)
            )
        # events share the INNAME collection; the works normaliser drops them
        ev = sample_points(muni.geometry.iat[int(np.argmax(pop))], N_EVENTS, rng)
        for lon, lat in ev:
            gid += int(rng.integers(1, 40))
            start = self.as_of.normalize() + pd.Timedelta(days=int(rng.integers(-5, 30)), hours=6)
            features.append(
                self._feature(
                    gid,
                    self.street(lon, lat, 0.0, 0.05, 0.05),
                    {
                        "Description": f"{EVENTS[rng.integers(len(EVENTS))]} {STREETS[rng.integers(len(STREETS))]}",
                        "Type": "Evenement",
                        "Status": "Lopende",
                        "Start": _iso_z(start),
                        "End": _iso_z(start + pd.Timedelta(hours=12)),
                        "Owner": "Stad Antwerpen",
                    },
                )
            )
        order = rng.permutation(len(features))
        return [features[i] for i in order] + self._long_works() + self._series(gid)

    def _long_works(self) -> list[dict]:
        """Long road works (1.5-5 km strips along a bending road, a fifth of them around Antwerp) and works
        published as two records: two stretches of one street, the second planned after the first, or both
        running."""
        rng = self._rng(8)
        muni = self.municipalities
        pop = muni["population"].to_numpy(dtype=float)
        antwerp = muni.geometry.iat[int(np.flatnonzero(muni["name_nl"].to_numpy() == "Antwerpen")[0])]
        n_antwerp = N_LONG // 5
        where = [sample_points(antwerp, n_antwerp + N_PARTS // 4, rng)]
        for i in rng.choice(len(muni), N_LONG - n_antwerp + N_PARTS - N_PARTS // 4, p=pop / pop.sum()):
            where.append(sample_points(muni.geometry.iat[int(i)], 1, rng))
        xy = np.vstack(where)
        long_xy = np.vstack(
            [xy[:n_antwerp], xy[n_antwerp + N_PARTS // 4 : n_antwerp + N_PARTS // 4 + N_LONG - n_antwerp]]
        )
        part_xy = np.vstack(
            [xy[n_antwerp : n_antwerp + N_PARTS // 4], xy[n_antwerp + N_PARTS // 4 + N_LONG - n_antwerp :]]
        )
        out, gid = [], 2_000_000
        for lon, lat in long_xy.tolist():
            gid += int(rng.integers(1, 40))
            status = "In uitvoering" if rng.random() < 0.5 else "Concreet gepland"
            start, end = self._work_dates(status, rng)
            turns = tuple(rng.uniform(-0.4, 0.4, int(rng.integers(1, 4))))
            geom = self.street(
                lon,
                lat,
                rng.uniform(0, 2 * math.pi),
                rng.uniform(1.5, 5.0),
                rng.uniform(0.012, 0.03),
                turns,
                centred=False,
            )
            props = {
                "Description": f"{LONG_WORKS[rng.integers(len(LONG_WORKS))]} {STREETS[rng.integers(len(STREETS))]}",
                "Type": "Werk",
                "Status": status,
                "Start": _iso_z(start),
                "End": None if end is None else _iso_z(end),
                "Owner": "Agentschap Wegen en Verkeer"
                if rng.random() < 0.6
                else OWNERS[rng.integers(len(OWNERS))],
            }
            out.append(self._feature(gid, geom, props))
        for k, (lon, lat) in enumerate(part_xy.tolist()):
            gid += int(rng.integers(1, 40))
            bearing = rng.uniform(0, 2 * math.pi)
            length, gap = rng.uniform(0.08, 0.3), rng.uniform(0.1, 0.4)
            first = self.street(lon, lat, bearing, length, 0.008, centred=False)
            x0, y0 = math.sin(bearing) * (length + gap), math.cos(bearing) * (length + gap)
            kx = _KX * math.cos(math.radians(lat)) / math.cos(math.radians(_LAT0))
            second = self.street(lon + x0 / kx, lat + y0 / _KY, bearing, length, 0.008, centred=False)
            start, end = self._work_dates("In uitvoering", rng)
            props = {
                "Description": f"{WORKS[rng.integers(len(WORKS))]} {STREETS[rng.integers(len(STREETS))]}",
                "Type": "Grondwerk",
                "Status": "In uitvoering",
                "Start": _iso_z(start),
                "End": None if end is None else _iso_z(end),
                "Owner": OWNERS[rng.integers(len(OWNERS))],
            }
            out.append(self._feature(gid, first, props))
            later = self.as_of.normalize() + pd.Timedelta(days=int(rng.integers(5, 60)), hours=6)
            second_props = dict(
                props, Start=_iso_z(later), End=_iso_z(later + pd.Timedelta(days=int(rng.integers(10, 90))))
            )
            if k % 2 == 0:  # the next phase, planned
                second_props["Status"] = "Concreet gepland"
            else:  # both stretches at once, the second record a day later
                second_props["Start"] = _iso_z(start + pd.Timedelta(days=1))
            out.append(self._feature(gid, second, second_props))
        return out

    def _series(self, last_gid: int) -> list[dict]:
        """Works published as a series of occurrences (one record per occurrence, one GipodId, same place),
        near Antwerp: weekly day-time slots around ``as_of``."""
        rng = self._rng(6)
        muni = self.municipalities
        antwerp = muni.geometry.iat[int(np.flatnonzero(muni["name_nl"].to_numpy() == "Antwerpen")[0])]
        xy = sample_points(antwerp, N_SERIES, rng)
        statuses = ["In uitvoering", "Concreet gepland", "Concreet gepland"]
        out, gid = [], last_gid + 1000
        for k, (lon, lat) in enumerate(xy.tolist()):
            gid += int(rng.integers(1, 40))
            first = self.as_of.normalize() + pd.Timedelta(
                days=int(rng.integers(-10, 10)), hours=int(rng.integers(5, 9))
            )
            if k % 8 == 0:  # a few series have an occurrence in progress at asOf (the week before + 7 days)
                first = self.as_of.floor("h") - pd.Timedelta(days=7, hours=1)
            hours = int(rng.integers(4, 10))
            props = {
                "Description": f"{WORKS[rng.integers(len(WORKS))]} {STREETS[rng.integers(len(STREETS))]}",
                "Type": "Grondwerk",
                "Status": statuses[k % 3],
                "Owner": OWNERS[rng.integers(len(OWNERS))],
                "GroundworkCategory": "Nutswerken",
            }
            site = self.street(lon, lat, rng.uniform(0, math.pi), rng.uniform(0.02, 0.06), 0.006)
            for n in range(int(rng.integers(2, 8))):
                start = first + pd.Timedelta(days=7 * n)
                out.append(
                    self._feature(
                        gid,
                        site,
                        {**props, "Start": _iso_z(start), "End": _iso_z(start + pd.Timedelta(hours=hours))},
                    )
                )
        return out

    def hindrance_pages(self) -> list[dict]:
        """GIPOD ``HINDER_PUNT`` pages: the validated hindrance of some of the works (a point, the
        consequences ``;``-joined, ``SevereHindrance``); a few works have two hindrance zones."""
        rng = self._rng(9)
        works: dict = {}
        for f in self._work_records:
            p = f["properties"]
            if p["Type"] != "Evenement" and p["Status"] in ("In uitvoering", "Concreet gepland"):
                works.setdefault(p["GipodId"], f)
        out, hid = [], 9_000_000
        for gid in sorted(works):
            if rng.random() >= HINDRANCE_SHARE:
                continue
            where = shapely.point_on_surface(shapely.geometry.shape(works[gid]["geometry"]))
            for _ in range(1 if rng.random() < 0.85 else 2):
                hid += int(rng.integers(1, 20))
                picked = rng.choice(len(CONSEQUENCES), int(rng.integers(1, 4)), replace=False)
                props = {
                    "GipodId": gid,
                    "ZoneId": hid + 1,
                    "ZoneType": "Hinderzone",
                    "SevereHindrance": bool(rng.random() < SEVERE_SHARE),
                    "Consequences": ";".join(CONSEQUENCES[int(i)] for i in sorted(picked)),
                    "HindranceGipodId": hid,
                    "HindranceStatus": "Gevalideerd",
                    "HindranceDescription": works[gid]["properties"]["Description"],
                }
                out.append(
                    {
                        "type": "Feature",
                        "id": f"HINDER_PUNT.{hid}",
                        "geometry": json.loads(
                            shapely.to_geojson(shapely.transform(where, lambda xy: np.round(xy, 7)))
                        ),
                        "properties": props,
                    }
                )
        return _pages(out, "HINDER_PUNT")

    # --- De Lijn stops --------------------------------------------------------------------------------

    def _routes(self, rng) -> list[tuple[str, str, np.ndarray, float]]:
        """(entity, public line number, route vertices lon/lat, stop spacing km) per demo line."""
        muni = self.municipalities
        area = shapely.union_all(list(muni.geometry))
        shapely.prepare(area)
        routes = []
        cx, cy = ANTWERP_CENTRE
        for line in ANTWERP_LINES:
            urban = not line.isdigit() or len(line) < 3 or line.startswith("0")
            reach = rng.uniform(3, 9) if urban else rng.uniform(10, 25)
            while True:
                ang = rng.uniform(0, 2 * math.pi)
                start = (cx + rng.normal(0, 0.012), cy + rng.normal(0, 0.008))
                end = (cx + reach * math.cos(ang) / _KX, cy + reach * math.sin(ang) / _KY)
                if shapely.contains_xy(area, *end):
                    break
            routes.append(("1", line, self._bent(start, end, rng), 0.35 if urban else 0.6))
        prov = muni["prov_nis"].fillna("").map(ENTITY_OF_PROVINCE).fillna("3").to_numpy()
        cent = np.array([(p.x, p.y) for p in muni.geometry.representative_point()])
        pop = muni["population"].to_numpy(dtype=float)
        for entity, first in (("1", 100), ("2", 200), ("3", 300), ("4", 400), ("5", 50)):
            idx = np.flatnonzero(prov == entity)
            w = pop[idx] / pop[idx].sum()
            for k in range(28 if entity != "1" else 14):
                a, b = rng.choice(idx, 2, replace=False, p=w)
                number = str(first + k * (3 if entity == "5" else 1))
                if entity == "5" and k % 4 == 0:
                    number = number.zfill(3)  # e.g. "050", "062": published with a leading zero
                if entity == "1" and k in REPEATED_PUBLIC:
                    number = REPEATED_PUBLIC[k][0]
                routes.append((entity, number, self._bent(cent[a], cent[b], rng), 0.7))
        return routes

    @staticmethod
    def _bent(a, b, rng) -> np.ndarray:
        a, b = np.asarray(a, float), np.asarray(b, float)
        mid = (a + b) / 2 + rng.normal(0, 0.15, 2) * np.abs(b - a).max()
        return np.vstack([a, mid, b])

    @cached_property
    def _stops(self):
        rng = self._rng(2)
        routes = self._routes(rng)
        xy, served = [], []
        for r, (_, _, verts, spacing) in enumerate(routes):
            line = shapely.LineString(_km_xy(verts[:, 0], verts[:, 1]))
            d = np.arange(0.0, line.length + 1e-9, spacing) + rng.uniform(0, spacing / 3)
            d = d[d <= line.length]
            pts = shapely.get_coordinates(shapely.line_interpolate_point(line, d))
            pts = pts + rng.normal(0, 0.02, pts.shape)
            xy.append(pts)
            served += [r] * len(pts)
        xy, served = np.vstack(xy), np.asarray(served)
        # merge stops closer than 80 m: the first one keeps its place, lines are pooled
        tree = cKDTree(xy)
        keep = np.ones(len(xy), bool)
        owner = np.arange(len(xy))
        for i, j in sorted(tree.query_pairs(0.08)):
            if keep[i] and keep[j]:
                keep[j], owner[j] = False, i
        lonlat = np.column_stack([xy[:, 0] / _KX, xy[:, 1] / _KY])
        muni_idx = self.municipality_of(lonlat)
        lines: dict[int, list[int]] = {}
        for s, r in enumerate(served):
            lines.setdefault(int(owner[s]), []).append(int(r))
        kept = [int(i) for i in np.flatnonzero(keep) if muni_idx[i] >= 0]
        return routes, lonlat, muni_idx, lines, kept

    def stops_payloads(self) -> tuple[dict, dict]:
        """(De Lijn ``Haltes`` response, ``{"e_h": Lijnrichtingen response}``) for every demo stop."""
        rng = self._rng(3)
        routes, lonlat, muni_idx, lines, kept = self._stops
        names = self.municipalities["name_nl"].tolist()
        nis = self.municipalities["nis"].tolist()
        haltes, lijnrichtingen = [], {}
        counters: dict[str, int] = {}
        for i in kept:
            rs = sorted(set(lines[i]))
            entity = routes[rs[0]][0]
            counters[entity] = counters.get(entity, 0) + int(rng.integers(1, 12))
            number = f"{entity}{counters[entity]:05d}"
            lon, lat = round(float(lonlat[i, 0]), 6), round(float(lonlat[i, 1]), 6)
            town = names[muni_idx[i]]
            coord = {"latitude": lat, "longitude": lon} if rng.random() < 0.5 else f"{lat},{lon}"
            haltes.append(
                {
                    "entiteitnummer": entity,
                    "haltenummer": number,
                    "omschrijving": f"{town} {STREETS[rng.integers(len(STREETS))]}",
                    "gemeentenummer": int(nis[muni_idx[i]]),
                    "omschrijvingGemeente": town,
                    "districtCode": town[:3].upper(),
                    "geoCoordinaat": coord,
                    "halteToegankelijkheden": ["MOTORISCHE_BEPERKING"] if rng.random() < 0.4 else [],
                    "hoofdHalte": None,
                    "taal": "N",
                    "links": [
                        {
                            "rel": "detail",
                            "url": f"https://api.delijn.be/DLKernOpenData/api/v1/haltes/{entity}/{number}",
                        }
                    ],
                }
            )
            # as the real /haltes/{e}/{h}/lijnrichtingen: internal lijnnummer only, no public number
            lijnrichtingen[f"{entity}_{number}"] = {
                "lijnrichtingen": [
                    {
                        "entiteitnummer": routes[r][0],
                        "lijnnummer": self.internal_number(r),
                        "richting": richting,
                        "omschrijving": f"Lijn {routes[r][1]}",
                        "links": [
                            {
                                "rel": "detail",
                                "url": f"https://api.delijn.be/DLKernOpenData/api/v1/lijnen/"
                                f"{routes[r][0]}/{self.internal_number(r)}/lijnrichtingen/"
                                f"{richting}",
                            }
                        ],
                    }
                    for r in rs
                    for richting in ("HEEN", "TERUG")
                ],
                "links": [],
            }
        return {"haltes": haltes, "links": []}, lijnrichtingen

    def internal_number(self, r: int) -> str:
        """Internal ``lijnnummer`` of demo route ``r``: as in the real entity-1 list, some Antwerp lines have an
        internal number that differs from the public one (every fourth: ``900 + k``; the regional buses that
        repeat a tram's public number: :data:`REPEATED_PUBLIC`), zero-padded public numbers are internally
        plain (``007`` -> ``7``)."""
        entity, public = self._stops[0][r][:2]
        if entity == "1" and r < len(ANTWERP_LINES) and r % 4 == 3:
            return str(900 + r)
        if entity == "1" and r - len(ANTWERP_LINES) in REPEATED_PUBLIC:
            return REPEATED_PUBLIC[r - len(ANTWERP_LINES)][1]
        return str(int(public)) if public.isdigit() else public

    def region(self, r: int) -> str:
        """``vervoerRegioCode`` of demo route ``r``: Antwerp lines AN, the other entity-1 lines KE/ME (AN for
        the regional buses that repeat a tram's public number, as Lier's do)."""
        entity = self._stops[0][r][0]
        if entity == "1":
            if r < len(ANTWERP_LINES) or r - len(ANTWERP_LINES) in REPEATED_PUBLIC:
                return "AN"
            return "KE" if r % 2 == 0 else "ME"
        return REGION_OF_ENTITY[entity]

    def network(self, r: int) -> str:
        """``vervoerslaag`` of demo route ``r``: trams and Antwerp city lines are the core network
        (``Kernnet``), every other line the supplementary network (``Aanvullend net``)."""
        entity, public = self._stops[0][r][:2]
        city = entity == "1" and r < len(ANTWERP_LINES) and (len(public) < 3 or public.startswith("0"))
        return "Kernnet" if city or self.mode(r) == "TRAM" else "Aanvullend net"

    def mode(self, r: int) -> str:
        """``vervoertype`` of demo route ``r``: the first 13 Antwerp lines are trams."""
        entity, public = self._stops[0][r][:2]
        return "TRAM" if entity == "1" and r < len(ANTWERP_LINES) and public in ANTWERP_LINES[:13] else "BUS"

    def regions_payload(self) -> dict:
        """``GET /vervoerregios`` answer, in the real shape."""
        base = "https://api.delijn.be/DLKernOpenData/api/v1/vervoerregios"
        return {
            "vervoerRegios": [
                {
                    "code": c,
                    "naam": n,
                    "nr": f"{k + 1:02d}",
                    "links": [{"rel": "lijnen", "url": f"{base}/{c}/lijnen"}],
                }
                for k, (c, n) in enumerate(REGION_NAME.items())
            ],
            "links": [],
        }

    def lines_payload(self) -> list[dict]:
        """``GET /entiteiten/{e}/lijnen`` answers (one per entity), in the real shape."""
        routes = self._stops[0]
        pages = []
        for entity in ("1", "2", "3", "4", "5"):
            lijnen = [
                {
                    "entiteitnummer": entity,
                    "lijnnummer": self.internal_number(r),
                    "lijnnummerPubliek": routes[r][1],
                    "omschrijving": f"Lijn {routes[r][1]}",
                    "vervoerRegioCode": self.region(r),
                    "publiek": True,
                    "vervoertype": self.mode(r),
                    "vervoerslaag": self.network(r),
                    "bedieningtype": "NORMAAL",
                    "lijnGeldigVan": "2026-01-01",
                    "lijnGeldigTot": "2099-12-01",
                    "links": [],
                }
                for r in range(len(routes))
                if routes[r][0] == entity
            ]
            pages.append({"lijnen": lijnen, "links": []})
        return pages

    # --- De Lijn detours ------------------------------------------------------------------------------

    def detours_payload(self, stops) -> dict:
        """De Lijn ``Omleidingen`` response built on a ``stops`` layer (unserved stops are real stop ids)."""
        rng = self._rng(4)
        routes = self._stops[0]
        route_of = {f"{e}_{self.internal_number(r)}": r for r, (e, _, _, _) in enumerate(routes)}
        xy = _km_xy(stops.geometry.x.to_numpy(), stops.geometry.y.to_numpy())
        tree = cKDTree(xy)
        centre = _km_xy([ANTWERP_CENTRE[0]], [ANTWERP_CENTRE[1]])[0]
        ent = stops["entity"].to_numpy()
        near_antwerp = np.flatnonzero((ent == "1") & (np.hypot(*(xy - centre).T) < 8.0))
        elsewhere = np.flatnonzero(ent != "1")
        omleidingen = []
        picks = [(int(i), True) for i in rng.choice(near_antwerp, N_DETOURS_ANTWERP, replace=False)] + [
            (int(i), False) for i in rng.choice(elsewhere, N_DETOURS_ELSEWHERE, replace=False)
        ]
        for k, (i, _near_antwerp) in enumerate(picks):
            # lines by identity: a stop may be served by two lines with the same public number
            served = [x for x in stops["line_ids"].iat[i].split(",") if x]
            lines = list(rng.choice(served, min(len(served), int(rng.integers(1, 3))), replace=False))
            around = tree.query_ball_point(xy[i], 0.6)
            unserved = sorted(j for j in around if set(stops["line_ids"].iat[j].split(",")) & set(lines))
            unserved = unserved[: int(rng.integers(1, 7))] if rng.random() > 0.1 else []
            kind, reason = DETOUR_REASONS[rng.integers(len(DETOUR_REASONS))]
            street = STREETS[rng.integers(len(STREETS))]
            town = stops["municipality"].iat[i]
            start = self.as_of.normalize() + pd.Timedelta(days=int(rng.integers(-60, 20)), hours=4)
            r = rng.random()
            end = None if r < 0.2 else start + pd.Timedelta(days=int(rng.integers(1, 120)), hours=19)
            delay = int(rng.choice([3, 5, 5, 8, 10, 10, 15, 20, 25]))
            names = ", ".join(stops["name"].iat[j] for j in unserved) or "geen"
            text = (
                f"Periode : van {_iso_local(start)[:10]} tot "
                f"{'nader bericht' if end is None else _iso_local(end)[:10]}. "
                f"Niet-bediende haltes : {names}. Vervanghaltes: aan de overkant van {street}."
            )
            if rng.random() < 0.85:
                text += f" Hou rekening met een vertraging van ongeveer {delay} minuten."
            lrs = []
            for line in lines:
                r = route_of[line]
                entity, public = routes[r][:2]
                if public.startswith("0"):
                    rng.random()  # keeps the stream of the earlier generator (it drew one number here)
                for richting in ("HEEN", "TERUG"):
                    # as the real omleidingen: internal lijnnummer only, no public number
                    lrs.append(
                        {
                            "entiteitnummer": entity,
                            "lijnnummer": self.internal_number(r),
                            "richting": richting,
                            "omschrijving": f"Lijn {public}",
                            "links": [
                                {
                                    "rel": "lijnrichting",
                                    "url": "https://api.delijn.be/DLKernOpenData/"
                                    f"api/v1/lijnen/{entity}/{self.internal_number(r)}/lijnrichtingen/"
                                    f"{richting}",
                                }
                            ],
                        }
                    )
            # as the real omleidingen: stops by key only (no coordinates, no name)
            haltes = [
                {
                    "entiteitnummer": stops["entity"].iat[j],
                    "haltenummer": stops["number"].iat[j],
                    "halteToegankelijkheden": [],
                    "hoofdHalte": None,
                    "links": [
                        {
                            "rel": "halte",
                            "url": "https://api.delijn.be/DLKernOpenData/api/v1/haltes/"
                            f"{stops['entity'].iat[j]}/{stops['number'].iat[j]}",
                        }
                    ],
                }
                for j in unserved
            ]
            periode = {"startDatum": _iso_local(start)}
            if end is not None:
                periode["eindDatum"] = _iso_local(end)
            days = [] if rng.random() < 0.6 else (DAYS[5:] if kind == "evenement" else DAYS[:5])
            ref = 30500 + k * 3
            # the real service sends type lower case, upper case or not at all
            typed = {"type": kind} if k % 3 == 0 else {"type": kind.upper()} if k % 3 == 1 else {}
            omleidingen.append(
                {
                    "titel": f"{town}: {reason} {street}",
                    "omschrijving": text,
                    "periode": periode,
                    "lijnrichtingen": lrs,
                    "haltes": haltes,
                    "referentieOmleiding": ref,
                    **typed,
                    "omleidingsDagen": days,
                    "links": [
                        {
                            "rel": "detail",
                            "url": f"https://api.delijn.be/DLKernOpenData/api/v1/omleidingen/{ref}",
                        }
                    ],
                }
            )
        return {"omleidingen": omleidingen, "storingen": [], "links": []}

    # --- IRCEL NO2 ------------------------------------------------------------------------------------

    def no2_payloads(self, stations) -> tuple[list, dict]:
        """(IRCEL ``/timeseries?phenomenon=8`` items, ``getData`` values keyed by series id)."""
        rng = self._rng(5)
        no2 = stations[stations["no2"]].reset_index(drop=True)
        end = self.as_of.floor("h")
        stamps = pd.date_range(end=end, periods=HOURS, freq="h")
        ms = (stamps.as_unit("ms").asi8).tolist()
        local_hour = stamps.tz_convert("Europe/Brussels").hour.to_numpy()
        shape = (
            0.75
            + 0.55 * np.exp(-(((local_hour - 8.5) / 1.6) ** 2))
            + 0.45 * np.exp(-(((local_hour - 18.0) / 2.0) ** 2))
            - 0.25 * np.exp(-(((local_hour - 3.5) / 2.5) ** 2))
        )
        items, data = [], {}
        modelled = set(no2["id"].iloc[::9]) | {EMPTY_WINDOW_STATION}
        estimated = set(no2["id"].iloc[4::15]) | {EMPTY_WINDOW_STATION}
        for k, st in no2.iterrows():
            code, name = st["id"], st["name"]
            base = {"Traffic": 40.0, "Industrial": 26.0, "Background": 18.0}.get(st["station_type"], 20.0)
            base *= {"urban": 1.15, "suburban": 1.0, "rural": 0.65}.get(st["area_type"], 1.0)
            base *= rng.uniform(0.85, 1.15)
            noise = np.convolve(rng.normal(0, 0.12, HOURS + 2), [1 / 3] * 3, mode="valid")
            values = np.round(np.clip(base * (shape + noise), 1.0, None), 1)
            null = rng.random(HOURS) < 0.04
            if code == EMPTY_WINDOW_STATION:
                null[-2:] = True
            elif code == LAST_HOUR_GAP_STATION:
                null[-2:] = (False, True)
            else:
                null[-2:] = False
            station = {
                "type": "Feature",
                "properties": {"id": 1000 + k, "label": f"{code} - {name}"},
                "geometry": {
                    "type": "Point",
                    "coordinates": [float(st.geometry.x), float(st.geometry.y), "NaN"],
                },
            }
            series = [(6000 + k, "Unknown device", values, null)]
            if code in modelled:
                series.append(
                    (
                        7000 + k,
                        "RIO-IFDM model",
                        np.round(values * rng.uniform(0.8, 1.2), 1),
                        np.zeros(HOURS, bool),
                    )
                )
            if code in estimated:
                est_null = np.ones(HOURS, bool)
                est_null[-6:] = False
                series.append((8000 + k, "schatting (estimated)", np.round(values * 1.1 + 2, 1), est_null))
            for sid, proc, vals, nulls in series:
                items.append(
                    {
                        "id": str(sid),
                        "label": f"Nitrogen dioxide {sid} - procedure, {code} - {name}",
                        "uom": "µg/m³",
                        "station": station,
                        "parameters": {
                            "phenomenon": {"id": "8", "label": "Nitrogen dioxide"},
                            "category": {"id": "8", "label": "Nitrogen dioxide"},
                            "procedure": {"id": str(sid), "label": f"{sid} - {proc} - procedure"},
                        },
                        "lastValue": {"timestamp": ms[-1], "value": None if nulls[-1] else float(vals[-1])},
                    }
                )
                # measured series report every hour (null = gap); model/estimate series only their hours
                data[str(sid)] = {
                    "values": [
                        {"timestamp": t, "value": None if n else float(v)}
                        for t, v, n in zip(ms, vals, nulls)
                        if not (n and proc == "schatting (estimated)")
                    ]
                }
        return items, data


def _pages(features: list[dict], collection: str) -> list[dict]:
    """OGC API Features pages of ``PAGE_SIZE`` features with ``next`` links, as the service pages them."""
    base = f"https://geo.api.vlaanderen.be/GIPOD/ogc/features/v1/collections/{collection}/items"
    pages = []
    for off in range(0, max(len(features), 1), PAGE_SIZE):
        links = [{"rel": "self", "href": f"{base}?offset={off}&limit={PAGE_SIZE}"}]
        if off + PAGE_SIZE < len(features):
            links.append({"rel": "next", "href": f"{base}?offset={off + PAGE_SIZE}&limit={PAGE_SIZE}"})
        chunk = features[off : off + PAGE_SIZE]
        pages.append(
            {"type": "FeatureCollection", "features": chunk, "numberReturned": len(chunk), "links": links}
        )
    return pages
