"""One language per screen and times for people (issue 30, items 6 and 7): the labels catalogue, the choice of
language, local times with zone names, the daytime window and the demo banner."""

from __future__ import annotations

import re
import string
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from app.dashboard import i18n
from geo.rules.texts import LANGUAGES
from geo.rules.timefmt import BRUSSELS
from geo.rules.windows import DAYTIME_HOURS, daytime_best, windows

from .conftest import CSRF

UTC = timezone.utc


def fields(text):
    return sorted(name for _lit, name, _spec, _conv in string.Formatter().parse(text) if name)


def test_every_label_exists_in_every_language_with_the_same_fields():
    for msgid, texts in i18n.LABELS.items():
        assert len(texts) == len(LANGUAGES), msgid
        assert all(t.strip() for t in texts), msgid
        assert len({tuple(fields(t)) for t in texts}) == 1, msgid


def test_every_label_a_template_or_script_asks_for_exists():
    from pathlib import Path

    root = Path(i18n.__file__).parent
    asked = set()
    for path in [*root.glob("templates/dashboard/**/*.html"), *root.glob("*.py")]:
        asked |= set(re.findall(r"""\bt\(\s*['"]([a-z_.0-9]*[a-z0-9_])['"]\s*[,)]""", path.read_text()))
    scripted = re.search(
        r"t\.script\(([^)]*)\)", (root / "templates/dashboard/parts/map_labels.html").read_text()
    )
    asked |= set(re.findall(r"'([a-z_.0-9]+)'", scripted.group(1)))
    assert asked and asked <= set(i18n.LABELS), sorted(asked - set(i18n.LABELS))


def test_every_value_we_label_has_its_label():
    """Values of our own rules shown to people (risk, trend, severity, change types, rush kinds) are labelled."""
    from geo.rules.airrules import TREND_NAMES
    from geo.rules.calendar import RUSH_PERIODS
    from geo.rules.changes import EVENT_TYPES
    from geo.rules.risk import RISK_NAMES
    from geo.rules.transit import SEVERITY_NAMES

    rush = {p.kind for periods in RUSH_PERIODS.values() for p in periods}
    for family, values in (
        ("risk", RISK_NAMES),
        ("trend", TREND_NAMES),
        ("sev", SEVERITY_NAMES),
        ("ctype", EVENT_TYPES),
        ("rush", rush),
    ):
        for value in values:
            assert f"{family}.{value}" in i18n.LABELS


@pytest.mark.parametrize(
    "cookie, header, expected",
    [
        ("fr", "en-GB,en;q=0.9", "fr"),  # the remembered choice wins
        (None, "fr-BE,fr;q=0.9,en;q=0.8", "fr"),
        (None, "en-US,en;q=0.9", "en"),
        (None, "de-DE,de;q=0.9", "nl"),  # nothing we speak: the default, as the API
        (None, None, "nl"),
        ("xx", "en", "en"),  # a forged cookie is ignored
    ],
)
def test_the_language_is_the_choice_else_the_browsers(cookie, header, expected):
    assert i18n.choose(cookie, header) == expected


@pytest.mark.parametrize(
    "value, lang, expected",
    [
        ("2026-11-16T07:00:00.000Z", "en", "Mon 16 Nov 08:00 CET"),
        ("2026-11-16T07:00:00.000Z", "nl", "ma 16 nov 08:00 CET"),
        ("2026-11-16T07:00:00.000Z", "fr", "lun. 16 nov. 08:00 CET"),
        ("2026-07-01T12:30:00Z", "en", "Wed 1 Jul 14:30 CEST"),
        ("2026-03-29T00:59:59Z", "en", "Sun 29 Mar 01:59 CET"),  # the last second of winter time
        ("2026-03-29T01:00:00Z", "en", "Sun 29 Mar 03:00 CEST"),
        (datetime(2026, 10, 25, 0, 30, tzinfo=UTC), "en", "Sun 25 Oct 02:30 CEST"),
        (
            datetime(2026, 10, 25, 1, 30, tzinfo=UTC),
            "en",
            "Sun 25 Oct 02:30 CET",
        ),  # the same wall time, told apart
    ],
)
def test_times_for_people_are_brussels_time_with_the_zone_name(value, lang, expected):
    assert i18n.local_time(value, lang) == expected


def test_a_naive_time_is_refused_rather_than_guessed():
    with pytest.raises(ValueError):
        i18n.local_time("2026-11-16T07:00:00")


def test_windows_for_people():
    assert i18n.local_span("2026-11-16T10:00:00+01:00", "2026-11-16T12:00:00+01:00", "fr") == (
        "lun. 16 nov. 10:00–12:00 CET"
    )
    assert i18n.local_span("2026-11-16T23:00:00+01:00", "2026-11-17T01:00:00+01:00", "en") == (
        "Mon 16 Nov 23:00 – Tue 17 Nov 01:00 CET"
    )
    assert i18n.local_span("2026-10-25T02:00:00+02:00", "2026-10-25T03:00:00+01:00", "en") == (
        "Sun 25 Oct 02:00 CEST – 03:00 CET"
    )
    assert i18n.decimal(0.625, "fr", 3) == "0,625" and i18n.decimal(0.19, "en") == "0.19"


# -- the daytime window ------------------------------------------------------------------------------------


@pytest.mark.parametrize("hour_utc", range(0, 24, 1))
def test_the_daytime_window_lies_in_the_day_and_is_the_quietest_there(engine, hour_utc):
    from geo.service.briefing import briefing, daytime_window, slot_scores
    from geo.service import disruptions as dis
    from geo.service.loaded import moment

    now = datetime(2026, 11, 16, tzinfo=UTC) + timedelta(hours=hour_utc, minutes=17)
    lat, lng = 51.2194, 4.4025
    w = daytime_window(engine, lat, lng, now)
    start, end = datetime.fromisoformat(w["start"]), datetime.fromisoformat(w["end"])
    assert (
        DAYTIME_HOURS[0] <= start.hour and end.hour <= DAYTIME_HOURS[1] and end - start == timedelta(hours=2)
    )
    assert now <= start and end <= now + timedelta(hours=24)
    # unrestricted, the same rule gives the API's bestWindow (which may lie at night)
    assert daytime_window(engine, lat, lng, now, (0, 24)) == briefing(engine, lat, lng, now)["bestWindow"]
    # brute force: no daytime window of the next 24 h has a lower score
    m = moment(engine, now)
    starts, scores = slot_scores(engine, dis.find_at(engine, lat, lng, m), m.now_ms)
    for i in range(len(starts) - 1):
        s_local = datetime.fromtimestamp(starts[i] / 1000, BRUSSELS)
        if s_local.hour < DAYTIME_HOURS[0] or s_local.hour + 2 > DAYTIME_HOURS[1]:
            continue
        if starts[i] + 2 * 3_600_000 > m.now_ms + 24 * 3_600_000:
            continue
        assert round((scores[i] + scores[i + 1]) / 2, 3) >= w["score"]


def test_daytime_best_has_no_window_when_the_day_is_out_of_reach():
    starts = np.arange(3) * 3_600_000  # 01:00-03:00 in Brussels on 1 Jan 1970
    assert daytime_best(starts, np.zeros(3), 0) is None
    assert windows(starts, np.zeros(3), 0)[0] == (0, 0.0)


# -- the pages -------------------------------------------------------------------------------------------


def test_the_browsers_language_sets_labels_and_generated_texts(app, user):
    from geo.service.briefing import briefing

    _acc, _key, client = user("pro")
    page = client.get("/dashboard/map?lat=51.2194&lng=4.4025", headers={"Accept-Language": "fr-BE,fr"})
    html = page.get_data(as_text=True)
    assert '<html lang="fr">' in html and "Chantiers dans un rayon de 2 km" in html
    headline = briefing(app.config["ENGINE"], 51.2194, 4.4025, app.config["ENGINE"].as_of, "fr")["headline"]
    assert headline.replace("'", "&#39;") in html
    assert "Données de démonstration" in html and "lun. 16 nov. 08:00 CET" in html
    # none of the English labels of the same page
    for english in ("Road works within", "Air quality", "Latest value observed", "Sign out", "Legend"):
        assert english not in html, english
    # upstream values stay as published
    assert "In uitvoering" in html


def test_the_switch_remembers_the_choice_and_goes_back_only_to_the_dashboard(user):
    _acc, _key, client = user("pro")
    resp = client.get("/dashboard/language/nl?next=/dashboard/map?lat=51.2194%26lng=4.4025")
    assert resp.status_code == 302 and resp.headers["Location"] == "/dashboard/map?lat=51.2194&lng=4.4025"
    cookie = resp.headers["Set-Cookie"]
    assert cookie.startswith("urban_lang=nl;") and "HttpOnly" in cookie and "Path=/dashboard" in cookie
    html = client.get("/dashboard/").get_data(as_text=True)  # the test client keeps the cookie; it says en
    assert '<html lang="nl">' in html and "Bewaarde locaties" in html
    for evil in ("https://evil.example/", "//evil.example/dashboard/", "/portal/", "/dashboard/\\evil"):
        resp = client.get("/dashboard/language/fr", query_string={"next": evil})
        assert resp.headers["Location"] == "/dashboard/", evil
    # the switcher of a page that answers a POST (a refused form) goes back to a page a GET can open
    refused = client.post(
        "/dashboard/locations", data={"csrf_token": CSRF, "name": "X", "lat": "x", "lng": "4"}
    )
    assert "/dashboard/language/fr?next=/dashboard/" in refused.get_data(as_text=True)
    assert "next=/dashboard/locations" not in refused.get_data(as_text=True)
    resp = client.get("/dashboard/language/de?next=/dashboard/")
    assert resp.status_code == 302 and "Set-Cookie" not in resp.headers


def test_errors_say_what_went_wrong_in_the_users_language(user):
    _acc, _key, client = user("pro")
    resp = client.post(
        "/dashboard/locations",
        data={"csrf_token": CSRF, "name": "X", "lat": "51,2194", "lng": "4.4"},
        headers={"Accept-Language": "nl"},
    )
    html = resp.get_data(as_text=True)
    assert resp.status_code == 400 and "De coördinaten zijn geen geldige getallen" in html
    assert "invalid_coordinates" in html  # the code stays, for support


def test_no_demo_banner_for_live_data(user, app, monkeypatch):
    from app.dashboard import figures

    sources = [{"source": "gipod", "kind": "live"}]
    assert figures.demo_clock({"a": {"sources": sources}}, datetime.now(UTC), datetime.now(UTC)) is None
    clock = datetime(2026, 11, 16, 7, tzinfo=UTC)
    demo = figures.demo_clock(
        {"a": {"sources": [{"source": "x", "kind": "demo"}]}}, clock, clock + timedelta(days=11, hours=5)
    )
    assert demo == {"when": clock, "days": 11}
