"""The history resources over HTTP (/history/air-quality, /history/works, /history/detours), both store
backends: they answer the query layer's results (tests/history/test_query.py checks those against the
oracle), in JSON, GeoJSON and CSV (parsed back), paged (the pages concatenate to the unpaged answer, also
while new snapshots are recorded), Enterprise only, every bad input a documented 4xx in the one error shape,
and conforming to the OpenAPI document."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from app import create_app
from app.api import history as api
from app.history import query as q
from app.history.asof import iso
from app.history.store import open_store
from app.store import accounts
from app.store.db import open_store as open_accounts

#: the session fixtures record a simulated year: minutes on a shared 2-core machine, not the default 5
pytestmark = pytest.mark.timeout(1800)

PATHS = ("/history/air-quality", "/history/works", "/history/detours")
ITEMS = {"/history/air-quality": "values", "/history/works": "works", "/history/detours": "detours"}
POINT = {"lat": "51.2194", "lng": "4.4025"}
DAY = timedelta(days=1)


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def make_app(instance, engine, history_url, wall):
    return create_app(
        {
            "TESTING": True,
            "INSTANCE_PATH": str(instance),
            "ENGINE": engine,
            "HISTORY_URL": history_url,
            "CLOCK": "system",
            "WALL_CLOCK": wall,
        }
    )


def account(app, plan: str, email: str | None = None) -> str:
    conn = open_accounts(app)
    _row, key = accounts.create_account(conn, email or f"{plan}@antwerpen.be", plan)
    conn.close()
    return key


@pytest.fixture(scope="module")
def latest(year_engine):
    return year_engine(-1)


@pytest.fixture(scope="module")
def served(year_store_url, year_dirs, latest, tmp_path_factory):
    """(app, Enterprise key, window query): an app serving the newest publish, its store the simulated
    year, the wall clock a day after it; the window is the whole kept year."""
    wall = Clock(year_dirs[-1][0] + DAY)
    app = make_app(tmp_path_factory.mktemp("instance"), latest, year_store_url, wall)
    window = {"from": iso(wall.now - timedelta(days=365)), "to": iso(wall.now)}
    return app, account(app, "enterprise"), window


def get(app, key, path, headers=None, **params):
    return app.test_client().get(
        f"/api/v1{path}", query_string=params, headers={**bearer(key), **(headers or {})}
    )


def all_pages(app, key, path, headers=None, **params) -> list:
    """Every page of a paged answer, following ``next``."""
    pages = [get(app, key, path, headers, **params)]
    while True:
        last = pages[-1]
        assert last.status_code == 200, last.data
        cursor = (
            last.get_json()["next"]
            if last.mimetype == "application/json"
            else _link_cursor(last.headers.get("Link"))
        )
        if cursor is None:
            return pages
        params = {**params, "cursor": cursor}
        pages.append(get(app, key, path, headers, **params))


def _link_cursor(link: str | None) -> str | None:
    if link is None:
        return None
    url = link.split(";")[0].strip("<> ")
    return parse_qs(urlsplit(url).query)["cursor"][0]


def test_the_resources_answer_the_query_layer(served, year_store_url):
    app, key, window = served
    store = open_store(year_store_url)
    start, end = (api.ms(api.parse_instant(window[k])) for k in ("from", "to"))
    lat, lng = float(POINT["lat"]), float(POINT["lng"])
    expected = {
        "/history/air-quality": [api.no2_json(v) for v in q.no2_series(store, lat, lng, start, end)],
        "/history/works": [api.work_json(w) for w in q.works_near(store, lat, lng, start, end)],
        "/history/detours": [api.detour_json(h) for h in q.detours_hitting(store, lat, lng, start, end)],
    }
    store.close()
    for path in PATHS:
        resp = get(app, key, path, **POINT, **window, limit=api.RESOURCES[PATHS.index(path)].max_limit)
        assert resp.status_code == 200, resp.data
        body = resp.get_json()
        assert body[ITEMS[path]] == expected[path] and body["next"] is None
        assert body["location"] == {"lat": lat, "lng": lng}
        assert body["window"] == window
        assert expected[path], path  # not an empty comparison
    values = expected["/history/air-quality"]
    assert len(values) == 365 * 24
    assert any(v["value"] is None for v in values) and all(v["value"] != 0 for v in values)
    assert any(w["changes"] for w in expected["/history/works"])


@pytest.mark.parametrize("path", PATHS)
def test_pages_concatenate_to_the_unpaged_answer(served, path):
    app, key, window = served
    resource = api.RESOURCES[PATHS.index(path)]
    whole = get(app, key, path, **POINT, **window, limit=resource.max_limit).get_json()
    items = ITEMS[path]
    size = max(1, len(whole[items]) // 4 + 1) if items != "values" else 1000
    pages = all_pages(app, key, path, **POINT, **window, limit=size)
    assert len(pages) >= 2
    assert [x for p in pages for x in p.get_json()[items]] == whole[items]
    assert all(len(p.get_json()[items]) == size for p in pages[:-1])
    assert pages[0].headers["Link"].endswith('; rel="next"') and "Link" not in pages[-1].headers
    for page in pages[1:]:  # every page says the same window
        assert page.get_json()["window"] == whole["window"]


def parse_csv(text: str) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return rows[0], rows[1:]


def cell(value) -> str:
    """The CSV text of a JSON value (the documented rule)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, list):
        return ",".join(value)
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


@pytest.mark.parametrize("path", PATHS)
def test_csv_parses_back_to_the_json_answer(served, path):
    app, key, window = served
    items = ITEMS[path]
    size = {"values": 2000, "works": 7, "detours": 3}[items]
    json_pages = all_pages(app, key, path, **POINT, **window, limit=size)
    csv_pages = all_pages(app, key, path, {"Accept": "text/csv"}, **POINT, **window, limit=size)
    assert len(csv_pages) == len(json_pages)
    header, rows = None, []
    for page in csv_pages:
        assert page.headers["Content-Type"] == "text/csv; charset=utf-8; header=present"
        head, body = parse_csv(page.get_data(as_text=True))
        assert header in (None, head)
        header = head
        rows += body
    assert tuple(header) == api.CSV_COLUMNS[items]
    expected = []
    for item in (x for p in json_pages for x in p.get_json()[items]):
        if items != "works":
            expected.append([cell(item[c]) for c in header])
            continue
        for change in item["changes"] or [dict.fromkeys(header[11:])]:
            expected.append([cell(item[c]) for c in header[:11]] + [cell(change[c]) for c in header[11:]])
    assert rows == expected and rows


def test_works_as_geojson_place_each_work_at_its_extent(served, year_store_url):
    app, key, window = served
    resp = get(app, key, "/history/works", {"Accept": "application/geo+json"}, **POINT, **window, limit=1000)
    assert resp.status_code == 200 and resp.mimetype == "application/geo+json"
    features = resp.get_json()["features"]
    plain = get(app, key, "/history/works", **POINT, **window, limit=1000).get_json()
    assert features[0]["properties"]["kind"] == "location"
    assert features[0]["geometry"]["coordinates"] == [4.4025, 51.2194]
    assert [f["properties"] for f in features[1:]] == [{"kind": "work", **w} for w in plain["works"]]
    import shapely
    from shapely.geometry import Point, shape

    here = Point(4.4025, 51.2194)
    for f in features[1:]:
        geometry = shape(f["geometry"])
        assert geometry.geom_type in ("Polygon", "MultiPolygon", "Point", "LineString", "MultiLineString")
        assert shapely.distance(geometry, here) < 0.05  # degrees: within a few km of the point
    assert (
        get(app, key, "/history/detours", {"Accept": "application/geo+json"}, **POINT, **window).status_code
        == 406
    )


def test_a_cursor_reads_the_same_history_while_snapshots_are_recorded(
    store_url, year_dirs, latest, tmp_path, request
):
    # a copy of the six publishes recorded once per run (PostgreSQL: a database of its own)
    if "://" in store_url:
        store_url = request.getfixturevalue("first_publishes_pg")(6)
    else:
        store_url = request.getfixturevalue("first_publishes_sqlite")(6, store_url)
    store = open_store(store_url)
    wall = Clock(year_dirs[-1][0] + DAY)
    app = make_app(tmp_path / "instance", latest, store_url, wall)
    key = account(app, "enterprise")
    params = {**POINT, "from": iso(wall.now - timedelta(days=365))}  # to: now
    whole = get(app, key, "/history/works", **params, limit=1000).get_json()
    first = get(app, key, "/history/works", **params, limit=3).get_json()
    assert first["next"] is not None
    for _instant, path in year_dirs[6:8]:  # two more publishes recorded between the pages
        store.record_dir(path)
    wall.now += timedelta(hours=5)  # to (now) moves on, the cursor keeps the first page's window
    rest = all_pages(app, key, "/history/works", **params, limit=3, cursor=first["next"])
    assert first["works"] + [w for p in rest for w in p.get_json()["works"]] == whole["works"]
    # without a cursor the window is today's: from lies past the kept 365 days now, and a later from sees
    # the snapshots recorded since
    late = get(app, key, "/history/works", **params, limit=1000)
    assert (late.status_code, late.get_json()["error"]) == (422, "window_out_of_range")
    fresh = get(
        app, key, "/history/works", **{**params, "from": iso(wall.now - timedelta(days=364))}, limit=1000
    )
    assert fresh.get_json()["works"] != whole["works"]
    store.close()


def window_errors(now):
    """(parameters, status, code): every class of bad window, limit and cursor."""
    old = iso(now - timedelta(days=365) - timedelta(minutes=1))
    return [
        ({}, 400, "invalid_window"),  # from missing
        ({"from": "yesterday"}, 400, "invalid_window"),
        ({"from": "2026-11-01"}, 400, "invalid_window"),
        ({"from": "2026-11-01T10:00:00"}, 400, "invalid_window"),  # no offset
        ({"from": "2026-11-01T10:00:00 01:00"}, 400, "invalid_window"),  # '+' unescaped
        ({"from": "2026-02-30T10:00:00Z"}, 400, "invalid_window"),
        ({"from": iso(now - DAY), "to": "2026-13-01T00:00:00Z"}, 400, "invalid_window"),
        ({"from": iso(now - DAY), "to": iso(now - DAY)}, 400, "invalid_window"),  # empty
        ({"from": iso(now - DAY), "to": iso(now - 2 * DAY)}, 400, "invalid_window"),  # reversed
        ({"from": iso(now - DAY), "limit": "0"}, 400, "invalid_request"),
        ({"from": iso(now - DAY), "limit": "-1"}, 400, "invalid_request"),
        ({"from": iso(now - DAY), "limit": "1.5"}, 400, "invalid_request"),
        ({"from": iso(now - DAY), "limit": "٣"}, 400, "invalid_request"),
        ({"from": iso(now - DAY), "limit": "100000"}, 400, "invalid_request"),
        ({"from": iso(now - DAY), "cursor": "nonsense"}, 400, "invalid_cursor"),
        ({"from": iso(now - DAY), "cursor": "eyJvIjotMX0"}, 400, "invalid_cursor"),  # {"o":-1}
        ({"from": old}, 422, "window_out_of_range"),
        ({"from": iso(now + timedelta(minutes=1))}, 422, "window_out_of_range"),
        ({"from": "0001-01-01T00:00:00Z", "to": "0001-01-02T00:00:00Z"}, 422, "window_out_of_range"),
        ({"from": "2020-01-01T00:00:00Z", "to": "2030-01-01T00:00:00Z"}, 422, "window_out_of_range"),
    ]


@pytest.mark.parametrize("path", PATHS)
def test_every_bad_window_limit_or_cursor_is_a_documented_4xx(served, path):
    app, key, _window = served
    now = app.config["WALL_CLOCK"]()
    for params, status, code in window_errors(now):
        resp = get(app, key, path, **POINT, **params)
        assert (resp.status_code, resp.get_json()["error"]) == (status, code), params
        assert set(resp.get_json()) == {"error", "message"} and resp.get_json()["message"]


def test_a_window_longer_than_one_call_may_ask_is_422(store_url, year_dirs, latest, tmp_path):
    wall = Clock(year_dirs[-1][0] + DAY)
    app = make_app(tmp_path / "instance", latest, store_url, wall)
    app.config["HISTORY_DAYS"] = 800  # a store keeping more than one call's window
    key = account(app, "enterprise")
    params = {"from": iso(wall.now - timedelta(days=367)), "to": iso(wall.now)}
    resp = get(app, key, "/history/works", **POINT, **params)
    assert (resp.status_code, resp.get_json()["error"]) == (422, "window_too_long")
    params["from"] = iso(wall.now - timedelta(days=366))
    assert get(app, key, "/history/works", **POINT, **params).status_code == 200


def test_a_cursor_of_another_query_is_refused(served):
    app, key, window = served
    page = get(app, key, "/history/works", **POINT, **window, limit=1).get_json()
    for other in (
        {**POINT, "lat": "51.2195", **window},
        {**POINT, "from": iso(api.parse_instant(window["from"]) + DAY), "to": window["to"]},
    ):
        resp = get(app, key, "/history/works", **other, limit=1, cursor=page["next"])
        assert (resp.status_code, resp.get_json()["error"]) == (400, "invalid_cursor")
    resp = get(app, key, "/history/detours", **POINT, **window, limit=1, cursor=page["next"])
    assert (resp.status_code, resp.get_json()["error"]) == (400, "invalid_cursor")


@pytest.mark.parametrize("path", PATHS)
def test_targets_are_checked_as_on_the_live_endpoints(served, path):
    app, key, window = served
    cases = [
        ({}, 400, "missing_target"),
        ({"lat": "51.2"}, 400, "missing_target"),
        ({"lat": "x", "lng": "4.4"}, 400, "invalid_coordinates"),
        ({**POINT, "locationId": "loc_x"}, 400, "ambiguous_target"),
        ({"locationId": "loc_nope"}, 404, "location_not_found"),
        ({"lat": "50.6326", "lng": "5.5797"}, 422, "outside_service_area"),  # Liège
    ]
    for params, status, code in cases:
        resp = get(app, key, path, **params, **window)
        assert (resp.status_code, resp.get_json()["error"]) == (status, code), params


@pytest.mark.parametrize("plan", ["developer", "api", "pro"])
def test_the_history_resources_are_enterprise_only(served, plan):
    app, _key, window = served
    key = account(app, plan, f"{plan}-history@antwerpen.be")
    for path in PATHS:
        resp = get(app, key, path, **POINT, **window)
        assert (resp.status_code, resp.get_json()["error"]) == (403, "plan_required")
        assert "Enterprise" in resp.get_json()["message"]
    assert get(app, "uc_live_nope", PATHS[0], **POINT, **window).status_code == 401


def test_an_unreachable_store_is_503_history_unavailable(latest, tmp_path, year_dirs):
    wall = Clock(year_dirs[-1][0] + DAY)
    app = make_app(tmp_path / "instance", latest, "postgresql://nobody@127.0.0.1:9/none", wall)
    key = account(app, "enterprise")
    resp = get(app, key, "/history/works", **POINT, **{"from": iso(wall.now - DAY)})
    assert (resp.status_code, resp.get_json()["error"]) == (503, "history_unavailable")
    assert resp.headers["Retry-After"] == "5"


def test_the_answers_conform_to_the_openapi_document(served):
    app, key, window = served
    doc = app.test_client().get("/api/v1/openapi.json").get_json()
    registry = Registry().with_resource(
        "urn:api", Resource.from_contents(doc, default_specification=DRAFT202012)
    )
    cases = [(p, {}, {**POINT, **window, "limit": "50"}) for p in PATHS]
    cases += [("/history/works", {"Accept": "application/geo+json"}, {**POINT, **window})]
    cases += [(p, {}, {**POINT, "from": "junk"}) for p in PATHS]
    for path, headers, params in cases:
        resp = get(app, key, path, headers, **params)
        op = doc["paths"][path]["get"]
        assert str(resp.status_code) in op["responses"], (path, resp.status_code)
        media = resp.mimetype.replace("/", "~1")
        pointer = f"/paths/{path.replace('/', '~1')}/get/responses/{resp.status_code}/content/{media}/schema"
        Draft202012Validator({"$ref": "urn:api#" + pointer}, registry=registry).validate(resp.get_json())
    for path in PATHS:
        op = doc["paths"][path]["get"]
        assert "text/csv" in op["responses"]["200"]["content"]
        names = {p.get("name") or p["$ref"].rsplit("/", 1)[1] for p in op["parameters"]}
        assert names == {"locationId", "lat", "lng", "historyFrom", "historyTo", "historyCursor", "limit"}
    codes = set(doc["components"]["schemas"]["Error"]["properties"]["error"]["enum"])
    assert {"invalid_window", "window_too_long", "window_out_of_range", "invalid_cursor"} <= codes


def test_each_resource_is_documented_served_and_described(served):
    from pathlib import Path

    app, _key, _window = served
    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    rules = {r.rule: r.endpoint for r in app.url_map.iter_rules()}
    doc = app.test_client().get("/api/v1/openapi.json").get_json()
    for resource in api.RESOURCES:
        assert f"## GET {resource.path}\n" in text
        assert rules.get(f"/api/v1{resource.path}") == f"api_v1.history.{resource.view}"
        assert doc["paths"][resource.path]["get"]["summary"] == resource.summary
        assert app.view_functions[f"api_v1.history.{resource.view}"].__doc__ == resource.summary
