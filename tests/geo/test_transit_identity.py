"""Lines by identity: stops and detours are matched on (entity, internal line number), never on the public one.

The real entity-1 line list (``../shared/data/upstream-samples/delijn/lines_by_entity.json``) repeats public
numbers: public "2" is tram 2 (internal 2, "P+R Merksem - Hoboken Zwaantjes"), bus 40 and bus 948 (Lier), all
in region AN. The layers below go through the live normalisers with that list; the geography is the
constructed world of ``rules_world`` (P on the right bank; 0.001 deg of latitude = 111 m).
"""

from __future__ import annotations

import json

import pytest

import rules_world as W
from geo import Engine
from geo.data import upstream as u
from geo.data.upstream_delijn import LineBook
from geo.service.disruptions import disruptions

LAT, LNG = W.P
FAR = round(LAT + 0.010, 4)  # 1.1 km north of P: no stop of P's within 400 m of it
ON = "2024-03-07"  # the day the sample list was current


@pytest.fixture(scope="module")
def lines(reference_dir):
    path = reference_dir / "upstream-samples" / "delijn" / "lines_by_entity.json"
    if not path.exists():
        pytest.skip("../shared/data/upstream-samples not available")
    return json.loads(path.read_text(encoding="utf-8"))


def halte(number: str, lat: float) -> dict:
    return {
        "entiteitnummer": "1",
        "haltenummer": number,
        "omschrijving": f"Halte {number}",
        "omschrijvingGemeente": "Antwerpen",
        "geoCoordinaat": {"latitude": lat, "longitude": LNG},
    }


def served_by(*internal: str) -> dict:
    # as the real lijnrichtingen: entity and internal number only
    return {
        "lijnrichtingen": [{"entiteitnummer": "1", "lijnnummer": n, "richting": "HEEN"} for n in internal]
    }


def omleiding(ref: int, internal: str, unserved: str) -> dict:
    return {
        "titel": f"Omleiding lijn {internal}",
        "referentieOmleiding": ref,
        "periode": {"startDatum": "2026-11-01T05:00:00"},
        "lijnrichtingen": [{"entiteitnummer": "1", "lijnnummer": internal, "richting": "TERUG"}],
        "haltes": [{"entiteitnummer": "1", "haltenummer": unserved}],
        "omleidingsDagen": [],
    }


def engine_of(lines, detours):
    # stop 100948 at P: only bus 948 (public "2"); stop 100002 far north: tram 2 (public "2")
    stops = u.normalise_stops(
        {"haltes": [halte("100948", LAT), halte("100002", FAR)]},
        {"1_100948": served_by("948"), "1_100002": served_by("2")},
        lines,
        on=ON,
    )
    layer = u.normalise_detours({"omleidingen": detours}, lines, stops, on=ON)
    base = W.engine()
    layers = {
        name: getattr(base, name) for name in ("service_area", "lez", "river", "works", "stations", "no2")
    }
    return Engine.from_layers({**layers, "stops": stops, "detours": layer}, base.manifest), stops, layer


def test_the_real_list_repeats_public_numbers(lines):
    book = LineBook.from_payloads(lines, ON)
    twos = {n: line.region for (e, n), line in book.lines.items() if line.public == "2"}
    # within region AN: tram 2, bus 40, bus 948; entity 1 also has a "2" in Kempen (Mol, Turnhout) and Mechelen
    assert sorted(n for n, r in twos.items() if r == "AN") == ["2", "40", "948"]
    assert {n: r for n, r in twos.items() if r != "AN"} == {"802": "KE", "812": "KE", "902": "ME"}
    assert (book.get("1", "2").mode, book.get("1", "948").mode) == ("TRAM", "BUS")


def test_a_detour_of_tram_2_is_not_reported_at_a_stop_only_bus_948_serves(lines):
    eng, stops, layer = engine_of(lines, [omleiding(1, "2", "100002")])
    assert stops.set_index("id")["lines"].to_dict() == {"1_100002": "2", "1_100948": "2"}
    assert stops.set_index("id")["line_ids"].to_dict() == {"1_100002": "1_2", "1_100948": "1_948"}
    # a stop lies within 400 m of P (bus 948, public "2"), so no fallback: the tram's detour is not P's
    at_p = disruptions(eng, LAT, LNG, W.NOW)
    assert at_p["transit"] == [] and at_p["summary"]["transitDisruptions"] == 0
    # at the tram stop it is listed, under the public number, with the line's identity
    at_tram = disruptions(eng, FAR, LNG, W.NOW)["transit"]
    assert [(t["id"], t["lines"]) for t in at_tram] == [("1", ["2"])]
    assert at_tram[0]["lineDetails"] == [
        {
            "line": "2",
            "entity": "1",
            "number": "2",
            "mode": "TRAM",
            "network": None,  # the 2024 list does not carry vervoerslaag
            "region": "AN",
            "regionName": None,  # no /vervoerregios answer given
        }
    ]


def test_a_detour_of_bus_948_is_reported_at_its_stop_and_not_at_the_tram_stop(lines):
    eng, _, _ = engine_of(lines, [omleiding(2, "948", "100948")])
    at_p = disruptions(eng, LAT, LNG, W.NOW)["transit"]
    assert [(t["id"], t["lines"], [d["number"] for d in t["lineDetails"]]) for t in at_p] == [
        ("2", ["2"], ["948"])
    ]
    assert disruptions(eng, FAR, LNG, W.NOW)["transit"] == []


def test_a_detour_on_two_lines_with_the_same_public_number_shows_it_once_and_counts_two_lines(lines):
    both = omleiding(3, "2", "100002")
    both["lijnrichtingen"].append({"entiteitnummer": "1", "lijnnummer": "40", "richting": "HEEN"})
    both["haltes"] = []  # a re-route without skipped stops: only the number of lines can raise the severity
    eng, _, layer = engine_of(lines, [both])
    assert layer["lines"].tolist() == ["2"]
    (item,) = disruptions(eng, FAR, LNG, W.NOW)["transit"]
    assert item["lines"] == ["2"] and [d["number"] for d in item["lineDetails"]] == ["2", "40"]
    # tram 2 and bus 40 are two lines rerouted: medium (>= 2 lines), not the low of one line
    assert (item["severity"], item["estimatedDelayMin"]) == ("medium", 3)


def test_without_identities_public_numbers_are_compared_with_leading_zeros_removed():
    # a layer built without line identities (e.g. a detour that names only lijnNummerPubliek) falls back to
    # the contract's rule: public numbers, leading zeros removed, entity-1 stops
    eng = W.engine(
        stop_rows=[("1_1", "1", LAT, LNG, "007")],
        detour_rows=[("9", "1", "7", "", "2026-11-01T00:00:00Z", None, "", None)],
    )
    assert [t["id"] for t in disruptions(eng, LAT, LNG, W.NOW)["transit"]] == ["9"]
    named_publicly = u.normalise_detours(
        {
            "omleidingen": [
                {
                    "titel": "t",
                    "referentieOmleiding": 10,
                    "periode": {"startDatum": "2026-11-01T05:00:00"},
                    "lijnrichtingen": [{"entiteitnummer": "1", "lijnNummerPubliek": "07"}],
                    "haltes": [],
                }
            ]
        }
    )
    assert json.loads(named_publicly["line_details"][0]) == [
        {
            "line": "07",
            "entity": "1",
            "number": None,
            "mode": None,
            "network": None,
            "region": None,
            "regionName": None,
        }
    ]
    stops = u.normalise_stops(
        {"haltes": [halte("1", LAT)]},
        {"1_1": served_by("7")},
        {
            "lijnen": [
                {"entiteitnummer": "1", "lijnnummer": "7", "lijnnummerPubliek": "7", "vervoerRegioCode": "AN"}
            ]
        },
    )
    base = W.engine()
    layers = {
        name: getattr(base, name) for name in ("service_area", "lez", "river", "works", "stations", "no2")
    }
    eng = Engine.from_layers({**layers, "stops": stops, "detours": named_publicly}, base.manifest)
    assert [t["lines"] for t in disruptions(eng, LAT, LNG, W.NOW)["transit"]] == [["7"]]
