"""The map's "as of" control: Enterprise only; the page's figures are the API's ``asOf`` answers (same path,
counted as one call), a banner in Brussels time with a way back to now; bad instants get a friendly message,
no figures, and (when the instant cannot be read) nothing counted."""

from __future__ import annotations

import html
import json
import re
import shutil
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from app.history.asof import iso
from app.history.simulate import seed_demo
from app.history.store import open_store
from app.store import usage
from app.store.sqlite import connect

POINT = (51.2194, 4.4025)


@pytest.fixture(scope="module")
def demo_history(reference_dir, snapshot_dir, tmp_path_factory, build_once):
    """``(store URL, publishes)``: 20 days before the demo snapshot, a refresh every 5 days, then the demo.

    Seeded once per run (shared by this module, test_dossier.py and test_as_of_browser.py); each module gets
    its own copy of the store."""

    def seed(root):
        store = open_store(str(root / "history.sqlite"))
        seed_demo(store, reference_dir, snapshot_dir, days=20, cadence_min=5 * 24 * 60)
        store.close()

    shared = build_once("dashboard-demo-history", seed)
    copy = tmp_path_factory.mktemp("dashboard-history")
    for item in shared.iterdir():
        if item.name.startswith("history.sqlite"):
            shutil.copy2(item, copy / item.name)
    url = str(copy / "history.sqlite")
    store = open_store(url)
    publishes = store.publishes()
    store.close()
    return url, publishes


@pytest.fixture
def config(config, demo_history, engine):
    return {**config, "HISTORY_URL": demo_history[0], "WALL_CLOCK": lambda: engine.as_of + timedelta(days=1)}


def drawn(page: bytes) -> dict:
    found = re.search(rb'<script type="application/json" id="map-point">(.*?)</script>', page, re.S)
    return json.loads(html.unescape(found.group(1).decode())) if found else {}


def works_of(page: bytes) -> list:
    feats = drawn(page).get("features", {}).get("features", [])
    return [
        (f["properties"]["id"], f["properties"]["status"]) for f in feats if f["properties"]["kind"] == "work"
    ]


def used(app, account_id, engine) -> int:
    conn = connect(app.config["DATABASE"])
    try:
        return usage.used(conn, account_id, usage.day_of(engine.as_of + timedelta(days=1)))
    finally:
        conn.close()


@pytest.mark.parametrize("plan", ["developer", "api", "pro", "dashboard"])
def test_only_enterprise_sees_the_control(user, plan):
    _account, _key, client = user(plan)
    page = client.get(f"/dashboard/map?lat={POINT[0]}&lng={POINT[1]}").data
    assert b'data-testid="work"' in page and b"as-of-form" not in page and b"datetime-local" not in page
    _account, _key, enterprise = user("enterprise")
    page = enterprise.get(f"/dashboard/map?lat={POINT[0]}&lng={POINT[1]}").data
    assert b'data-testid="as-of-form"' in page and b'name="at"' in page and b"as-of-banner" not in page
    # the field's bounds: the plan's 365 days up to now, in Brussels time
    assert b'min="2025-11-17T08:00"' in page and b'max="2026-11-17T08:00"' in page


def test_the_page_shows_the_apis_as_of_answers_with_a_banner_and_a_way_back(app, user, engine, demo_history):
    _url, publishes = demo_history
    account, key, client = user("enterprise")
    instant = publishes[1].as_of + timedelta(hours=2)  # the second publish was being served
    api = {
        name: client.get(
            f"/api/v1/{name}?lat={POINT[0]}&lng={POINT[1]}&asOf={iso(instant)}",
            headers={"Authorization": f"Bearer {key}"},
        )
        for name in ("disruptions", "air-quality")
    }
    assert api["disruptions"].headers["As-Of-Snapshot"] == publishes[1].snapshot_id
    live = client.get(f"/dashboard/map?lat={POINT[0]}&lng={POINT[1]}").data
    before = used(app, account["id"], engine)
    # the form's field: Brussels wall-clock time (CET in November: UTC+1)
    local = (instant + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    resp = client.get(f"/dashboard/map?lat={POINT[0]}&lng={POINT[1]}&at={local}")
    assert resp.status_code == 200
    assert used(app, account["id"], engine) == before + 1  # one call, as the API's asOf call is
    page = resp.data
    expected = [(w["id"], w["status"]) for w in api["disruptions"].json["construction"]]
    assert works_of(page) == expected and expected and works_of(page) != works_of(live)
    value = api["air-quality"].json["reading"]["value"]
    assert f'data-testid="no2-value">{value} '.encode() in page
    text = html.unescape(page.decode())
    here = instant.strftime("%-d %b %Y ") + (instant + timedelta(hours=1)).strftime("%H:%M")
    assert f"As of {here} CET" in text  # i18n's date and time for people, in the page's language
    assert "from the data snapshot of " + publishes[1].as_of.strftime("%-d %b %Y") in text
    assert f'value="{local}"' in text  # the field keeps the instant shown
    back = re.search(r'<a href="([^"]+)" data-testid="as-of-now">Back to now</a>', text).group(1)
    assert sorted(parse_qs(urlsplit(back).query)) == ["lat", "lng"]
    assert works_of(client.get(back).data) == works_of(live)
    # the API's spelling in a link gives the same page
    same = client.get(f"/dashboard/map?lat={POINT[0]}&lng={POINT[1]}&asOf={iso(instant)}").data
    assert works_of(same) == expected and drawn(same) == drawn(page)


def test_a_saved_location_as_of(user, demo_history, store):
    from app.store.saved_locations import add_location

    _url, publishes = demo_history
    account, key, client = user("enterprise")
    row = add_location(
        store, account["id"], name="Stadhuis", address="", label="", lat=POINT[0], lng=POINT[1]
    )
    instant = publishes[0].as_of + timedelta(minutes=1)
    page = client.get(f"/dashboard/map?location={row['id']}&asOf={iso(instant)}").data
    api = client.get(
        f"/api/v1/disruptions?locationId={row['id']}&asOf={iso(instant)}",
        headers={"Authorization": f"Bearer {key}"},
    ).json
    assert works_of(page) == [(w["id"], w["status"]) for w in api["construction"]]
    assert b"<h1>Stadhuis</h1>" in page and b'name="location" value="' + row["id"].encode() in page


@pytest.mark.parametrize(
    "query, status, friendly, counted",
    [
        ("at=gisteren", 400, "That is not a date and time the service can read.", False),
        ("at=2026-11-10T25:00", 400, "That is not a date and time the service can read.", False),
        ("at=2026-03-29T02:30", 400, "does not exist in Brussels", False),
        ("asOf=2026-11-10T08:00:00", 400, "That is not a date and time the service can read.", True),
        ("asOf=2026-11-20T08:00:00Z", 422, "That moment is still to come", True),
        ("at=2026-10-01T08:00", 422, "The history does not reach back that far", True),
        ("asOf=2020-01-01T00:00:00Z", 422, "The history does not reach back that far", True),
    ],
)
def test_bad_instants_get_a_friendly_message_and_no_figures(
    app, user, engine, query, status, friendly, counted
):
    account, _key, client = user("enterprise")
    before = used(app, account["id"], engine)
    resp = client.get(f"/dashboard/map?lat={POINT[0]}&lng={POINT[1]}&{query}")
    assert resp.status_code == status
    text = html.unescape(resp.data.decode())
    assert 'data-testid="as-of-error"' in text and friendly in text
    assert 'data-testid="work"' not in text and 'id="map-point"' not in text  # never today's answer
    assert "Back to now" in text and 'data-testid="as-of-form"' in text
    assert used(app, account["id"], engine) == before + counted


def test_another_plan_asking_for_an_instant_is_told_the_plan(user):
    _account, _key, client = user("pro")
    resp = client.get(f"/dashboard/map?lat={POINT[0]}&lng={POINT[1]}&asOf=2026-11-16T06:00:00Z")
    assert resp.status_code == 403
    text = html.unescape(resp.data.decode())
    assert "part of the Enterprise plan" in text and 'data-testid="work"' not in text
    assert 'data-testid="as-of-form"' not in text


def test_brussels_wall_times_convert_with_the_zone():
    from app.dashboard.time_travel import from_wall_time, local_time

    assert iso(from_wall_time("2026-07-01T12:00")) == "2026-07-01T10:00:00.000Z"  # CEST
    assert iso(from_wall_time("2026-12-01T12:00:30")) == "2026-12-01T11:00:30.000Z"  # CET
    assert iso(from_wall_time("2026-10-25T02:30")) == "2026-10-25T00:30:00.000Z"  # twice: the first (CEST)
    assert local_time(from_wall_time("2026-07-01T12:00")) == "1 Jul 2026 12:00 CEST"
    assert local_time(from_wall_time("2026-12-01T12:00:30"), "nl") == "1 dec 2026 12:00:30 CET"


def test_the_control_speaks_the_chosen_language(user, engine, demo_history):
    """Issue 30 item 6: French chosen, the banner, the form and a refusal say nothing of ours in English;
    times are i18n's (French months, the zone's name); the API's own message stays as the detail."""
    _url, publishes = demo_history
    _account, _key, client = user("enterprise")
    assert client.get("/dashboard/language/fr?next=/dashboard/").status_code == 302
    instant = publishes[1].as_of + timedelta(minutes=1)
    text = html.unescape(
        client.get(f"/dashboard/map?lat={POINT[0]}&lng={POINT[1]}&asOf={iso(instant)}").data.decode()
    )
    months = (
        "janv.",
        "févr.",
        "mars",
        "avr.",
        "mai",
        "juin",
        "juil.",
        "août",
        "sept.",
        "oct.",
        "nov.",
        "déc.",
    )
    here = instant + timedelta(hours=1)  # CET in November
    assert f"État au {here.day} {months[here.month - 1]} {here.year} {here:%H:%M} CET" in text
    assert "tirées de l'instantané de données du" in text and "Revenir à maintenant" in text
    assert "Réponses au" in text and "Afficher à ce moment" in text and "(heure de Bruxelles)" in text
    for english in (
        "As of ",
        "the answers as the service gave them",
        "Back to now",
        "Show as of",
        "(Brussels time)",
    ):
        assert english not in text, english
    late = client.get(f"/dashboard/map?lat={POINT[0]}&lng={POINT[1]}&asOf=2026-11-20T08:00:00Z")
    said = html.unescape(late.data.decode())
    assert late.status_code == 422 and "Ce moment est encore à venir" in said and "(as_of_in_future)" in said
    assert "That moment is still to come" not in said
