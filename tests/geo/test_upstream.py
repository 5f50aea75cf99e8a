"""Normalisers on payloads in the real upstream formats.

De Lijn payloads are the example payloads of the published OpenAPI file (read from ../shared/data); GIPOD and
IRCEL payloads are written here by hand after the samples in ../shared/data/UPSTREAM_FORMATS.md.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import shapely
from hypothesis import given
from hypothesis import strategies as st

from geo.data.layers import SCHEMAS
from geo.data.upstream import (
    UpstreamFormatError,
    normalise_detours,
    normalise_lez,
    normalise_no2,
    normalise_stations,
    normalise_stops,
    normalise_works,
    parse_geo_coordinaat,
    parse_time,
    strip_line,
)


def utc(text):
    return pd.Timestamp(text)


@pytest.fixture(scope="module")
def delijn(reference_dir):
    spec = json.loads((reference_dir / "transit" / "delijn_kern_opendata_v1.openapi.json").read_text())

    def example(path):
        return next(iter(spec["paths"][path]["get"]["responses"]["200"]["content"].values()))["example"]

    return example


def _columns_ok(layer, name):
    assert list(layer.columns) == list(SCHEMAS[name]) + ["geometry"]
    assert layer.crs.to_string() == "EPSG:4326"


# --- GIPOD --------------------------------------------------------------------------------------------


def gipod_point(gid, lon, lat, **props):
    base = {
        "GipodId": gid,
        "Uri": f"https://gipod.vlaanderen.be/{gid}",
        "Description": "Proefwerk riolering",
        "Type": "Grondwerk",
        "Status": "In uitvoering",
        "Start": "2026-06-01T06:00:00Z",
        "End": "2026-07-15T16:00:00Z",
        "Owner": "water-link",
        "GroundworkCategory": "Nutswerken",
        "GroundworkPartOfTrenchSynergy": False,
        "LastModifiedOn": "2026-05-20T09:12:00Z",
    }
    base.update(props)
    return {
        "type": "Feature",
        "id": str(gid),
        "geometry": {"type": "Point", "coordinates": [lon, lat]},
        "properties": base,
    }


def test_gipod_inname_punt_page_as_documented():
    fc = {
        "type": "FeatureCollection",
        "features": [gipod_point(1143473, 4.40512, 51.21734)],
        "links": [{"rel": "next", "href": "...?offset=100&limit=100"}],
    }
    works = normalise_works(fc)
    _columns_ok(works, "works")
    row = works.iloc[0]
    assert (row["id"], row["description"], row["status"], row["type"], row["owner"]) == (
        "1143473",
        "Proefwerk riolering",
        "In uitvoering",
        "Grondwerk",
        "water-link",
    )
    assert row["start"] == utc("2026-06-01T06:00:00Z") and row["end"] == utc("2026-07-15T16:00:00Z")
    assert (row.geometry.x, row.geometry.y) == (4.40512, 51.21734)
    assert str(works["start"].dtype) == "datetime64[ms, UTC]"


def test_gipod_pages_polygons_events_nulls_and_bad_records():
    polygon = {
        "type": "Feature",
        "id": "2000001",
        "geometry": {
            "type": "Polygon",
            "coordinates": [[[4.40, 51.20], [4.41, 51.20], [4.41, 51.21], [4.40, 51.21], [4.40, 51.20]]],
        },
        "properties": {
            "GipodId": 2000001,
            "Description": "Heraanleg Leien",
            "Type": "Werk",
            "Status": "Concreet gepland",
            "Start": "2026-12-01T07:00:00",
            "End": None,
            "Owner": "Stad Antwerpen",
        },
    }
    page1 = {
        "type": "FeatureCollection",
        "features": [
            gipod_point(5, 4.4, 51.2, Status="Concreet gepland"),
            gipod_point(7, 4.5, 51.1, Type="Evenement", Description="Braderie"),
            {"type": "Feature", "id": "9", "geometry": None, "properties": {"GipodId": 9, "Type": "Werk"}},
        ],
    }
    page2 = {
        "type": "FeatureCollection",
        "features": [gipod_point(5, 4.4, 51.2, Status="In uitvoering"), polygon],
    }
    works = normalise_works([page1, page2])
    assert works["id"].tolist() == ["5", "2000001"]  # sorted, event dropped
    assert works.loc[0, "status"] == "In uitvoering"  # the later page wins
    poly = works.iloc[1]
    assert shapely.box(4.40, 51.20, 4.41, 51.21).contains(poly.geometry)
    assert pd.isna(poly["end"])
    assert poly["start"] == utc("2026-12-01T06:00:00Z")  # no zone: Brussels winter time
    assert works.attrs["skipped"] == {"event": 1, "no_geometry": 1}
    assert works["occurrences"].tolist() == [1, 1]  # the same occurrence read twice


def _box_feature(gid, stamp, x0, y0, x1, y1, **props):
    return {
        "type": "Feature",
        "id": f"INNAME.{gid}-{stamp}",
        "geometry": {"type": "Polygon", "coordinates": [[[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]]},
        "properties": {**gipod_point(gid, 0, 0)["properties"], **props},
    }


def test_gipod_records_of_one_work_collapse_running_first():
    """A work published as three records: two stretches running (different dates), a third planned. The row
    is running, shows the running record current at ``now``, covers the union of the running stretches only,
    and counts every record; another occupation type is not a work."""
    a = _box_feature(
        8,
        "2611010600",
        4.400,
        51.200,
        4.401,
        51.2002,
        Start="2026-11-01T06:00:00Z",
        End="2026-12-01T16:00:00Z",
    )
    b = _box_feature(
        8,
        "2611020600",
        4.403,
        51.200,
        4.404,
        51.2002,
        Start="2026-11-02T06:00:00Z",
        End="2026-11-10T16:00:00Z",
    )
    c = _box_feature(
        8,
        "2612150600",
        4.406,
        51.200,
        4.407,
        51.2002,
        Status="Concreet gepland",
        Start="2026-12-15T06:00:00Z",
        End=None,
    )
    other = _box_feature(12, "2611010600", 4.5, 51.3, 4.501, 51.3002, Type="Signalisatie")
    works = normalise_works(
        {"type": "FeatureCollection", "features": [c, b, a, other]}, now="2026-11-16T07:00:00Z"
    )
    assert works["id"].tolist() == ["8"] and works.attrs["skipped"] == {"not_a_work": 1}
    row = works.iloc[0]
    assert (row["status"], row["occurrences"]) == ("In uitvoering", 3)
    # at 16 Nov the first stretch's record runs (1 Nov - 1 Dec), the second's ended on 10 Nov
    assert (row["start"], row["end"]) == (utc("2026-11-01T06:00:00Z"), utc("2026-12-01T16:00:00Z"))
    assert row.geometry.geom_type == "MultiPolygon" and row.geometry.bounds == (4.400, 51.200, 4.404, 51.2002)
    # all three planned: the record whose dates span ``now`` (a) is still the one shown; the extent is all three
    planned = [dict(f, properties={**f["properties"], "Status": "Concreet gepland"}) for f in (a, b, c)]
    row = normalise_works(
        {"type": "FeatureCollection", "features": planned}, now="2026-11-16T07:00:00Z"
    ).iloc[0]
    assert row["start"] == utc("2026-11-01T06:00:00Z") and row.geometry.bounds == (
        4.400,
        51.200,
        4.407,
        51.2002,
    )


def test_gipod_hindrances_validated_merged_and_linked():
    works = {"type": "FeatureCollection", "features": [gipod_point(5, 4.4, 51.2), gipod_point(6, 4.41, 51.2)]}

    def hinder(**props):
        return {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [4.4, 51.2]},
            "properties": props,
        }

    pages = {
        "type": "FeatureCollection",
        "features": [
            hinder(
                GipodId=5,
                HindranceStatus="Gevalideerd",
                SevereHindrance=False,
                Consequences="Versmalde rijstroken;Handelaars moeilijk bereikbaar",
            ),
            # a second zone of the same work, linked by HindranceConsequenceOf (a URI), its list a JSON array
            hinder(
                HindranceConsequenceOf="https://gipod.api.vlaanderen.be/api/v1/public-domain-occupancies/5",
                HindranceStatus="Gevalideerd",
                SevereHindrance="true",
                Consequences=["Versmalde rijstroken"],
            ),
            # not validated (the value is made up here: only "Gevalideerd" was seen): left out and counted
            hinder(
                GipodId=6,
                HindranceStatus="Ingediend",
                SevereHindrance=True,
                Consequences="Geen doorgang voor fietsers",
            ),
            hinder(HindranceStatus="Gevalideerd", Consequences="Versmalde rijstroken"),  # no work: counted
        ],
    }
    layer = normalise_works(works, hindrance_pages=pages).set_index("id")
    assert (layer.loc["5", "hindrance"], layer.loc["5", "consequences"]) == (
        1,
        "Handelaars moeilijk bereikbaar;Versmalde rijstroken",
    )
    assert (layer.loc["6", "hindrance"], layer.loc["6", "consequences"]) == (-1, "")
    assert layer.attrs["skipped"] == {"hindrance_not_validated": 1, "hindrance_no_work": 1}
    with pytest.raises(UpstreamFormatError, match="HINDER"):
        normalise_works(works, hindrance_pages={"type": "Feature"})


def test_gipod_wrong_container_is_a_format_error():
    with pytest.raises(UpstreamFormatError, match="features"):
        normalise_works({"type": "Feature"})
    with pytest.raises(UpstreamFormatError):
        normalise_works("not json")


# --- De Lijn ------------------------------------------------------------------------------------------


def test_delijn_haltes_and_lijnrichtingen_examples(delijn):
    haltes = delijn("/haltes")
    lines = delijn("/haltes/{entiteitnummer}/{haltenummer}/lijnrichtingen")
    stops = normalise_stops(haltes, {"3_303980": lines})
    _columns_ok(stops, "stops")
    row = stops.iloc[0]
    assert (row["id"], row["entity"], row["number"], row["name"], row["municipality"], row["lines"]) == (
        "3_303980",
        "3",
        "303980",
        "Gilsonplein",
        "Leuven",
        "335",
    )
    assert (row.geometry.x, row.geometry.y) == (4.823559183763914, 50.98145261213046)


def test_delijn_geocoordinaat_object_lines_embedded_and_leading_zeros():
    haltes = {
        "haltes": [
            {
                "entiteitnummer": "1",
                "haltenummer": "101234",
                "omschrijving": "Rooseveltplaats",
                "omschrijvingGemeente": "Antwerpen",
                "geoCoordinaat": {"latitude": 51.2210, "longitude": 4.4210},
                "lijnrichtingen": [
                    {"lijnNummerPubliek": "12", "richting": "HEEN"},
                    {"lijnNummerPubliek": "007", "richting": "TERUG"},
                ],
            },
            {
                "entiteitnummer": "1",
                "haltenummer": "101235",
                "omschrijving": "Zonder positie",
                "geoCoordinaat": "not a coordinate",
            },
        ]
    }
    extra = {
        "1_101234": [
            {"lijnNummerPubliek": "12", "richting": "TERUG"},
            {"lijnNummerPubliek": "N1", "richting": "HEEN"},
        ]
    }
    stops = normalise_stops(haltes, extra)
    assert stops["lines"].tolist() == ["007,12,N1"]
    assert (stops.geometry.x[0], stops.geometry.y[0]) == (4.4210, 51.2210)
    assert stops.attrs["skipped"] == {"no_coordinates": 1}


def test_delijn_omleidingen_example_from_the_openapi_file(delijn):
    detours = normalise_detours(delijn("/omleidingen"))
    _columns_ok(detours, "detours")
    row = detours.iloc[0]
    assert (row["id"], row["title"], row["entity"], row["lines"], row["unserved_stops"], row["type"]) == (
        "0",
        "Antwerpen: Werken Brabo 2 Fr. Rooseveltplaats Werken",
        "3",
        "335",
        "3_303980",
        "string",
    )
    assert pd.isna(row["start"]) and pd.isna(row["end"])  # the example's dates are "string"
    assert (row.geometry.x, row.geometry.y) == (4.823559183763914, 50.98145261213046)
    assert len(detours) == 1  # storingen are not detours
    single = normalise_detours(delijn("/omleidingen/{referentieOmleiding}"))
    assert single["title"].tolist() == [row["title"]]


def test_delijn_omleiding_as_documented_with_object_coordinates_and_open_end():
    payload = {
        "omleidingen": [
            {
                "titel": "Antwerpen: Werken Brabo 2 Fr. Rooseveltplaats Werken",
                "omschrijving": "Periode : ... Hou rekening met een vertraging van ongeveer 10 minuten.",
                "periode": {"startDatum": "2026-05-04T05:00:00", "eindDatum": "2026-06-30T23:59:00"},
                "lijnrichtingen": [
                    {
                        "lijnNummerPubliek": "12",
                        "entiteitnummer": "1",
                        "lijnnummer": "12",
                        "richting": "HEEN",
                    },
                    {"lijnNummerPubliek": "12", "entiteitnummer": "1", "richting": "TERUG"},
                    {"lijnNummerPubliek": "007", "entiteitnummer": "1", "richting": "HEEN"},
                ],
                "haltes": [
                    {
                        "entiteitnummer": "1",
                        "haltenummer": "101234",
                        "omschrijving": "Rooseveltplaats",
                        "geoCoordinaat": {"latitude": 51.2210, "longitude": 4.4210},
                    },
                    {
                        "entiteitnummer": "1",
                        "haltenummer": "101236",
                        "omschrijving": "Astrid",
                        "geoCoordinaat": "51.2230,4.4230",
                    },
                ],
                "referentieOmleiding": 30506,
                "type": "werken",
                "omleidingsDagen": ["MAANDAG", "DINSDAG"],
            },
            {
                "titel": "Mechelen: Markt",
                "omschrijving": "Geen vertraging vermeld.",
                "periode": {"startDatum": "2026-11-01T06:00:00+01:00"},
                "lijnrichtingen": [],
                "haltes": [],
                "referentieOmleiding": 40001,
                "type": "evenement",
                "omleidingsDagen": [],
            },
        ],
        "storingen": [],
        "links": [],
    }
    d = normalise_detours(payload)
    assert d["id"].tolist() == ["30506", "40001"]
    a, b = d.iloc[0], d.iloc[1]
    assert (a["lines"], a["unserved_stops"], a["days"], a["delay_min"]) == (
        "12,007",
        "1_101234,1_101236",
        "MAANDAG,DINSDAG",
        10.0,
    )
    assert a["start"] == utc("2026-05-04T03:00:00Z") and a["end"] == utc("2026-06-30T21:59:00Z")
    assert math.isclose(a.geometry.x, 4.4220) and math.isclose(a.geometry.y, 51.2220)
    assert b.geometry.is_empty and pd.isna(b["end"]) and b["entity"] == "" and math.isnan(b["delay_min"])
    assert b["start"] == utc("2026-11-01T05:00:00Z")


@given(st.floats(-90, 90), st.floats(-180, 180))
def test_geocoordinaat_object_and_string_forms_agree(lat, lon):
    assert parse_geo_coordinaat({"latitude": lat, "longitude": lon}) == parse_geo_coordinaat(
        f"{lat!r},{lon!r}"
    )
    assert parse_geo_coordinaat(f"{lat!r},{lon!r}") == (lat, lon)


@given(st.integers(0, 10_000), st.integers(0, 3))
def test_strip_line_removes_only_leading_zeros(n, zeros):
    assert strip_line("0" * zeros + str(n)) == str(n)


def test_parse_time_handles_zones_dst_and_garbage():
    assert parse_time("2026-07-01T12:00:00") == utc("2026-07-01T10:00:00Z")
    assert parse_time("2026-01-01T12:00:00") == utc("2026-01-01T11:00:00Z")
    assert parse_time("2026-01-01T12:00:00+00:00") == utc("2026-01-01T12:00:00Z")
    assert parse_time(None) is None and parse_time("") is None and parse_time("string") is None


def _periode(start: str, end: str | None = None) -> dict:
    periode = {"startDatum": start, **({"eindDatum": end} if end else {})}
    return {
        "omleidingen": [{"titel": "t", "referentieOmleiding": 1, "periode": periode, "lijnrichtingen": []}]
    }


@pytest.mark.parametrize(
    "start, end, start_utc, end_utc",
    [
        # spring forward, 29 March 2026: 02:00-03:00 does not exist in Brussels
        ("2026-03-29T01:59:00", "2026-03-29T03:00:00", "2026-03-29T00:59:00Z", "2026-03-29T01:00:00Z"),
        ("2026-03-29T02:30:00", "2026-03-29T02:45:00", "2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z"),
        # fall back, 25 October 2026: 02:00-03:00 happens twice (CEST, then CET); a period covers both
        ("2026-10-25T02:30:00", "2026-10-25T02:30:00", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"),
        ("2026-10-25T01:59:00", "2026-10-25T03:00:00", "2026-10-24T23:59:00Z", "2026-10-25T02:00:00Z"),
    ],
)
def test_detour_periode_is_brussels_time_at_both_dst_changes(start, end, start_utc, end_utc):
    row = normalise_detours(_periode(start, end)).iloc[0]
    assert (row["start"], row["end"]) == (utc(start_utc), utc(end_utc))


def test_a_detour_ending_in_the_repeated_hour_is_in_force_through_both_of_its_occurrences():
    from geo.rules.transit import active_at

    row = normalise_detours(_periode("2026-10-25T00:00:00", "2026-10-25T02:30:00")).iloc[0]
    start_ms, end_ms = int(row["start"].value // 10**6), int(row["end"].value // 10**6)
    # 02:30 CET (the second 02:30) is 01:30Z: the detour is in force at 01:15Z (02:15 CET), ended at 01:30Z
    at = [
        utc(t).value // 10**6
        for t in ("2026-10-25T00:45:00Z", "2026-10-25T01:15:00Z", "2026-10-25T01:30:00Z")
    ]
    assert [bool(active_at(start_ms, end_ms, 127, t, 6)) for t in at] == [True, True, False]


# --- IRCEL-CELINE -------------------------------------------------------------------------------------


def test_ircel_stations_bare_array_with_nan_third_coordinate(reference_dir):
    from geo.data import reference

    features = [
        {
            "properties": {"id": 1030, "label": "40AL01 - Linkeroever"},
            "geometry": {"coordinates": [4.385223684454717, 51.23619419990248, "NaN"], "type": "Point"},
            "type": "Feature",
        },
        {
            "properties": {
                "id": 1112,
                "label": "42R801 - Borgerhout",
                "timeseries": {"6522": {"phenomenon": {"id": "8", "label": "Nitrogen dioxide"}}},
            },
            "geometry": {"coordinates": [4.431821, 51.209663, "NaN"], "type": "Point"},
            "type": "Feature",
        },
        {
            "properties": {
                "id": 1031,
                "label": "40AB01 - Antwerpen",
                "timeseries": {"6151": {"phenomenon": {"id": "391", "label": "Black Carbon"}}},
            },
            "geometry": {"coordinates": [4.329848, 51.281014, "NaN"], "type": "Point"},
            "type": "Feature",
        },
        {"properties": {"id": 1, "label": ""}, "geometry": None, "type": "Feature"},
    ]
    st_layer = normalise_stations(features, reference.stations(reference_dir))
    _columns_ok(st_layer, "stations")
    assert st_layer["id"].tolist() == ["40AB01", "40AL01", "42R801"]
    assert st_layer["no2"].tolist() == [False, True, True]
    assert st_layer["eoi_code"].tolist() == ["BELAB01", "BELAL01", "BETR801"]
    assert st_layer["name"].tolist() == ["Antwerpen", "Linkeroever", "Borgerhout"]
    assert st_layer.geometry.x.tolist()[1] == 4.385223684454717
    assert st_layer.attrs["skipped"] == {"no_label": 1}


def _series(sid, code, place, procedure=None, phenomenon="8"):
    item = {
        "id": sid,
        "label": f"Nitrogen dioxide {sid} - procedure, {code} - {place}",
        "uom": "µg/m³",
        "station": {
            "properties": {"id": 1112, "label": f"{code} - {place}"},
            "geometry": {"type": "Point", "coordinates": [4.431821, 51.209663, "NaN"]},
            "type": "Feature",
        },
        "lastValue": {"timestamp": 1700010000000, "value": None},
    }
    if procedure or phenomenon != "8":
        item["parameters"] = {
            "phenomenon": {"id": phenomenon, "label": "x"},
            "procedure": {"id": sid, "label": procedure or f"{sid} - procedure"},
        }
    return item


def test_ircel_timeseries_and_getdata_values():
    ts = [
        _series("6522", "42R801", "Borgerhout"),
        _series("7001", "42R801", "Borgerhout", procedure="7001 - RIO-IFDM model - procedure"),
        _series("8001", "42R801", "Borgerhout", procedure="8001 - schatting - procedure"),
        _series("5001", "42R801", "Borgerhout", phenomenon="5"),
    ]
    data = {
        "6522": {
            "values": [
                {"timestamp": 1700002800000, "value": 27.0},
                {"timestamp": 1700006400000, "value": 17.5},
                {"timestamp": 1700010000000, "value": None},
            ]
        },
        "7001": {"values": [{"timestamp": 1700010000000, "value": 30.0}]},
        "8001": {"values": [{"timestamp": 1700010000000, "value": 31.0}]},
        "5001": {"values": [{"timestamp": 1700010000000, "value": 99.0}]},
    }
    no2 = normalise_no2(ts, data)
    _columns_ok(no2, "no2")
    got = [
        (r.station_id, r.timestamp, None if math.isnan(r.value) else r.value, r.kind)
        for r in no2.itertuples()
    ]
    assert got == [
        ("42R801", utc("2023-11-14T23:00:00Z"), 27.0, "measured"),
        ("42R801", utc("2023-11-15T00:00:00Z"), 17.5, "measured"),
        ("42R801", utc("2023-11-15T01:00:00Z"), 31.0, "estimated"),
        ("42R801", utc("2023-11-15T01:00:00Z"), None, "measured"),
        ("42R801", utc("2023-11-15T01:00:00Z"), 30.0, "modelled"),
    ]
    assert (no2.geometry.x[0], no2.geometry.y[0]) == (4.431821, 51.209663)


def test_ircel_getdata_must_be_keyed_by_series():
    with pytest.raises(UpstreamFormatError):
        normalise_no2([_series("6522", "42R801", "Borgerhout")], [{"timestamp": 1, "value": 2}])


# --- Stad Antwerpen LEZ -------------------------------------------------------------------------------


def test_lez_arcgis_geojson_keeps_parts_and_holes():
    outer = [[4.38, 51.20], [4.43, 51.20], [4.43, 51.24], [4.38, 51.24], [4.38, 51.20]]
    hole = [[4.40, 51.21], [4.405, 51.21], [4.405, 51.215], [4.40, 51.215], [4.40, 51.21]]
    fc = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {"OBJECTID": 1},
                "geometry": {"type": "Polygon", "coordinates": [outer, hole]},
            },
            {
                "type": "Feature",
                "properties": {"OBJECTID": 2},
                "geometry": {
                    "type": "Polygon",
                    "coordinates": [[[4.45, 51.20], [4.46, 51.20], [4.46, 51.21], [4.45, 51.20]]],
                },
            },
        ],
    }
    lez = normalise_lez(fc)
    _columns_ok(lez, "lez")
    geom = lez.geometry[0]
    assert lez["name"].tolist() == ["Lage-emissiezone Antwerpen"]
    assert geom.geom_type == "MultiPolygon" and len(geom.geoms) == 2
    assert not geom.contains(shapely.Point(4.402, 51.212)) and geom.contains(shapely.Point(4.39, 51.23))


def test_lez_in_lambert72_is_rejected_with_the_fix():
    fc = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {},
                "geometry": {
                    "type": "Polygon",
                    "coordinates": [[[150000, 210000], [155000, 210000], [155000, 215000], [150000, 210000]]],
                },
            }
        ],
    }
    with pytest.raises(UpstreamFormatError, match="outSR=4326"):
        normalise_lez(fc)
