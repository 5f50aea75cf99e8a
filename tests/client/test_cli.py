"""`urban` as a subprocess against the real app on 127.0.0.1: both output modes, all commands, the errors not
in the matrix (test_error_matrix.py), configuration."""

from __future__ import annotations

import json
import os
import pty
import re
import stat
import subprocess
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
import requests

from urban_client.labels import Labels

from .conftest import free_port, urban_command

pytestmark = pytest.mark.slow  # starts a real server and many processes

ANTWERP = ("51.2194", "4.4025")  # Meir, inside the Antwerp low-emission zone
GENT = ("51.0549", "3.7215")  # Korenmarkt, outside it
ANSI = re.compile(rb"\x1b\[")
DATA_COMMANDS = ("disruptions", "air-quality", "briefing")
QUOTA_RESET = Labels("en").quota_reset()  # 00:00 UTC in Brussels time: 01:00 CET or 02:00 CEST


def env_for(api_server, key):
    return {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": key}


def assert_clean(proc, key=None):
    """No traceback, and the key never appears anywhere in the output."""
    assert b"Traceback" not in proc.stderr and b"Traceback" not in proc.stdout
    if key:
        assert key.encode() not in proc.stdout + proc.stderr


# --- --json: the API body byte-for-byte, nothing else ----------------------------------------------------


@pytest.mark.parametrize("command", DATA_COMMANDS)
@pytest.mark.parametrize("target", ["coords", "location"])
def test_json_prints_the_rest_body_byte_for_byte(api_server, account, run_urban, command, target):
    if target == "coords":
        args, params = ["--lat", ANTWERP[0], "--lng", ANTWERP[1]], {"lat": ANTWERP[0], "lng": ANTWERP[1]}
    else:
        args, params = ["--location-id", "loc_groenplaats"], {"locationId": "loc_groenplaats"}
    rest = api_server.get(command, account.key, **params)
    assert rest.status_code == 200, rest.text
    proc = run_urban(command, *args, "--json", env=env_for(api_server, account.key))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == rest.content
    assert_clean(proc, account.key)


@pytest.mark.parametrize("command", ["air-quality", "briefing"])
@pytest.mark.parametrize("lang", ["nl", "fr", "en"])
def test_lang_is_sent_as_accept_language(api_server, account, run_urban, command, lang):
    params = {"lat": ANTWERP[0], "lng": ANTWERP[1]}
    rest = requests.get(
        f"{api_server.base_url}/{command}",
        params=params,
        timeout=30,
        headers={"Authorization": f"Bearer {account.key}", "Accept-Language": lang},
    )
    assert rest.status_code == 200 and rest.headers["Content-Language"] == lang
    args = ["--lat", ANTWERP[0], "--lng", ANTWERP[1], "--lang", lang]
    proc = run_urban(command, *args, "--json", env=env_for(api_server, account.key))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == rest.content
    assert (proc.stdout == api_server.get(command, account.key, **params).content) is (lang == "nl")
    summary = run_urban(command, *args, env=env_for(api_server, account.key))
    assert summary.returncode == 0, summary.stderr
    if command == "briefing":  # the readable summary shows the translated headline
        headline = json.loads(rest.content)["headline"]
        assert headline.split(":")[0].split("\u00a0")[0].encode() in summary.stdout


def test_lang_accepts_only_the_api_languages(run_urban):
    proc = run_urban("briefing", "--lat", ANTWERP[0], "--lng", ANTWERP[1], "--lang", "de")
    assert proc.returncode == 2 and b"--lang" in proc.stderr
    assert_clean(proc)


def test_locations_json_is_the_rest_body(api_server, account, run_urban):
    rest = api_server.get("locations", account.key)
    proc = run_urban("locations", "--json", env=env_for(api_server, account.key))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == rest.content
    ids = [loc["id"] for loc in json.loads(proc.stdout)["locations"]]
    assert sorted(ids) == ["loc_gent", "loc_groenplaats"]


# --- readable summaries ---------------------------------------------------------------------------------


def test_locations_summary_lists_saved_locations_primary_marked(api_server, account, run_urban):
    proc = run_urban("locations", env=env_for(api_server, account.key))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    primary = next(line for line in lines if "loc_groenplaats" in line)
    other = next(line for line in lines if "loc_gent" in line)
    assert "*" in primary and "Groenplaats" in primary
    assert "*" not in other and "Korenmarkt" in other
    assert not ANSI.search(proc.stdout)


def test_disruptions_summary_tables_sorted_by_distance(api_server, account, run_urban):
    body = api_server.get("disruptions", account.key, lat=ANTWERP[0], lng=ANTWERP[1]).json()
    proc = run_urban(
        "disruptions", "--lat", ANTWERP[0], "--lng", ANTWERP[1], env=env_for(api_server, account.key)
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    s = body["summary"]
    assert f"Works running: {s['activeWorks']} · planned: {s['plannedWorks']}" in out
    assert f"Transit detours: {s['transitDisruptions']} (high severity: {s['highSeverityTransit']})" in out
    assert body["construction"], "the demo scenario has works near the Meir"
    # every work appears, nearest first: the order of the ids in the output is the order by distanceKm
    by_distance = [w["id"] for w in sorted(body["construction"], key=lambda w: w["distanceKm"])]
    positions = [out.index(f" {wid} ") if f" {wid} " in out else out.index(wid) for wid in by_distance]
    distances = [w["distanceKm"] for w in sorted(body["construction"], key=lambda w: w["distanceKm"])]
    # ties in distance may print in either order; strictly nearer works must come first
    for i in range(len(by_distance) - 1):
        if distances[i] < distances[i + 1]:
            assert positions[i] < positions[i + 1]
    for item in body["transit"]:
        assert item["id"] in out
    assert not ANSI.search(proc.stdout)


def test_air_quality_summary_value_unit_trend_verdict_lez(api_server, account, run_urban):
    for lat, lng in (ANTWERP, GENT):
        body = api_server.get("air-quality", account.key, lat=lat, lng=lng, _lang="en").json()
        proc = run_urban("air-quality", "--lat", lat, "--lng", lng, env=env_for(api_server, account.key))
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.decode()
        reading = body["reading"]
        if reading["value"] is None:
            assert "NO2 unknown" in out
        else:
            assert f"NO2 {reading['value']} µg/m³" in out
            arrow = {"rising": "↑", "falling": "↓", "stable": "→"}[reading["trend"]]
            assert f"µg/m³  {arrow} " in out
        assert f"Verdict: {body['compliance']['label']}" in out
        assert f"Low-emission zone: {'yes' if body['lez']['inside'] else 'no'}" in out
    # the two points differ in LEZ status (Meir inside, Gent outside), so both answers were exercised
    assert api_server.get("air-quality", account.key, lat=ANTWERP[0], lng=ANTWERP[1]).json()["lez"]["inside"]
    assert not api_server.get("air-quality", account.key, lat=GENT[0], lng=GENT[1]).json()["lez"]["inside"]


def test_briefing_summary_risk_headline_windows_in_brussels_time(api_server, account, run_urban):
    body = api_server.get("briefing", account.key, locationId="loc_groenplaats", _lang="en").json()
    proc = run_urban("briefing", "--location-id", "loc_groenplaats", env=env_for(api_server, account.key))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert f"Risk: {body['risk'].upper()}" in out
    assert body["headline"] in out
    brussels = ZoneInfo("Europe/Brussels")
    for name, label in (
        ("bestWindow", "Best window:"),
        ("worstWindow", "Worst window:"),
        ("nextRushPeak", "Next rush peak:"),
    ):
        start = datetime.fromisoformat(body[name]["start"]).astimezone(brussels)
        line = next(line for line in out.splitlines() if line.startswith(label))
        assert re.search(rf"{start.day} {start:%b %H:%M}–\d\d:\d\d {start.tzname()}", line), line


def test_quota_remaining_is_shown_on_the_last_line(api_server, fresh_account, run_urban):
    proc = run_urban("locations", env=env_for(api_server, fresh_account.key))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().rstrip().splitlines()[-1] == f"99/100 calls left today (resets {QUOTA_RESET})"


def test_colour_only_on_a_terminal(api_server, account, client_env):
    """Piped output is plain (checked in the tests above); on a pseudo-terminal the summary is styled."""
    env = dict(client_env, **env_for(api_server, account.key), TERM="xterm-256color")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        urban_command() + ["briefing", "--location-id", "loc_groenplaats"],
        env=env,
        stdout=follower,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO once the child has closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(30) == 0, proc.stderr.read()
    assert ANSI.search(b"".join(chunks))


# --- errors: stderr message, distinct exit code, --json error body, never a traceback --------------------
# no key, bad key, quota exhausted, outside the service area, upstream and server down for every command
# in both modes: test_error_matrix.py; network failures and foreign answers: test_network_errors.py


def test_plan_without_api_access_is_exit_3(api_server, run_urban):
    acc = api_server.create_account("developer")
    api_server.set_plan(acc, "dashboard")
    proc = run_urban("locations", env=env_for(api_server, acc.key))
    assert proc.returncode == 3
    assert b"plan_required" in proc.stderr
    assert_clean(proc, acc.key)


def test_the_last_call_of_the_quota_shows_zero_left(api_server, fresh_account, run_urban):
    """The 100th call succeeds and says 0 left; the 101st is the matrix's quota_exhausted case."""
    for _ in range(99):
        assert api_server.get("locations", fresh_account.key).status_code == 200
    last = run_urban("locations", env=env_for(api_server, fresh_account.key))
    assert last.returncode == 0
    assert last.stdout.decode().rstrip().splitlines()[-1] == f"0/100 calls left today (resets {QUOTA_RESET})"
    proc = run_urban("locations", env=env_for(api_server, fresh_account.key))
    assert proc.returncode == 4 and proc.stdout == b""


def test_unknown_location_is_exit_5(api_server, account, run_urban):
    proc = run_urban("air-quality", "--location-id", "loc_not_mine", env=env_for(api_server, account.key))
    assert proc.returncode == 5
    assert b"location_not_found" in proc.stderr
    assert_clean(proc, account.key)


@pytest.mark.parametrize(
    "args, code",
    [
        ([], "missing_target"),
        (["--lat", ANTWERP[0]], "missing_target"),
        (["--lat", "95", "--lng", "4.4"], "invalid_coordinates"),
    ],
)
def test_bad_targets_are_reported_by_the_api_with_exit_2(api_server, account, run_urban, args, code):
    proc = run_urban("disruptions", *args, env=env_for(api_server, account.key))
    assert proc.returncode == 2
    assert f"Error: {code}:".encode() in proc.stderr
    assert_clean(proc, account.key)


@pytest.mark.parametrize(
    "args",
    [
        ["briefing", "--lat", "abc", "--lng", "4.4"],
        ["nosuchcommand"],
        ["disruptions", "--lat", "nan", "--lng", "4.4"],
        ["--timeout", "-1", "locations"],
    ],
)
def test_command_line_misuse_is_exit_2_without_calling(run_urban, args):
    proc = run_urban(*args, env={"URBAN_BASE_URL": f"http://127.0.0.1:{free_port()}/api/v1"})
    assert proc.returncode == 2
    assert b"Usage:" in proc.stderr or b"Error:" in proc.stderr
    assert_clean(proc)


# --- configure --------------------------------------------------------------------------------------------


def test_configure_writes_a_0600_file_used_by_later_commands(api_server, account, run_urban, client_env):
    path = client_env["URBAN_CONFIG"]
    proc = run_urban("configure", "--base-url", api_server.base_url, input=f"{account.key}\n".encode())
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc, account.key)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    assert mode == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    # no URBAN_API_KEY / URBAN_BASE_URL: both come from the file
    rest = api_server.get("locations", account.key)
    proc = run_urban("locations", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == rest.content
    show = run_urban("configure", "--show")
    assert show.returncode == 0
    assert f"Config file: {path}" in show.stdout.decode()
    assert "API key:     set (from the config file)" in show.stdout.decode()
    assert_clean(show, account.key)
    # the environment wins over the file
    proc = run_urban("locations", env={"URBAN_API_KEY": "uk_wrong_key_0000000000000000000000"})
    assert proc.returncode == 3
    # an empty answer keeps the stored key; a new base URL is stored
    proc = run_urban("configure", "--timeout", "7", input=b"\n")
    assert proc.returncode == 0, proc.stderr
    assert run_urban("locations", "--json").stdout == api_server.get("locations", account.key).content
    assert "Timeout:     7 s" in run_urban("configure", "--show").stdout.decode()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_configure_without_any_key_is_a_usage_error(run_urban):
    proc = run_urban("configure", input=b"\n")
    assert proc.returncode == 2
    assert b"no key given" in proc.stderr


def test_configure_on_a_terminal_prompts_without_echoing_the_key(client_env):
    key = "uc_live_terminalKeyNeverEchoed0000000000000"
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        urban_command() + ["configure"],
        env=client_env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    transcript = b""
    while b"API key" not in transcript:
        chunk = os.read(leader, 1024)
        assert chunk, transcript
        transcript += chunk
    os.write(leader, key.encode() + b"\n")
    while True:
        try:
            chunk = os.read(leader, 1024)
        except OSError:
            break
        if not chunk:
            break
        transcript += chunk
    os.close(leader)
    assert proc.wait(30) == 0, transcript
    assert key.encode() not in transcript
    assert b"Saved to" in transcript
    with open(client_env["URBAN_CONFIG"], encoding="utf-8") as fh:
        assert f"api_key = {key}" in fh.read()
