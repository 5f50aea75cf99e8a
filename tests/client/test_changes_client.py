"""The change feed in the clients, thin over the REST call: `urban changes [--follow]`, the Python client's
iterator and the `get_changes` MCP tool (a real MCP client session), against the real app on loopback."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from app.history import changes as feed
from app.history.recorder import history_url
from app.history.store import open_store

from .conftest import urban_command
from .test_mcp import error_of, session_run

pytestmark = pytest.mark.slow


def _event(location_id: str, k: int) -> feed.ChangeEvent:
    work = str(1100000 + k)
    before = (
        None
        if k % 2 == 0
        else {
            "status": "Concreet gepland",
            "startDate": "2026-07-05",
            "endDate": "2026-08-26",
            "description": f"Werk {k}",
        }
    )
    after = {
        "status": "In uitvoering",
        "startDate": "2026-07-05",
        "endDate": "2026-08-26",
        "description": f"Werk {k}",
    }
    return feed.ChangeEvent(
        f"ev_{k:024x}",
        "work.appeared" if before is None else "work.started",
        location_id,
        f"work:{work}",
        f"2026-11-{10 + k // 3:02d}T08:00:00Z",
        None,
        "snap",
        1 + k // 3,
        before,
        after,
    )


def _seed(app, events) -> None:
    store = open_store(history_url(app.config["DATA_DIR"], app.config.get("HISTORY_URL")))
    try:
        feed.ensure_tables(store)
        with store.transaction():
            feed.append(store, events)
    finally:
        store.close()


@pytest.fixture(scope="module")
def seeded(api_server, account):
    """Seven events: five at the Groenplaats, two in Gent, interleaved in feed order."""
    events = [_event("loc_groenplaats" if k not in (2, 5) else "loc_gent", k) for k in range(7)]
    _seed(api_server.app, events)
    return events


def _rest_events(api_server, key, path, **params):
    out, since = [], None
    while True:
        body = api_server.get(path, key, **params, **({"since": since} if since else {})).json()
        out += body["events"]
        since = body["nextCursor"]
        if not body["hasMore"]:
            return out, since


def test_python_iterator_walks_every_page_then_polls_from_the_cursor(api_server, account, seeded):
    from urban_client import Client

    client = Client(account.key, base_url=api_server.base_url)
    got = list(client.iter_changes(location_id="loc_groenplaats", limit=2))
    rest, cursor = _rest_events(api_server, account.key, "locations/loc_groenplaats/changes")
    assert got == rest and [e["id"] for e in got] == [
        e.id for e in seeded if e.location_id == "loc_groenplaats"
    ]
    assert client.last_cursor == cursor
    assert list(client.iter_changes(location_id="loc_groenplaats", since=client.last_cursor)) == []
    everything = list(client.iter_changes(limit=3))
    assert [e["id"] for e in everything] == [e.id for e in seeded]


def test_cli_prints_json_lines_and_the_next_cursor(api_server, account, seeded, run_urban):
    env = {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": account.key}
    done = run_urban("changes", "--location-id", "loc_gent", "--json", env=env)
    assert done.returncode == 0, done.stderr
    rest, cursor = _rest_events(api_server, account.key, "locations/loc_gent/changes")
    assert [json.loads(line) for line in done.stdout.decode().splitlines()] == rest
    assert done.stderr.decode().strip() == f"Next cursor: {cursor}"
    again = run_urban("changes", "--location-id", "loc_gent", "--since", cursor, "--json", env=env)
    assert again.returncode == 0 and again.stdout == b""
    human = run_urban("changes", "--location-id", "loc_gent", env=env)
    text = human.stdout.decode()
    assert human.returncode == 0 and "work.appeared" in text and "work:1100002" in text
    bad = run_urban("changes", "--location-id", "loc_gent", "--since", "cur_nonsense", env=env)
    assert bad.returncode != 0 and "since must be a cursor" in bad.stderr.decode()


def test_cli_follow_prints_new_events_as_they_come(api_server, account, seeded, client_env):
    head = _rest_events(api_server, account.key, "changes")[1]
    env = {**client_env, "URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": account.key}
    env["PYTHONFAULTHANDLER"] = "1"  # a SIGABRT prints every thread's stack (see below)
    proc = subprocess.Popen(
        [*urban_command(), "changes", "--since", head, "--follow", "--interval", "5", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        late = _event("loc_groenplaats", 30)
        _seed(api_server.app, [late])
        line = proc.stdout.readline()  # blocks until the next poll prints it
        assert json.loads(line)["id"] == late.id
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # once seen in a full run: show where it hangs
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate()
            pytest.fail(
                f"urban changes --follow ignored SIGINT for 60 s; its stacks:\n{err.decode()[-4000:]}"
            )
    assert proc.returncode == 0 and out == b""
    assert err.decode().strip().startswith("Next cursor: cur_")


def test_mcp_tool_returns_the_rest_body(api_server, account, seeded, client_env):
    rest_first = api_server.get("locations/loc_groenplaats/changes", account.key, limit="2")
    cursor = rest_first.json()["nextCursor"]
    calls = [
        ("get_changes", {"locationId": "loc_groenplaats", "limit": 2}),
        ("get_changes", {"since": _rest_events(api_server, account.key, "changes")[1]}),
        ("get_changes", {"locationId": "loc_gent", "since": cursor}),
        ("get_changes", {"locationId": "loc_not_mine"}),
        ("get_changes", {"limit": 0}),
    ]

    async def scenario(session):
        return [await session.call_tool(name, args) for name, args in calls]

    env = {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": account.key}
    results = session_run(client_env, env, scenario)
    assert not results[0].is_error
    assert results[0].content[0].text.encode() == rest_first.content
    assert results[0].structured_content == rest_first.json()
    assert results[1].structured_content["events"] == []
    assert error_of(results[2])["error"] == "foreign_cursor"
    assert error_of(results[3])["error"] == "location_not_found"
    assert error_of(results[4])["error"] == "invalid_arguments"
