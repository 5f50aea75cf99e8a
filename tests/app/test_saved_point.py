"""Saved locations keep the clock-free parts of their answers per snapshot (``app.api.targeting.saved_point``,
``URBAN_SAVED_LOCATION_CACHE``): the answers by ``locationId`` are those by the same ``lat``/``lng``, in every
language; only saved locations enter the table (never a request's coordinates); an edited location, a new
snapshot and a full table each start over; ``0`` keeps nothing."""

from __future__ import annotations

import json

import pytest

from app.api.targeting import _SAVED
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
