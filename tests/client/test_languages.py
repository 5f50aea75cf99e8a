"""One language per screen (issue 30): `urban --lang nl|fr|en` prints every label in that language, asks the
API for its generated texts in it, and leaves data values Dutch; times for people are Brussels time with the
zone's name; a location id is never cut, at any terminal width. Against the real app, `urban` as a
subprocess."""

from __future__ import annotations

import re
import string

import pytest

from urban_client.labels import CATALOGUE, Labels, choose_language, locale_language

pytestmark = pytest.mark.slow  # starts a real server and many processes

LANGS = ("nl", "fr", "en")
COMMANDS = {
    "locations": (),
    "disruptions": ("--location-id", "loc_groenplaats"),
    "air-quality": ("--location-id", "loc_groenplaats"),
    "briefing": ("--location-id", "loc_groenplaats"),
}
ISO = re.compile(r"\d{4}-\d{2}-\d{2}")


def env_for(api_server, key):
    return {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": key}


def fragments(text: str) -> list[str]:
    """The literal pieces of a catalogue entry (without its {fields}), stripped of punctuation."""
    pieces = [literal for literal, *_ in string.Formatter().parse(text)]
    return [p.strip(" :\u00a0—()·.,") for p in pieces if p and len(p.strip(" :\u00a0—()·.,")) >= 4]


def foreign_labels(lang: str) -> set[str]:
    """Label fragments of the other languages that the catalogue of ``lang`` does not use."""
    own = {f for text in CATALOGUE[lang].values() for f in fragments(text)}
    own_text = " ".join(CATALOGUE[lang].values())
    return {
        f
        for other in LANGS
        if other != lang
        for text in CATALOGUE[other].values()
        for f in fragments(text)
        if f not in own and f not in own_text
    }


def strings(value):
    """Every string value in a JSON body."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_every_language_has_the_same_labels_and_fields():
    keys = set(CATALOGUE["en"])
    for lang in LANGS:
        assert set(CATALOGUE[lang]) == keys, lang
        for key in keys:
            fields = {name for _, name, *_ in string.Formatter().parse(CATALOGUE[lang][key]) if name}
            want = {name for _, name, *_ in string.Formatter().parse(CATALOGUE["en"][key]) if name}
            assert fields == want, (lang, key)


def test_times_are_brussels_time_with_the_zone_name_in_each_language():
    assert Labels("en").moment("2026-11-16T07:00:00Z") == "Mon 16 Nov 08:00 CET"
    assert Labels("fr").moment("2026-07-01T06:00:00.000Z") == "mer. 1 juil. 08:00 CEST"
    assert Labels("nl").moment("2026-11-16T07:00:00Z") == "ma 16 nov 08:00 CET"
    assert Labels("nl").date("2030-01-09") == "wo 9 jan 2030"
    # a window across the switch to winter time names both zones
    window = {"start": "2026-10-25T00:00:00Z", "end": "2026-10-25T02:00:00Z"}
    assert Labels("en").window(window) == "Sun 25 Oct 02:00 CEST–03:00 CET"
    assert Labels("fr").distance(1.234) == "1,23 km" and Labels("en").distance(1.234) == "1.23 km"
    assert Labels("fr").percent(-12.5) == "-12,5\u00a0%" and Labels("en").percent(3.0) == "+3%"


def test_language_choice_order():
    assert choose_language("fr", {"lang": "nl"}, {"URBAN_LANG": "en"}) == "fr"
    assert choose_language(None, {"lang": "nl"}, {"URBAN_LANG": "en"}) == "en"
    assert choose_language(None, {"lang": "nl"}, {"LANG": "fr_BE.UTF-8"}) == "nl"
    assert choose_language(None, {}, {"LANG": "fr_BE.UTF-8"}) == "fr"
    assert choose_language(None, {}, {"LC_ALL": "de_DE.UTF-8", "LANG": "fr_BE"}) == "en"
    assert locale_language({}) is None
    with pytest.raises(ValueError, match="URBAN_LANG"):
        choose_language(None, {}, {"URBAN_LANG": "de"})


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("lang", LANGS)
def test_one_language_per_screen(api_server, account, run_urban, command, lang):
    proc = run_urban("--lang", lang, command, *COMMANDS[command], env=env_for(api_server, account.key))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    params = {"locationId": "loc_groenplaats"} if COMMANDS[command] else {}
    body = api_server.get(command, account.key, **params, _lang=lang).json()
    labels_only = out
    for value in sorted(strings(body), key=len, reverse=True):  # data values (Dutch) and the API's texts
        labels_only = labels_only.replace(value, " ")
    leaks = sorted(f for f in foreign_labels(lang) if re.search(rf"(?<!\w){re.escape(f)}(?!\w)", labels_only))
    assert not leaks, f"labels of another language in the {lang} output: {leaks}\n{out}"
    assert not ISO.search(out), f"an ISO date for people:\n{out}"
    if command == "locations":
        assert Labels(lang)("locations.title") in out
        return
    if command == "briefing":
        assert body["headline"] in out
        assert all(fact["text"] in out for fact in body["keyFacts"])
        assert re.search(r"\d\d:\d\d CES?T", out)
    if command == "air-quality":
        assert body["compliance"]["label"] in out
        assert body["reading"]["station"]["name"] in out  # a data value: as published
    if command == "disruptions":
        assert body["construction"][0]["description"] in out  # Dutch data values stay Dutch
        assert re.search(r"\d\d:\d\d CES?T", out)
    for other in LANGS:  # the API's texts of the other languages do not appear
        if other != lang and command in ("briefing", "air-quality"):
            theirs = api_server.get(command, account.key, **params, _lang=other).json()
            text = theirs["headline"] if command == "briefing" else theirs["compliance"]["label"]
            assert text not in out


def test_per_command_lang_environment_and_config(api_server, account, run_urban, client_env, tmp_path):
    env = env_for(api_server, account.key)
    assert (
        "Risque"
        in run_urban("briefing", "--location-id", "loc_groenplaats", "--lang", "fr", env=env).stdout.decode()
    )
    out = run_urban(
        "briefing", "--location-id", "loc_groenplaats", env=dict(env, URBAN_LANG="nl")
    ).stdout.decode()
    assert out.startswith("Risico: ")
    out = run_urban(
        "briefing", "--location-id", "loc_groenplaats", env=dict(env, LC_ALL="fr_BE.UTF-8")
    ).stdout
    assert out.decode().startswith("Risque\u00a0: ")
    stored = run_urban("configure", "--lang", "nl", input=account.key.encode() + b"\n")
    assert stored.returncode == 0, stored.stderr
    out = run_urban("air-quality", "--location-id", "loc_groenplaats", env=env).stdout.decode()
    assert "Lage-emissiezone: " in out
    bad = run_urban("briefing", "--location-id", "loc_groenplaats", env=dict(env, URBAN_LANG="de"))
    assert bad.returncode == 2 and b"URBAN_LANG" in bad.stderr


def test_json_sends_only_a_language_the_user_chose(api_server, account, run_urban):
    """--json is for programs: the locale does not change it, an explicit choice does."""
    env = dict(env_for(api_server, account.key), LC_ALL="fr_BE.UTF-8")
    args = ("briefing", "--location-id", "loc_groenplaats", "--json")
    dutch = api_server.get("briefing", account.key, locationId="loc_groenplaats").content
    assert run_urban(*args, env=env).stdout == dutch
    english = api_server.get("briefing", account.key, locationId="loc_groenplaats", _lang="en").content
    assert run_urban("--lang", "en", *args, env=env).stdout == english


LONG_ID = "loc_" + "a1b2c3d4" * 6  # 52 characters: wider than a narrow terminal's share of a table


@pytest.fixture(scope="module")
def long_id_account(api_server):
    """An account whose primary location has a long id, beside a short one."""
    acc = api_server.create_account("api")
    api_server.add_location(
        acc,
        LONG_ID,
        "Stadhuis van Antwerpen",
        51.2213,
        4.3997,
        primary=True,
        address="Grote Markt 1, 2000 Antwerpen",
    )
    api_server.add_location(acc, "loc_kort", "Korenmarkt", 51.0549, 3.7215, address="Korenmarkt, 9000 Gent")
    return acc


@pytest.mark.parametrize("columns", [20, 40, 60, 80, 120, 200])
def test_location_ids_are_never_cut(api_server, long_id_account, run_urban, columns):
    proc = run_urban("locations", env=dict(env_for(api_server, long_id_account.key), COLUMNS=str(columns)))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert any(LONG_ID in line for line in lines), proc.stdout.decode()
    assert any(re.search(r"(?<![\w…])loc_kort(?![\w…])", line) for line in lines)
    assert "…" not in proc.stdout.decode()
