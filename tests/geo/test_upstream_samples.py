"""Every real upstream sample in ../shared/data/upstream-samples/ through the live normalisers.

Each test names its file; the expected records were worked out by hand from the file (ids, public line numbers,
coordinates, periods, statuses, values, nulls). The samples are read from ../shared, never copied here.
"""

from __future__ import annotations

import datetime as dt
import json
import math

import pandas as pd
import pytest

from geo.data import upstream as u
from geo.data.upstream_delijn import LineBook, StopBook, region_names, unknown_lines, unknown_stops
from geo.data.upstream_gipod import STATUS_CLASSES, WORK_TYPES, cql2_filter, gipod_id
from geo.rules.works import PLANNED, RUNNING, status_class


@pytest.fixture(scope="module")
def sample(reference_dir):
    root = reference_dir / "upstream-samples"
    if not root.is_dir():
        pytest.skip("../shared/data/upstream-samples not available")

    def read(name):
        return json.loads((root / name).read_text(encoding="utf-8"))

    return read


def utc(text):
    return pd.Timestamp(text)


# --- GIPOD --------------------------------------------------------------------------------------------

GIPOD = "gipod/gipod_inname_punt_markten_2026-09-28.json"


def test_gipod_markets_sample_events_are_counted_not_works(sample):
    fc = sample(GIPOD)
    layer = u.normalise_works(fc, now="2026-09-28T08:00:00Z")
    assert len(layer) == 0 and layer.attrs["skipped"] == {"event": 45}  # 45 occurrences, all Type Evenement
    props = [f["properties"] for f in fc["features"]]
    # what the works request asks the server for would have excluded every one of them: no Type Werk or
    # Grondwerk, and Lopende (the events' and markets' status) is none of the four work statuses
    assert {p["Type"] for p in props} == {"Evenement"} and not {p["Type"] for p in props} & set(WORK_TYPES)
    assert {p["Status"] for p in props} == {"Lopende"} and "Lopende" not in STATUS_CLASSES
    assert cql2_filter() == "Type IN ('Werk','Grondwerk') AND Status IN ('In uitvoering','Concreet gepland')"
    # PublicDomainOccupancyTypes is one ;-separated string: "Markt", and "Markt;Andere" on the 4 records of
    # 15573170; ContactOrganisations is null everywhere
    kinds = [(p["GipodId"], p["PublicDomainOccupancyTypes"]) for p in props]
    assert sorted({k for _, k in kinds}) == ["Markt", "Markt;Andere"]
    assert [g for g, k in kinds if k == "Markt;Andere"] == [15573170] * 4
    assert {p["ContactOrganisations"] for p in props} == {None}


def test_gipod_markets_sample_records_make_one_work_per_gipod_id(sample):
    fc = sample(GIPOD)
    # the record mechanics do not depend on the type or status: read the same features as running works
    for f in fc["features"]:
        f["properties"]["Type"] = "Grondwerk"
        f["properties"]["Status"] = "In uitvoering"
    layer = u.normalise_works(fc, now="2026-09-28T08:00:00Z").set_index("id")
    assert layer.index.tolist() == [
        "12350257",
        "12350279",
        "12351512",
        "12351519",
        "12351544",
        "12351561",
        "12351588",
        "15573170",
        "20382376",
        "20382503",
    ]
    assert (
        layer["occurrences"].tolist() == [5, 4, 4, 8, 4, 4, 4, 4, 4, 4] and layer["occurrences"].sum() == 45
    )
    assert (status_class(layer["status"].tolist()) == RUNNING).all()
    assert (layer["hindrance"] == -1).all()  # no HINDER records given
    first = layer.loc["12350257"]
    # 2026-09-28 08:00Z: the occurrence 06:00-11:00Z of that day is running
    assert (first["start"], first["end"]) == (utc("2026-09-28T06:00:00Z"), utc("2026-09-28T11:00:00Z"))
    # INNAME_PUNT: a point per record, the same point every week, so the work's geometry is that point
    assert (first.geometry.geom_type, first.geometry.x, first.geometry.y) == (
        "Point",
        4.35108016,
        51.17454004,
    )
    assert (
        first["description"] == "Gemengde markt\nKioskplaats"
        and first["owner"] == "Stad Antwerpen - Stadsbeheer"
    )
    # 12351512 has not started yet: its next occurrence, 2026-10-04 07:00-15:00Z, is shown
    nxt = layer.loc["12351512"]
    assert (nxt["start"], nxt["end"]) == (utc("2026-10-04T07:00:00Z"), utc("2026-10-04T15:00:00Z"))
    later = u.normalise_works(fc, now="2026-09-28T12:00:00Z").set_index("id").loc["12350257"]
    assert later["start"] == utc("2026-10-05T06:00:00Z")  # the morning one has ended: next
    after = u.normalise_works(fc, now="2026-11-01T00:00:00Z").set_index("id").loc["12350257"]
    assert (after["start"], after["end"]) == (
        utc("2026-10-26T07:00:00Z"),
        utc("2026-10-26T12:00:00Z"),
    )  # last


def test_gipod_id_from_the_occurrence_id_when_the_property_is_missing(sample):
    feat = sample(GIPOD)["features"][13]
    assert feat["id"] == "INNAME_PUNT.12351519-2609300600"
    feat["properties"].pop("GipodId")
    assert gipod_id(feat) == "12351519"
    assert status_class(["In uitvoering", "Concreet gepland", "Lopende", "Uitgevoerd"]).tolist() == [
        RUNNING,
        PLANNED,
        0,
        0,
    ]


# --- De Lijn ------------------------------------------------------------------------------------------


def test_delijn_lines_by_entity_internal_and_public_numbers(sample):
    payload = sample("delijn/lines_by_entity.json")
    book = LineBook.from_payloads(payload)
    assert len(book.lines) == 286 and book.entities == {"1"}
    assert sum(line.public != internal for (_, internal), line in book.lines.items()) == 83
    assert (book.get("1", "908").public, book.get("1", "908").region) == ("8", "ME")
    assert (book.get("1", "953").public, book.get("1", "63").public, book.get("1", "63").region) == (
        "F3",
        "Flex",
        "AN",
    )
    assert (book.get("1", "911").public, book.get("1", "911").region) == ("P", "AN")
    assert book.get("1", "12").public == "12" and book.get("3", "620") is None


def test_delijn_detours_sample_names_internal_lines_and_stops_without_coordinates(sample):
    payload = sample("delijn/detours.json")
    # without the entity-3 line list the public number of internal line 620 is unknown: never guessed
    assert u.normalise_detours(payload).attrs["skipped"] == {"line_unknown": 1}
    lines = {
        "lijnen": [
            {"entiteitnummer": "3", "lijnnummer": "620", "lijnnummerPubliek": "620", "vervoerRegioCode": "VR"}
        ]
    }  # made here: the entity-3 list is not in the samples
    # the stop 3/308530 carries no coordinates and is not in the sample stop list: it must be looked up
    stops = u.normalise_stops(sample("delijn/stops_by_municipality.json"))
    assert unknown_stops(payload, stops) == [("3", "308530")]
    missing = u.normalise_detours(payload, lines, stops, {"3_308530": None})  # the lookup answered 404
    assert len(missing) == 0 and missing.attrs["skipped"] == {"stop_not_found": 1}
    halte = {
        "entiteitnummer": "3",
        "haltenummer": "308530",
        "omschrijving": "Aristide Briand",
        "geoCoordinaat": {"latitude": 50.8346, "longitude": 4.2984},
    }  # made here
    d = u.normalise_detours(payload, lines, stops, {"3_308530": halte})
    row = d.iloc[0]
    assert (row["id"], row["title"], row["entity"], row["region"], row["lines"], row["unserved_stops"]) == (
        "873876",
        "Werken thv de halte Aristide Briand",
        "3",
        "VR",
        "620",
        "3_308530",
    )
    assert row["start"] == utc("2023-04-20T22:00:00Z") and pd.isna(row["end"])  # no eindDatum: open-ended
    assert row["days"] == "MAANDAG,DINSDAG,WOENSDAG,DONDERDAG,VRIJDAG,ZATERDAG,ZONDAG"
    assert row["type"] == "" and math.isnan(row["delay_min"])  # no type in the real answer
    assert (row.geometry.x, row.geometry.y) == (4.2984, 50.8346) and not d.geometry.is_empty.any()


MADE_620 = {
    "lijnen": [
        {"entiteitnummer": "3", "lijnnummer": "620", "lijnnummerPubliek": "620", "vervoerRegioCode": "VR"}
    ]
}  # made here: the entity-3 list is not in the samples
MADE_308530 = {
    "entiteitnummer": "3",
    "haltenummer": "308530",
    "geoCoordinaat": {"latitude": 50.8346, "longitude": 4.2984},
}  # made here


def test_delijn_earlier_detours_sample_sends_its_type_in_upper_case(sample):
    earlier, later = sample("delijn/detours_2024-03-07_with_type.json"), sample("delijn/detours.json")
    # the same per-stop answer recorded twice: the earlier one carries "type": "WERKEN" and no top-level links
    assert earlier["omleidingen"][0]["type"] == "WERKEN" and "type" not in later["omleidingen"][0]
    assert "links" not in earlier and "links" in later
    a = u.normalise_detours(earlier, MADE_620, None, {"3_308530": MADE_308530}).iloc[0]
    b = u.normalise_detours(later, MADE_620, None, {"3_308530": MADE_308530}).iloc[0]
    assert (a["id"], a["type"], b["type"]) == ("873876", "werken", "")  # read lower case; absent is ""
    same = ["id", "title", "entity", "region", "lines", "line_details", "unserved_stops", "start", "days"]
    assert [a[c] for c in same] == [b[c] for c in same] and pd.isna(a["end"]) and pd.isna(b["end"])
    assert a["start"] == utc("2023-04-20T22:00:00Z")  # 2023-04-21T00:00:00 in Brussels (CEST)


def test_delijn_transport_regions_samples_name_every_region_the_lines_use(sample):
    from geo.data.demo import REGION_NAME

    names = region_names(sample("delijn/vervoerregios.json"))
    assert len(names) == 15 and names == REGION_NAME  # the demo's table is the real one
    assert (names["AN"], names["KE"], names["RO"]) == ("Antwerpen", "Kempen", "Midwest (Roeselare)")
    assert region_names(sample("delijn/vervoerregio_AA.json")) == {"AA": "Aalst"}
    used = {
        line["vervoerRegioCode"]
        for f in ("lines_by_entity", "lines_by_region_AA", "lines_by_municipality_1866")
        for line in sample(f"delijn/{f}.json")["lijnen"]
    }
    assert used == {"AN", "KE", "ME", "LV", "LI", "AA"} and used <= set(names)


def test_delijn_lines_by_region_sample_validity_and_repeated_public_numbers(sample):
    payload = sample("delijn/lines_by_region_AA.json")
    book = LineBook.from_payloads(payload, "2024-03-07")
    assert len(book.lines) == 34 and book.entities == {"2"}
    assert {line.region for line in book.lines.values()} == {"AA"}
    # public "1" is two lines of entity 2: Dendermonde (internal 13) and Aalst (internal 107)
    ones = sorted(n for (_, n), line in book.lines.items() if line.public == "1")
    assert ones == ["107", "13"]
    thirteen, hundred_seven = book.get("2", "13"), book.get("2", "107")
    assert (thirteen.valid_from, thirteen.valid_to) == (dt.date(2024, 2, 26), dt.date(2024, 3, 30))
    assert thirteen.valid_on(dt.date(2024, 3, 7)) and not thirteen.valid_on(dt.date(2024, 3, 31))
    assert hundred_seven.valid_on(dt.date(2024, 4, 1)) and not hundred_seven.valid_on(dt.date(2024, 4, 2))
    # before its timetable period every line is "not yet valid": it serves no stop
    early = LineBook.from_payloads(payload, "2024-02-01")
    assert all(early.not_yet_valid("2", n) for (_, n) in early.lines)
    stop = {"entiteitnummer": "2", "haltenummer": "1", "geoCoordinaat": "50.94,4.04"}  # made here
    served = {"2_1": {"lijnrichtingen": [{"entiteitnummer": "2", "lijnnummer": "13"}]}}
    layer = u.normalise_stops({"haltes": [stop]}, served, payload, on="2024-02-01T12:00:00Z")
    assert layer["line_ids"].tolist() == [""] and layer.attrs["skipped"] == {"line_not_yet_valid": 1}
    assert u.normalise_stops({"haltes": [stop]}, served, payload, on="2024-03-07")["line_ids"].tolist() == [
        "2_13"
    ]
    # a next timetable version of the same line (made here) is chosen once it applies
    nxt = {
        **payload["lijnen"][0],
        "lijnnummerPubliek": "803",
        "lijnGeldigVan": "2024-03-30",
        "lijnGeldigTot": "2024-06-30",
    }
    both = [payload, {"lijnen": [nxt]}]
    assert LineBook.from_payloads(both, "2024-03-07").get("2", "803").valid_to == dt.date(2024, 3, 29)
    assert LineBook.from_payloads(both, "2024-04-15").get("2", "803").valid_to == dt.date(2024, 6, 30)


def test_delijn_lines_by_municipality_sample_keeps_entities_apart(sample):
    leuven, antwerp = sample("delijn/lines_by_municipality_1866.json"), sample("delijn/lines_by_entity.json")
    book = LineBook.from_payloads([antwerp, leuven], "2024-03-07")
    mine = LineBook.from_payloads(leuven, "2024-03-07")
    assert len(mine.lines) == 74 and mine.entities == {"1", "3", "4"}
    assert sorted((e, n, line.public, line.region) for (e, n), line in mine.lines.items() if e != "3") == [
        ("1", "320", "32a", "KE"),
        ("1", "321", "32b", "KE"),
        ("4", "178", "178", "LI"),
        ("4", "179", "179", "LI"),
    ]
    # the same public number in two entities: Leuven's city bus 2 (3/302) is not Antwerp's tram 2 (1/2)
    assert (book.get("3", "302").public, book.get("1", "2").public) == ("2", "2")
    assert (book.get("3", "302").region, book.get("1", "2").region) == ("LV", "AN")
    # the same internal number in two entities: 3/907 is Leuven's night bus N7, entity 1 has no line 907
    assert book.get("3", "907").public == "N7" and book.get("1", "907") is None
    # a detour of tram 2 names (1, 2); a Leuven stop served by bus 2 (made here: 3/302) shares no line with it
    stops = u.normalise_stops(
        {"haltes": [sample("delijn/stops_by_municipality.json")["haltes"][0]]},
        {"3_300483": {"lijnrichtingen": [{"entiteitnummer": "3", "lijnnummer": "302"}]}},
        book,
    )
    assert stops[["id", "lines", "line_ids"]].values.tolist() == [["3_300483", "2", "3_302"]]
    tram = {
        "omleidingen": [
            {"referentieOmleiding": 1, "lijnrichtingen": [{"entiteitnummer": "1", "lijnnummer": "2"}]}
        ]
    }
    assert unknown_lines(tram, book) == [] and unknown_lines(tram, mine) == [("1", "2")]


def test_delijn_stops_by_municipality_sample(sample):
    stops = u.normalise_stops(sample("delijn/stops_by_municipality.json")).set_index("id")
    assert len(stops) == 417 and stops["entity"].value_counts().to_dict() == {"3": 415, "4": 2}
    row = stops.loc["3_300483"]
    assert (row["name"], row["municipality"], row["lines"]) == ("Doleeg", "Leuven", "")
    assert (row.geometry.x, row.geometry.y) == (4.647603, 50.860721)
    assert stops.attrs["skipped"] == {}


def test_delijn_stop_and_its_directions_samples(sample):
    stop, directions = sample("delijn/stop.json"), sample("delijn/directions.json")
    assert StopBook.from_sources(None, {"4_408581": stop}).place("4", "408581") == (4.68115, 50.868276)
    # the real lijnrichtingen carry the internal lijnnummer only: without the entity-4 line list nothing is listed
    alone = u.normalise_stops({"haltes": [stop]}, {"4_408581": directions})
    assert alone["lines"].tolist() == [""] and alone.attrs["skipped"] == {"line_unknown": 2}
    lines = {
        "lijnen": [
            {"entiteitnummer": "4", "lijnnummer": "178", "lijnnummerPubliek": "178"},
            {"entiteitnummer": "4", "lijnnummer": "179", "lijnnummerPubliek": "179"},
        ]
    }  # made here
    s = u.normalise_stops({"haltes": [stop]}, {"4_408581": directions}, lines)
    assert s[["id", "name", "municipality", "lines"]].values.tolist() == [
        ["4_408581", "Koning Boudewijnlaan", "Leuven", "178,179"]
    ]


def test_delijn_stops_in_vicinity_sample_has_no_stop_key(sample):
    # /haltes/indebuurt answers {type, id, naam, afstand, geoCoordinaat}: no entiteitnummer, not a stop list
    layer = u.normalise_stops(sample("delijn/stops_in_vicinity.json"))
    assert len(layer) == 0 and layer.attrs["skipped"] == {"no_id": 7}


def test_delijn_entities_sample_numbers_the_regions_as_we_assume(sample):
    from geo.data.demo import ENTITY_NAME

    entities = {e["entiteitnummer"]: e["omschrijving"] for e in sample("delijn/entities.json")["entiteiten"]}
    assert (
        entities
        == ENTITY_NAME
        == {
            "1": "Antwerpen",
            "2": "Oost-Vlaanderen",
            "3": "Vlaams-Brabant",
            "4": "Limburg",
            "5": "West-Vlaanderen",
        }
    )


def test_delijn_disruptions_sample_is_not_a_detour(sample):
    layer = u.normalise_detours(sample("delijn/disruptions.json"))  # storingen only, no 'omleidingen' array
    assert len(layer) == 0 and layer.attrs["skipped"] == {}


# --- IRCEL-CELINE -------------------------------------------------------------------------------------


def test_ircel_stations_sample(sample):
    features = sample("ircel/upstream-stations.json")
    st = u.normalise_stations(features)
    assert st[["id", "name", "no2"]].values.tolist() == [
        ["42R803", "Antwerpen (Park Spoor Noord)", True],
        ["47E013", "Vorst", True],
    ]
    assert (st.geometry.x[0], st.geometry.y[0]) == (
        4.428454177535564,
        51.22862981306374,
    )  # "NaN" altitude dropped
    labels = {
        ts_id: t["procedure"]["label"] for f in features for ts_id, t in f["properties"]["timeseries"].items()
    }
    assert labels["10741"] == "10741 -  - procedure" and labels["10742"] == "10742 - THIS 42C - procedure"
    # real procedure labels ("Unknown device", "FIDAS 200", "THIS 42C", empty) are measurements
    assert {u.series_kind({"parameters": {"procedure": {"label": x}}}) for x in labels.values()} == {
        "measured"
    }
    assert u.series_kind({"parameters": {"procedure": {"label": "DAILY CORRECTION TEOM"}}}) == "measured"


def _series_of(stations: list) -> list:
    """/timeseries items built from the stations sample's expanded timeseries (same ids and phenomena)."""
    out = []
    for f in stations:
        for ts_id, t in f["properties"]["timeseries"].items():
            out.append(
                {
                    "id": ts_id,
                    "station": {
                        "properties": {"id": f["properties"]["id"], "label": f["properties"]["label"]},
                        "geometry": f["geometry"],
                    },
                    "parameters": {"phenomenon": t["phenomenon"], "procedure": t["procedure"]},
                }
            )
    return out


def test_ircel_timeseries_sample_values(sample):
    stations, data = sample("ircel/upstream-stations.json"), sample("ircel/upstream-timeseries.json")
    # the sample's series are 10744 (PM2.5) and 7185 (NO): no NO2 row may come out of them
    assert len(u.normalise_no2(_series_of(stations), data)) == 0
    # read as NO2 they give 4 hourly values each, epoch ms = end of the hour, 0 kept as 0
    as_no2 = [
        {**s, "parameters": {**s["parameters"], "phenomenon": {"id": "8"}}} for s in _series_of(stations)
    ]
    no2 = u.normalise_no2(as_no2, data)
    got = [(r.station_id, str(r.timestamp), r.value) for r in no2.itertuples()]
    assert got[:4] == [
        ("42R803", "2019-04-23 22:00:00+00:00", 18.5),
        ("42R803", "2019-04-23 23:00:00+00:00", 18.0),
        ("42R803", "2019-04-24 00:00:00+00:00", 19.0),
        ("42R803", "2019-04-24 01:00:00+00:00", 18.5),
    ]
    assert [g[2] for g in got[4:]] == [0.0] * 4 and {g[0] for g in got[4:]} == {"47E013"}
    # series without values in the getData answer (10741, 10743, …) are counted, not silently lost
    assert no2.attrs["skipped"] == {"no_values": 5}
