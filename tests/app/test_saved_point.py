"""Saved locations keep the clock-free parts of their answers per snapshot (``app.api.targeting.saved_point``,
``URBAN_SAVED_LOCATION_CACHE``): the answers by ``locationId`` are those by the same ``lat``/``lng``, in every
language; only saved locations enter the table (never a request's coordinates); an edited location, a new
snapshot and a full table each start over; ``0`` keeps nothing.

Points asked by ``lat``/``lng`` again keep theirs in a table of their own (``app.api.targeting.asked_point``,
``URBAN_POINT_CACHE``): their second call makes the parts, every answer is byte for byte the one made without
them; a point asked once is only noted; a full table starts over; ``0`` keeps nothing."""

from __future__ import annotations

import json

import pytest

from app.api.targeting import _ASKED, _SAVED, _AskedPoints
from app.store.db import open_store
from app.store.saved_locations import add_location, remove_location
from geo.service.loaded import loaded, rebuild
from geo.data.layers import DECLARED
from platform_helpers import bearer

SPOTS = [(51.2194, 4.4025), (51.2205, 4.3890), (50.8466, 4.3528)]
PATHS = ("/api/v1/disruptions", "/api/v1/air-quality", "/api/v1/briefing")


@pytest.fixture
def setup(make_app, engine):
    made = []

    def make(**config):
        made.append(config)
        app = make_app(ENGINE=engine, **config)
        conn = open_store(app)
        try:
            from app.store import accounts

            row, key = accounts.create_account(conn, f"ops{len(made)}@antwerpen.example", "enterprise")
            for i, (lat, lng) in enumerate(SPOTS):
                add_location(
                    conn, row["id"], name=f"Werf {i}", address="", lat=lat, lng=lng, location_id=f"loc_w{i}"
                )
        finally:
            conn.close()
        return app, app.test_client(), bearer(key), row["id"]

    return make


def _table(engine) -> dict:
    return loaded(engine).derived(_SAVED, lambda _e: {})


def _without_location(resp) -> dict:
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    body.pop("location", None)
    return body


def test_answers_by_saved_location_are_those_by_its_coordinates_in_every_language(setup, engine):
    app, client, auth, _ = setup()
    _table(engine).clear()
    for i, (lat, lng) in enumerate(SPOTS):
        for path in PATHS:
            for lang in ("nl", "fr", "en"):
                headers = {**auth, "Accept-Language": lang}
                twice = [
                    _without_location(client.get(f"{path}?locationId=loc_w{i}", headers=headers))
                    for _ in "ab"
                ]
                direct = _without_location(client.get(f"{path}?lat={lat}&lng={lng}", headers=headers))
                assert twice[0] == twice[1] == direct
    assert set(_table(engine)) == {(f"loc_w{i}", lat, lng) for i, (lat, lng) in enumerate(SPOTS)}


def test_a_call_by_coordinates_never_enters_the_table(setup, engine):
    _app, client, auth, _ = setup()
    _table(engine).clear()
    for lat, lng in SPOTS:
        for path in PATHS:
            assert client.get(f"{path}?lat={lat}&lng={lng}", headers=auth).status_code == 200
    assert _table(engine) == {}


def test_an_edited_location_and_a_full_table_start_over(setup, engine):
    app, client, auth, account_id = setup(SAVED_LOCATION_CACHE=2)
    _table(engine).clear()
    for i in range(3):
        assert client.get(f"/api/v1/briefing?locationId=loc_w{i}", headers=auth).status_code == 200
    assert 1 <= len(_table(engine)) <= 2  # the third emptied the full table
    conn = open_store(app)
    try:  # a location is edited by removing it and saving it again (same id, other coordinates)
        remove_location(conn, account_id, "loc_w0")
        add_location(
            conn,
            account_id,
            name="Werf 0",
            address="",
            lat=SPOTS[2][0],
            lng=SPOTS[2][1],
            location_id="loc_w0",
        )
    finally:
        conn.close()
    by_id = _without_location(client.get("/api/v1/disruptions?locationId=loc_w0", headers=auth))
    by_point = _without_location(
        client.get(f"/api/v1/disruptions?lat={SPOTS[2][0]}&lng={SPOTS[2][1]}", headers=auth)
    )
    assert by_id == by_point and ("loc_w0", *SPOTS[2]) in _table(engine)


def test_zero_keeps_nothing(setup, engine):
    _app, client, auth, _ = setup(SAVED_LOCATION_CACHE=0)
    _table(engine).clear()
    assert client.get("/api/v1/air-quality?locationId=loc_w1", headers=auth).status_code == 200
    assert _table(engine) == {}


def test_a_new_snapshot_starts_its_own_table(setup, engine):
    app, client, auth, _ = setup()
    before = _without_location(client.get("/api/v1/disruptions?locationId=loc_w0", headers=auth))
    names = [layer.name for layer in DECLARED]
    works = engine.works.iloc[::2].copy()  # half the works gone: other answers
    newer = rebuild({**{n: getattr(engine, n) for n in names}, "works": works}, engine.manifest, [engine])
    app.extensions["urban"].swap_engine(newer)
    assert _table(newer) == {}
    by_id = _without_location(client.get("/api/v1/disruptions?locationId=loc_w0", headers=auth))
    lat, lng = SPOTS[0]
    assert by_id == _without_location(client.get(f"/api/v1/disruptions?lat={lat}&lng={lng}", headers=auth))
    assert by_id != before
    assert ("loc_w0", lat, lng) in _table(newer)


def _asked(engine) -> _AskedPoints:
    table = loaded(engine).derived(_ASKED, _AskedPoints)
    return table


def _fresh_asked(engine) -> _AskedPoints:
    table = _asked(engine)
    table.once.clear()
    table.kept.clear()
    return table


def _raw(resp) -> tuple:
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_data(), resp.headers["ETag"], resp.headers.get("Content-Language")


def test_a_point_asked_again_keeps_its_parts_and_answers_byte_for_byte_the_same(setup, make_app, engine):
    _app, client, auth, _ = setup()
    plain_client = make_app(ENGINE=engine, POINT_CACHE=0).test_client()  # the same store: the same key
    table = _fresh_asked(engine)
    for lat, lng in SPOTS:
        for path in PATHS:
            for lang in ("nl", "fr", "en"):
                url = f"{path}?lat={lat}&lng={lng}"
                headers = {**auth, "Accept-Language": lang}
                without = _raw(plain_client.get(url, headers=headers))
                for _ in range(3):  # noted, then made, then kept
                    assert _raw(client.get(url, headers=headers)) == without
    assert set(table.kept) == set(SPOTS)
    assert all(table.kept[p].point == p for p in SPOTS)


def test_a_point_asked_once_is_only_noted_and_spellings_of_one_point_share_it(setup, engine):
    _app, client, auth, _ = setup()
    table = _fresh_asked(engine)
    lat, lng = SPOTS[0]
    assert client.get(f"/api/v1/air-quality?lat={lat}&lng={lng}", headers=auth).status_code == 200
    assert list(table.once) == [SPOTS[0]] and table.kept == {}
    assert client.get(f"/api/v1/briefing?lat={lat}0&lng=%2B{lng}", headers=auth).status_code == 200
    assert list(table.kept) == [SPOTS[0]]


def test_a_full_point_table_starts_over_and_zero_keeps_nothing(setup, make_app, engine):
    app, client, auth, _ = setup(POINT_CACHE=2)
    table = _fresh_asked(engine)
    for lat, lng in SPOTS:
        for _ in "ab":
            assert client.get(f"/api/v1/disruptions?lat={lat}&lng={lng}", headers=auth).status_code == 200
    assert 1 <= len(table.kept) <= 2 and SPOTS[2] in table.kept  # the third emptied the full table
    assert len(table.once) <= 2
    client = make_app(ENGINE=engine, POINT_CACHE=0).test_client()
    table = _fresh_asked(engine)
    for _ in "ab":
        assert (
            client.get(f"/api/v1/disruptions?lat={SPOTS[0][0]}&lng={SPOTS[0][1]}", headers=auth).status_code
            == 200
        )
    assert table.once == {} and table.kept == {}


def test_a_point_outside_the_service_area_is_refused_every_time_and_kept_nowhere(setup, engine):
    _app, client, auth, _ = setup()
    table = _fresh_asked(engine)
    for _ in range(3):
        resp = client.get("/api/v1/disruptions?lat=48.8566&lng=2.3522", headers=auth)
        assert resp.status_code == 422 and resp.get_json()["error"] == "outside_service_area"
    assert table.once == {} and table.kept == {}


def test_a_new_snapshot_starts_its_own_point_table(setup, make_app, engine):
    app, client, auth, _ = setup()
    plain = make_app(ENGINE=engine, POINT_CACHE=0)
    plain_client = plain.test_client()
    lat, lng = SPOTS[0]
    url = f"/api/v1/disruptions?lat={lat}&lng={lng}"
    for _ in "ab":
        assert client.get(url, headers=auth).status_code == 200
    assert SPOTS[0] in _asked(engine).kept
    before = _raw(client.get(url, headers=auth))
    names = [layer.name for layer in DECLARED]
    works = engine.works.iloc[::2].copy()
    newer = rebuild({**{n: getattr(engine, n) for n in names}, "works": works}, engine.manifest, [engine])
    for each in (app, plain):
        each.extensions["urban"].swap_engine(newer)
    without = _raw(plain_client.get(url, headers=auth))
    assert without[0] != before[0]
    for _ in range(3):
        assert _raw(client.get(url, headers=auth)) == without
    assert SPOTS[0] in _asked(newer).kept
