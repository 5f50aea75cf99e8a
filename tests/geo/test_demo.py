"""Demo scenario properties, read back from the built snapshot (the same path live data takes)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import shapely
from scipy.spatial import cKDTree

from geo.data import reference
from geo.data.demo import CONSEQUENCES
from geo.data.engine import point_coords
from geo.data.snapshot import DEMO_AS_OF, read_snapshot
from geo.data.upstream import strip_line
from geo.index.spherical import haversine_km

AS_OF = pd.Timestamp(DEMO_AS_OF)
KX, KY = 111.320 * np.cos(np.radians(51.0)), 110.574


@pytest.fixture(scope="module")
def layers(snapshot_dir):
    return read_snapshot(snapshot_dir)[0]


def km_xy(gdf):
    """Local km of each row's (representative) point."""
    lat, lng = point_coords(gdf)
    return np.column_stack([lng * KX, lat * KY])


def length_km(geom):
    """Longest side of the extent's minimum rotated rectangle, in km (a strip's length)."""
    xy = shapely.get_coordinates(shapely.minimum_rotated_rectangle(geom))[:4]
    return float(max(haversine_km(xy[i, 1], xy[i, 0], xy[i + 1, 1], xy[i + 1, 0]) for i in range(3)))


# --- works --------------------------------------------------------------------------------------------


def test_works_statuses_dates_and_dutch_text(layers):
    w = layers["works"]
    assert 2800 <= len(w) <= 3200
    assert w["id"].is_unique
    counts = w["status"].value_counts()
    assert {"In uitvoering", "Concreet gepland", "Uitgevoerd", "Niet uitgevoerd"} == set(counts.index)
    assert counts["In uitvoering"] > 0.3 * len(w) and counts["Concreet gepland"] > 0.3 * len(w)
    assert set(w["type"]) == {"Grondwerk", "Werk"}  # GIPOD events were dropped
    assert (w["description"].str.len() > 5).all() and (w["owner"] != "").all()
    running = w[w["status"] == "In uitvoering"]
    assert (running["end"] - AS_OF > pd.Timedelta(days=365)).sum() > 50  # multi-year end dates
    assert (running["end"] < AS_OF).sum() > 5  # overdue but still running
    assert running["end"].isna().sum() > 5
    planned = w[(w["status"] == "Concreet gepland") & (w["occurrences"] == 1)]
    assert (planned["start"] > AS_OF).all()
    assert ((planned["start"] - AS_OF) <= pd.Timedelta(days=14)).sum() > 50


def test_works_published_as_occurrences_show_the_running_or_next_one(layers):
    # GIPOD sends one feature per occurrence; the demo's series works are weekly slots of one GipodId
    w = layers["works"]
    series = w[(w["occurrences"] > 1) & (w["id"].astype(int) < 2_000_000)]  # long works and parts from 2e6
    assert len(series) == 24 and set(series["status"]) == {"In uitvoering", "Concreet gepland"}
    assert (w["occurrences"] >= 1).all() and w["id"].is_unique
    running_now = (series["start"] <= AS_OF) & (AS_OF < series["end"])
    # a shown occurrence is the one running at asOf, else the next one, else the last one (all in the past)
    assert ((series["start"] > AS_OF) | running_now | (series["end"] <= AS_OF)).all()
    assert running_now.sum() >= 1 and (series["start"] > AS_OF).sum() >= 5


def test_works_inside_service_area_and_weighted_by_population(layers, reference_dir):
    w = layers["works"]
    area = layers["service_area"].geometry[0]
    lat, lng = point_coords(w)
    assert shapely.contains_xy(area, lng, lat).mean() > 0.995
    muni = reference.municipalities(reference_dir)
    muni = muni[muni["reg_nis"].isin(["02000", "04000"])].reset_index(drop=True)
    tree = shapely.STRtree(list(muni.geometry))
    src, dst = tree.query(shapely.points(lng, lat), predicate="within")
    counts = np.bincount(dst, minlength=len(muni))
    r = np.corrcoef(counts, muni["population"].to_numpy())[0, 1]
    assert r > 0.8
    assert counts[muni.index[muni["name_nl"] == "Antwerpen"][0]] > 150


def test_recurring_occurrences_a_few_metres_apart(layers):
    w = layers["works"]
    tree = cKDTree(km_xy(w))
    desc = w["description"].to_numpy()
    pairs = [(i, j) for i, j in tree.query_pairs(0.030) if desc[i] == desc[j]]
    assert len(pairs) >= 100
    assert all(w["id"].iat[i] != w["id"].iat[j] for i, j in pairs)


def test_works_on_both_banks_near_the_scheldt(layers):
    w, rv = layers["works"], layers["river"]
    lat, lng = point_coords(w)
    near = shapely.dwithin(rv.geometry[0], shapely.points(lng, lat), 0.02)
    left = shapely.contains_xy(rv.geometry[1], lng, lat) & near
    right = shapely.contains_xy(rv.geometry[2], lng, lat) & near
    assert left.sum() >= 30 and right.sum() >= 30


def test_works_have_extents_long_works_and_parts(layers):
    """Every work is a polygon (GIPOD INNAME) holding its representative point; most are street stretches of
    15-250 m, 60 are 1.5-5 km long (12 around Antwerp); works published as two stretches show the running
    ones: both when both run (a MultiPolygon), the first when the second is planned."""
    w = layers["works"]
    assert set(w.geometry.geom_type) == {"Polygon", "MultiPolygon"} and w.geometry.is_valid.all()
    lat, lng = point_coords(w)
    assert shapely.contains_xy(w.geometry.values, lng, lat).all()
    lengths = np.array([length_km(g) for g in w.geometry])
    assert np.median(lengths) < 0.25 and (lengths > 1.4).sum() >= 60
    long_ones = w[lengths > 1.4]
    antwerp = haversine_km(*point_coords(long_ones), 51.2194, 4.4025) < 15  # the city and its port
    assert antwerp.sum() >= 10
    parts = w[(w["id"].astype(int) >= 2_000_000) & (w["occurrences"] == 2)]
    assert len(parts) == 40 and set(parts["status"]) == {"In uitvoering"}
    assert (parts.geometry.geom_type == "MultiPolygon").sum() == 20  # both stretches running


def test_works_hindrance_validated_for_some_with_real_consequences(layers):
    w = layers["works"]
    listed = w[w["status"].isin(["In uitvoering", "Concreet gepland"])]
    share = (listed["hindrance"] >= 0).mean()
    assert 0.35 < share < 0.55 and (w.loc[~w.index.isin(listed.index), "hindrance"] == -1).all()
    severe = (listed["hindrance"] == 1).sum() / (listed["hindrance"] >= 0).sum()
    assert 0.2 < severe < 0.45
    seen = {c for v in listed["consequences"] for c in v.split(";") if c}
    assert seen == set(CONSEQUENCES)
    assert ((listed["consequences"] == "") == (listed["hindrance"] == -1)).all()


# --- stops and detours --------------------------------------------------------------------------------


def test_stops_dense_in_antwerp_with_lines_and_leading_zeros(layers):
    s = layers["stops"]
    assert 2000 <= len(s) <= 8000 and s["id"].is_unique
    assert (s["id"] == s["entity"] + "_" + s["number"]).all()
    assert set(s["entity"]) == {"1", "2", "3", "4", "5"}
    assert (s["lines"] != "").all()
    lines = {x for v in s["lines"] for x in v.split(",")}
    assert {"007", "013"} <= lines and any(x.startswith("0") for x in lines)
    d = np.hypot(*(km_xy(s) - np.array([4.4011 * KX, 51.2189 * KY])).T)
    antwerp_density = (d < 5).sum() / (np.pi * 25)
    flanders_density = len(s) / 13_700
    assert antwerp_density > 10 * flanders_density
    both_banks = shapely.contains_xy(layers["river"].geometry[1], s.geometry.x, s.geometry.y).sum()
    assert both_banks >= 10  # stops on the left bank too


def test_detours_antwerp_region_with_periods_types_and_unserved_stops(layers):
    d, s = layers["detours"], layers["stops"]
    antwerp = d[d["region"] == "AN"]
    assert len(antwerp) >= 30 and len(d) > len(antwerp)
    # entity 1 is the whole province: its detours are also in other transport regions
    assert set(antwerp["entity"]) == {"1"} and "KE" in set(d.loc[d["entity"] == "1", "region"])
    assert set(d["type"]) == {"werken", "evenement", ""}  # lower, upper (lowered) or absent
    assert d["title"].str.contains(": ").all()
    assert antwerp["end"].isna().sum() >= 3 and antwerp["end"].notna().sum() >= 20
    assert (antwerp["start"] < AS_OF).sum() >= 10 and (antwerp["start"] > AS_OF).sum() >= 3
    assert d["delay_min"].notna().mean() > 0.6
    stop_ids = set(s["id"])
    unserved = [x for v in d["unserved_stops"] for x in v.split(",") if x]
    assert unserved and set(unserved) <= stop_ids
    assert (d["unserved_stops"] == "").sum() >= 1 and d.geometry.is_empty.sum() >= 1
    stop_lines = {x for v in s["lines"] for x in v.split(",")}
    detour_lines = {x for v in d["lines"] for x in v.split(",") if x}
    # detours name internal numbers (some 9xx); the layer holds the public ones, the stops' numbers
    assert detour_lines <= stop_lines and not any(x.startswith("9") and len(x) == 3 for x in detour_lines)
    # every detour with stops is placed at them (the payload's stops carry no coordinates)
    placed = d[d["unserved_stops"] != ""]
    assert not placed.geometry.is_empty.any()


def test_demo_repeats_public_line_numbers_as_the_real_list_does(layers):
    # as in the real entity-1 list: public "2" is tram 2 (internal 2) and bus 948, public "3" is tram 3 and
    # bus 947, all in region AN; stops and detours carry the identity beside the public number
    s, d = layers["stops"], layers["detours"]
    ids = s.set_index("id")["line_ids"].str.split(",")
    both = [i for i, x in ids.items() if {"1_3", "1_947"} <= set(x)]
    assert both and s.set_index("id").loc[both[0], "lines"].split(",").count("3") == 1
    on_947 = [json.loads(x) for x in d["line_details"] if '"number":"947"' in x]
    assert on_947 and all(
        e["line"] == "3" and e["region"] == "AN" and e["regionName"] == "Antwerpen" and e["mode"] == "BUS"
        for details in on_947
        for e in details
        if e["number"] == "947"
    )
    tram = json.loads(next(x for x in d["line_details"] if '"number":"1"' in x))
    assert {"mode": "TRAM", "network": "Kernnet"}.items() <= next(
        e for e in tram if e["number"] == "1"
    ).items()


# --- NO2 ----------------------------------------------------------------------------------------------


def test_no2_hourly_series_up_to_as_of_with_gaps(layers):
    n, st = layers["no2"], layers["stations"]
    measured = n[n["kind"] == "measured"]
    no2_ids = set(st.loc[st["no2"], "id"])
    assert set(measured["station_id"]) == no2_ids
    hours = pd.date_range(end=AS_OF.floor("h"), periods=48, freq="h")
    for _, g in measured.groupby("station_id"):
        assert g["timestamp"].tolist() == list(hours)
    assert measured["value"].isna().sum() > 20


def test_no2_empty_last_two_hours_and_non_measured_rows(layers):
    n = layers["no2"]
    last2 = n[n["timestamp"] > AS_OF.floor("h") - pd.Timedelta(hours=2)]
    m = last2[last2["kind"] == "measured"]
    empty = m.groupby("station_id")["value"].apply(lambda v: v.isna().all())
    assert empty.sum() >= 1
    station = empty[empty].index[0]
    others = last2[(last2["station_id"] == station) & (last2["kind"] != "measured")]
    assert set(others["kind"]) == {"modelled", "estimated"} and others["value"].notna().all()
    one_value = m.groupby("station_id")["value"].apply(lambda v: v.notna().tolist() == [True, False])
    assert one_value.sum() >= 1  # a window with only the older hour measured
    assert {"modelled", "estimated"} <= set(n["kind"])


def test_no2_values_are_realistic_with_a_rush_hour_shape(layers):
    n, st = layers["no2"], layers["stations"]
    m = n[n["kind"] == "measured"].merge(st[["id", "station_type"]], left_on="station_id", right_on="id")
    assert m["value"].min() >= 0 and m["value"].max() < 150
    med = m.groupby("station_type")["value"].median()
    assert 25 <= med["Traffic"] <= 60 and 8 <= med["Background"] <= 28
    hour = m["timestamp"].dt.tz_convert("Europe/Brussels").dt.hour
    assert m.loc[hour.isin([8, 9]), "value"].mean() > 1.3 * m.loc[hour.isin([3, 4]), "value"].mean()
