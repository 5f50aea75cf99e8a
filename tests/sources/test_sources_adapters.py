"""Adapters against the fake upstream: real formats in, checked payloads out, ready for the snapshot builder."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest
import requests

from app.sources import delijn, gipod, ircel, lez
from app.sources.errors import UpstreamError
from app.sources.http import Upstream, build_session
from app.sources.settings import SourceSettings
from geo.data import upstream as normalise

from .fakeupstream import DELIJN_BASE, GIPOD_BASE, IRCEL_BASE, SHARED, Fault, FakeUpstream

ANTWERP_BBOX = (4.3, 51.1, 4.6, 51.35)
NOW = datetime(2026, 11, 16, 7, 0, tzinfo=timezone.utc)


def test_gipod_follows_next_links_within_the_bbox_and_caches_every_page(fake, upstream, settings):
    s = replace(settings, gipod_page_size=10, gipod_bbox=ANTWERP_BBOX)
    data = gipod.fetch(upstream, s, NOW)
    pages = data.raw["works"]
    # 25 occupations around Antwerp (Gent is outside the bbox), 4 of them published as 3 occurrences (33
    # features); the server filters out the event (1 feature) and the 2 'Uitgevoerd' and 2 'Niet uitgevoerd'
    # works (one of them a series: 6)
    assert [len(p["features"]) for p in pages] == [10, 10, 6]
    first = fake.requests[0]
    assert first[0] == f"{GIPOD_BASE}/collections/INNAME/items"
    assert first[1]["bbox"] == "4.3,51.1,4.6,51.35" and first[1]["limit"] == "10"
    assert first[1]["filter-lang"] == "cql2-text"
    assert (
        first[1]["filter"]
        == "Type IN ('Werk','Grondwerk') AND Status IN ('In uitvoering','Concreet gepland')"
    )
    hinder = fake.requests[3]
    assert hinder[0] == f"{GIPOD_BASE}/collections/HINDER_PUNT/items"
    assert (
        hinder[1]["filter"] == "HindranceStatus IN ('Gevalideerd')" and hinder[1]["bbox"] == first[1]["bbox"]
    )
    # validated hindrances of every third work (work 6: two zones), those of filtered works unused
    assert [len(p["features"]) for p in data.raw["hindrances"]] == [9]
    works = normalise.normalise_works(pages, now=NOW, hindrance_pages=data.raw["hindrances"])
    assert len(works) == 20 and "1199999" not in set(works["id"])
    by_id = works.set_index("id")
    series = by_id.loc["1143401"]  # i = 1: 3 weekly occurrences from NOW - 27 d
    assert series["occurrences"] == 3 and series["start"] == pd.Timestamp("2026-11-03T07:00:00Z")
    assert (by_id.loc["1143400", "hindrance"], by_id.loc["1143400", "consequences"]) == (
        1,
        "Geen doorgang voor gemotoriseerd verkeer",
    )
    # work 6's zones: the first severe with 1 consequence, the second not severe with 2: merged, sorted
    assert by_id.loc["1143406", "hindrance"] == 1 and by_id.loc["1143406", "consequences"] == (
        "Beperkte doorgang voor voetgangers;Geen doorgang voor gemotoriseerd verkeer"
    )
    assert by_id.loc["1143403", "hindrance"] == 0 and by_id.loc["1143401", "hindrance"] == -1
    assert by_id.loc["1143407"].geometry.bounds[3] - by_id.loc["1143407"].geometry.bounds[1] == pytest.approx(
        0.03
    )
    assert data.retrieved_at["works"].tzinfo is not None
    again = gipod.fetch(upstream, s, NOW)
    assert fake.hits_under(GIPOD_BASE) == 4 and again.from_cache == 4


def test_gipod_more_matches_than_the_page_budget_fail_with_the_reason(fake, upstream, settings):
    s = replace(settings, gipod_page_size=10, gipod_max_pages=2)
    with pytest.raises(UpstreamError, match="features match, more than the page budget of 2 pages x 10"):
        gipod.fetch(upstream, s, NOW)  # 27 features match (Gent included): 3 pages needed
    assert fake.hits_under(GIPOD_BASE) == 1


def test_gipod_refuses_a_next_link_to_another_host(fake, upstream, settings):
    page = {
        "type": "FeatureCollection",
        "features": fake.data["works"][:1],
        "links": [{"rel": "next", "href": "http://169.254.169.254/latest/meta-data/"}],
    }
    fake.inject(GIPOD_BASE, Fault("body", payload=page))
    with pytest.raises(UpstreamError, match="outside the configured base URL") as err:
        gipod.fetch(upstream, settings, NOW)
    assert err.value.source == "gipod"


def test_gipod_empty_register_is_a_failure(fake, upstream, settings):
    fake.inject(GIPOD_BASE, Fault("body", payload={"type": "FeatureCollection", "features": [], "links": []}))
    with pytest.raises(UpstreamError, match="no works"):
        gipod.fetch(upstream, settings, NOW)


def test_delijn_stops_lines_and_detours(fake, upstream, settings):
    data = delijn.fetch(upstream, settings, NOW)
    raw = data.raw
    stops = normalise.normalise_stops(raw["stops"], raw["stop_lines"], raw["lines"])
    by_id = dict(zip(stops["id"], stops["lines"]))
    # by construction: even stops are served by internal 907 (public 7) and 30, odd ones by 12 (30 has no TERUG);
    # 101011 by bus 40 instead, whose public number is "12" too: the same public number, another line
    assert by_id["1_101000"] == "7,30" and by_id["1_101001"] == "12" and by_id["1_101011"] == "12"
    ids = dict(zip(stops["id"], stops["line_ids"]))
    assert (ids["1_101000"], ids["1_101001"], ids["1_101011"]) == ("1_30,1_907", "1_12", "1_40")
    assert len(stops) == 12
    # the detours name entity 3 too: its line list and the unknown stop 3/308530 were fetched
    assert (
        fake.hits[f"{DELIJN_BASE}/entiteiten/3/lijnen"] == 1
        and fake.hits[f"{DELIJN_BASE}/haltes/3/308530"] == 1
    )
    assert sorted(raw["stop_details"]) == ["3_308530"]
    # the detour 30611 names two entity-1 lines the list lacks: each is asked for once, by itself
    assert fake.hits[f"{DELIJN_BASE}/lijnen/1/699"] == 1 and fake.hits[f"{DELIJN_BASE}/lijnen/1/698"] == 1
    assert fake.hits[f"{DELIJN_BASE}/vervoerregios"] == 1
    detours = normalise.normalise_detours(
        raw["detours"], raw["lines"], stops, raw["stop_details"], raw["regions"], on=NOW
    )
    assert detours.attrs["skipped"] == {"line_not_found": 1}  # 698: 404, never guessed
    detours = detours.set_index("id")
    assert sorted(detours.index) == ["30506", "30611", "873876"]
    row = detours.loc["30506"]
    assert row["lines"] == "12" and row["unserved_stops"] == "1_101001,1_101003" and row["region"] == "AN"
    # placed at its two stops (their payload carries no coordinates): 51.207/4.4015 and 51.211/4.4045
    assert (round(row.geometry.x, 6), round(row.geometry.y, 6)) == (4.403, 51.209)
    meir = detours.loc["30611"]
    assert (meir["lines"], meir["type"], meir.geometry.is_empty) == ("7,30,29", "evenement", True)
    assert pd.isna(meir["end"])  # eindDatum absent: open-ended
    details = {d["number"]: d for d in json.loads(meir["line_details"])}
    assert list(details) == ["907", "30", "699"]
    assert details["907"] == {
        "line": "7",
        "entity": "1",
        "number": "907",
        "mode": "TRAM",
        "network": "Kernnet",
        "region": "AN",
        "regionName": "Antwerpen",
    }
    other = detours.loc["873876"]
    assert (other["entity"], other["region"], other["lines"]) == ("3", "VR", "620")
    assert json.loads(other["line_details"])[0]["regionName"] == "Vlaamse Rand"
    assert (other.geometry.x, other.geometry.y) == (4.2984, 50.8346)
    # every De Lijn request carried the key in the header, none in the URL
    delijn_requests = [r for r in fake.requests if r[0].startswith(DELIJN_BASE)]
    assert all(h.get("Ocp-Apim-Subscription-Key") == settings.delijn_key for _, _, h in delijn_requests)
    assert all("subscription-key" not in q for _, q, _ in delijn_requests)
    window = next(q for p, q, _ in delijn_requests if p.endswith("/omleidingen"))
    assert window == {
        "startDatum": "2026-11-16T08:00:00",
        "eindDatum": "2026-12-14T08:00:00",
        "taalCode": "NEDERLANDS",
    }


def test_delijn_detours_are_as_old_as_the_detour_list_not_the_cached_line_lists(fake, upstream, settings):
    """The line lists, region names and stop lookups the detours are read with are cached for a day; they
    count for the stops' age. The detours' age is the detour list's, or a day-old cached line list would
    make fresh detours look a day old (and the freshness limit would refuse them)."""
    expiring = replace(settings, cache_expiry={**settings.cache_expiry, "delijn.detours": 0})
    delijn.fetch(upstream, expiring, NOW)  # the detour list expires at once; every other answer is cached
    seen: dict = {}

    def record(source, endpoint, url, status, content, at):
        seen.setdefault(endpoint, []).append(at)

    upstream.on_response = record
    data = delijn.fetch(upstream, expiring, NOW)
    assert len(seen["/omleidingen"]) == 1
    assert data.retrieved_at["detours"] == seen["/omleidingen"][0]
    others = [at for endpoint, ats in seen.items() if endpoint != "/omleidingen" for at in ats]
    assert data.retrieved_at["stops"] == min(others) < data.retrieved_at["detours"]


@pytest.mark.parametrize(
    "now, start, end",
    [
        # just after spring forward: 03:30 CEST; four weeks later, same wall-clock time
        (datetime(2026, 3, 29, 1, 30, tzinfo=timezone.utc), "2026-03-29T03:30:00", "2026-04-26T03:30:00"),
        # the repeated hour of fall back: the first 02:30 (CEST) and the second (CET) ask for the same window
        (datetime(2026, 10, 25, 0, 30, tzinfo=timezone.utc), "2026-10-25T02:30:00", "2026-11-22T02:30:00"),
        (datetime(2026, 10, 25, 1, 30, tzinfo=timezone.utc), "2026-10-25T02:30:00", "2026-11-22T02:30:00"),
    ],
)
def test_delijn_detour_window_is_brussels_wall_time_within_one_month(
    fake, upstream, settings, now, start, end
):
    delijn.fetch(upstream, settings, now)
    window = next(q for p, q, _ in fake.requests if p.endswith("/omleidingen"))
    assert (window["startDatum"], window["eindDatum"]) == (start, end)
    first, last = datetime.fromisoformat(start), datetime.fromisoformat(end)
    # at most one month, whichever month: a window of 28 days fits in February
    assert (last - first).days == 28 and last <= first.replace(month=first.month % 12 + 1)


def test_delijn_without_key_fails_before_any_request(fake, upstream, settings):
    with pytest.raises(UpstreamError, match="URBAN_DELIJN_KEY"):
        delijn.fetch(upstream, replace(settings, delijn_key=""), NOW)
    assert fake.hits_under(DELIJN_BASE) == 0


def test_delijn_wrong_key_is_an_upstream_error(fake, upstream, settings):
    with pytest.raises(UpstreamError, match="HTTP 401") as err:
        delijn.fetch(upstream, replace(settings, delijn_key="wrong"), NOW)
    assert err.value.source == "delijn"


def test_ircel_stations_series_and_hourly_values(fake, upstream, settings):
    data = ircel.fetch(upstream, settings, NOW)
    stations = normalise.normalise_stations(data.raw["stations"])
    no2 = normalise.normalise_no2(data.raw["timeseries"], data.raw["no2"], stations)
    n = len(fake.data["series"])
    assert len(stations) == n and stations["no2"].all()
    # timespan PT48H/<next full hour> keeps the 48 hourly values ending at 07:00 UTC
    assert len(no2) == 48 * n
    assert no2["timestamp"].max() == pd.Timestamp("2026-11-16T07:00:00Z")
    assert no2["timestamp"].min() == pd.Timestamp("2026-11-14T08:00:00Z")
    nulls = sum(v["value"] is None for s in fake.data["series"].values() for v in s["values"][1:])
    assert int(np.isnan(no2["value"]).sum()) == nulls  # null stays unknown, never 0
    # the lists are paged; the values of every series come in one POST
    lists = [(p, q) for p, q, _ in fake.requests if p.endswith(("/stations", "/timeseries"))]
    paged = {"phenomenon": "8", "expanded": "true", "limit": "500", "offset": "0"}
    assert lists == [(f"{IRCEL_BASE}/stations", paged), (f"{IRCEL_BASE}/timeseries", paged)]
    assert fake.posted == [
        (
            f"{IRCEL_BASE}/timeseries/getData",
            {"timeseries": sorted(fake.data["series"], key=int), "timespan": "PT48H/2026-11-16T08:00:00Z"},
        )
    ]
    assert not any(
        p.endswith("/getData") and p != f"{IRCEL_BASE}/timeseries/getData" for p, _, _ in fake.requests
    )


def test_ircel_pages_the_lists_with_limit_and_offset(fake, upstream, settings):
    n = len(fake.data["series"])
    size = 2
    data = ircel.fetch(upstream, replace(settings, ircel_page_size=size), NOW)
    assert [s["id"] for s in data.raw["timeseries"]] == list(fake.data["series"])  # every page, in order
    assert len(data.raw["stations"]) == n
    offsets = [int(q["offset"]) for p, q, _ in fake.requests if p == f"{IRCEL_BASE}/timeseries"]
    # pages of 2 until a short (or empty) page: n // 2 + 1 requests
    assert offsets == list(range(0, (n // size + 1) * size, size))
    assert all(q["limit"] == "2" for p, q, _ in fake.requests if p == f"{IRCEL_BASE}/timeseries")


def test_ircel_a_server_that_ignores_offset_ends_the_paging(fake, upstream, settings):
    everything = requests.get(f"{fake.base}{IRCEL_BASE}/timeseries", timeout=10).json()
    fake.requests.clear()
    # every page answers the whole list: the second one holds nothing new, so paging stops there
    fake.inject(f"{IRCEL_BASE}/timeseries", Fault("body", payload=everything), times=2)  # both list pages
    data = ircel.fetch(upstream, replace(settings, ircel_page_size=2), NOW)
    assert [s["id"] for s in data.raw["timeseries"]] == [s["id"] for s in everything]
    assert sum(p == f"{IRCEL_BASE}/timeseries" for p, _, _ in fake.requests) == 2


def test_ircel_failing_getdata_fails_the_whole_source(fake, upstream, settings):
    fake.inject(f"{IRCEL_BASE}/timeseries/getData", Fault("status", 500), times=None)
    with pytest.raises(UpstreamError) as err:
        ircel.fetch(upstream, settings, NOW)
    assert err.value.source == "ircel" and "HTTP 500" in str(err.value)


def test_ircel_getdata_of_the_wrong_shape_is_rejected(fake, upstream, settings):
    first = next(iter(fake.data["series"]))
    fake.inject(f"{IRCEL_BASE}/timeseries/getData", Fault("body", payload={first: [1, 2]}), times=None)
    with pytest.raises(UpstreamError, match="expected an object with a 'values' array"):
        ircel.fetch(upstream, settings, NOW)


def test_ircel_object_instead_of_array_is_rejected(fake, upstream, settings):
    fake.inject(f"{IRCEL_BASE}/stations", Fault("wrongshape"), times=None)
    with pytest.raises(UpstreamError, match="malformed"):
        ircel.fetch(upstream, settings, NOW)


def test_lez_geojson_from_arcgis(fake, upstream, settings):
    data = lez.fetch(upstream, settings, NOW)
    layer = normalise.normalise_lez(data.raw["lez"])
    assert layer.geometry[0].geom_type == "MultiPolygon"
    q = fake.requests[-1][1]
    assert q == {"where": "1=1", "outFields": "*", "outSR": "4326", "f": "geojson"}


@pytest.fixture
def examples(tmp_path):
    if not (SHARED / "transit" / "delijn_kern_opendata_v1.openapi.json").exists():
        pytest.skip("shared data not available")
    with FakeUpstream(examples=True) as server:
        s = SourceSettings.from_mapping(server.settings(), {}, http_cache=str(tmp_path / "c.sqlite"))
        session = build_session(s.http_cache, s)
        yield Upstream(session, s), s
        session.close()


def test_delijn_adapter_parses_the_openapi_examples(examples):
    up, s = examples
    data = delijn.fetch(up, s, NOW)
    stops = normalise.normalise_stops(data.raw["stops"], data.raw["stop_lines"], data.raw["lines"])
    assert stops[["id", "entity", "number", "name", "municipality", "lines"]].values.tolist() == [
        ["3_303980", "3", "303980", "Gilsonplein", "Leuven", "335"]
    ]
    assert (stops.geometry[0].x, stops.geometry[0].y) == (4.823559183763914, 50.98145261213046)
    detours = normalise.normalise_detours(data.raw["detours"])
    assert detours[["id", "title", "lines", "unserved_stops"]].values.tolist() == [
        ["0", "Antwerpen: Werken Brabo 2 Fr. Rooseveltplaats Werken", "335", "3_303980"]
    ]
    assert detours["start"].isna().all()  # the example's dates are the literal "string"


def test_ircel_adapter_parses_the_documented_samples(examples):
    up, s = examples
    data = ircel.fetch(up, s, NOW)
    stations = normalise.normalise_stations(data.raw["stations"])
    assert stations[["id", "name", "no2"]].values.tolist() == [["40AL01", "Linkeroever", True]]
    no2 = normalise.normalise_no2(data.raw["timeseries"], data.raw["no2"], stations)
    assert no2["station_id"].tolist() == ["42R801"] * 3
    assert [str(t) for t in no2["timestamp"]] == [
        "2023-11-14 23:00:00+00:00",
        "2023-11-15 00:00:00+00:00",
        "2023-11-15 01:00:00+00:00",
    ]
    assert no2["value"].tolist()[:2] == [27.0, 17.5] and np.isnan(no2["value"].iloc[2])
    assert set(no2["kind"]) == {"measured"}


def test_gipod_a_failing_hindrance_request_fails_the_source(fake, upstream, settings):
    """The hindrances are part of the works layer: without them the source fails (its last layer is kept)."""
    fake.inject(f"{GIPOD_BASE}/collections/HINDER_PUNT/items", Fault("status", 404), times=None)
    with pytest.raises(UpstreamError, match="HTTP 404") as err:
        gipod.fetch(upstream, settings, NOW)
    assert err.value.source == "gipod"
    assert fake.hits_under(f"{GIPOD_BASE}/collections/INNAME/items") == 1
