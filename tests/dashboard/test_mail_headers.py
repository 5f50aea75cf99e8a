"""Issue 31, class 4: no user value reaches a mail header unchecked, on any Python.

One real change-alert round (two publishes recorded, the feed derived, delivery, SMTP to aiosmtpd) carries
every field that reaches an alert mail — the location name, the account's address, and the upstream texts in
the event title (a work's description, a detour's title) — with every hostile encoding; each received message
must have exactly our headers, its subject no line break or control, and only its account as recipient. (The
feed names a station by its id, so a station's name reaches no mail.)
"""

from __future__ import annotations

import base64
import email
import email.policy
import re
import unicodedata

import pandas as pd
import pytest

from app.store import accounts
from app import create_app
from app.dashboard import changealerts
from app.dashboard.figures import RUNNING, point_figures
from app.dashboard.run import run_alerts
from app.history import changes as feed
from app.history.store import open_store as open_history
from app.store.db import migrate
from app.store.sqlite import connect
from app.store.saved_locations import add_location
from tests.portal.helpers import Inbox, free_port

from .alerting import POINT, variant

CANARY = "evil@attacker.test"
#: every way to smuggle a line break (and so a header line) into a header's text
HOSTILE = {
    "crlf": f"Stad\r\nBcc: {CANARY}",
    "lf": f"Stad\nBcc: {CANARY}",
    "cr": f"Stad\rBcc: {CANARY}",
    "q-encoded-crlf": f"=?utf-8?q?Stad=0D=0ABcc:_{CANARY}?=",
    "q-encoded-crlf-upper": "=?UTF-8?Q?Stad=0d=0aBcc=3A_evil=40attacker.test?=",
    "b-encoded-crlf": "=?utf-8?b?" + base64.b64encode(f"Stad\r\nBcc: {CANARY}".encode()).decode() + "?=",
    "encoded-after-a-long-word": "Stad " + "x" * 80 + f" =?utf-8?q?=0D=0ABcc:_{CANARY}?=",
    "split-encoded-words": f"=?utf-8?q?Stad=0D=0A?= =?utf-8?q?Bcc:_{CANARY}?=",
    "u2028": f"Stad\u2028Bcc: {CANARY}",
    "u2029": f"Stad\u2029Bcc: {CANARY}",
    "u0085": f"Stad\u0085Bcc: {CANARY}",
    "nul": f"Stad\x00Bcc: {CANARY}",
    "vt-ff-fs": f"Stad\x0b\x0c\x1cBcc: {CANARY}",
    "bidi-override": f"Stad\u202eBcc: {CANARY}",
    "very-long": "Stad " + "é" * 3000 + f"\r\nBcc: {CANARY}",
}
CASES = sorted(HOSTILE)
#: accounts whose stored address (from before sign-up refused such addresses) must never be a recipient
HOSTILE_ADDRESSES = {
    "crlf": f"a@stad.be\r\nBcc: {CANARY}",
    "q-encoded-crlf": "=?utf-8?q?a=0D=0ABcc=3Aevil=40attacker.test?=@stad.be",
    "b-encoded": "=?utf-8?b?YQ0KQmNjOiBldmlsQGF0dGFja2VyLnRlc3Q=?=@stad.be",
    "u2028": "a\u2028bcc@stad.be",
    "nul": "a\x00@stad.be",
    "second-address": f"a@stad.be, {CANARY}",
    "display-name": f"Evil <{CANARY}>",
    "very-long": "a" * 300 + "@stad.be",
}
PUBLIC_URL = "https://urban-conditions.example.be"  # long enough to fold a List-Unsubscribe line of 78
#: the headers of an alert mail, in order (an https PUBLIC_URL adds the RFC 8058 one-click header)
HEADERS = [
    "From",
    "To",
    "Subject",
    "Date",
    "Message-ID",
    "Auto-Submitted",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
    "MIME-Version",
    "Content-Type",
]
RUNNING_WORK = "1101491"  # a running work near POINT: its copies are new running works there
HIT_DETOUR = "30545"  # a De Lijn detour that hits POINT: its copies are new detours there


def raw_header_names(data: bytes) -> list[str]:
    """The field names of a message's top header block, read by hand (continuation lines folded in)."""
    head = data.replace(b"\r\n", b"\n").split(b"\n\n", 1)[0]
    return [line.split(b":", 1)[0].decode() for line in head.split(b"\n") if line[:1] not in (b" ", b"\t")]


def stations_with_readings(engine, layers, count):
    """``count`` stations, each the nearest NO2 station of its own position inside the service area."""
    chosen = []
    with_readings = set(layers["no2"]["station_id"])
    for row in layers["stations"].itertuples():
        lat, lng = row.geometry.y, row.geometry.x
        if row.id not in with_readings or not bool(engine.in_service_area(lat, lng)[0]):
            continue
        reading = point_figures(engine, lat, lng, engine.as_of)["airQuality"].get("reading") or {}
        if (reading.get("station") or {}).get("id") == row.id:
            chosen.append((row.id, lat, lng))
        if len(chosen) == count:
            return chosen
    raise AssertionError("not enough NO2 stations for the hostile station names")


def hostile_upstream(stations):
    """A snapshot edit: NO2 above the EU limit everywhere, station ``i`` named ``HOSTILE[CASES[i]]``, and
    for each case one new running work and one new detour at POINT whose description or title holds it."""

    def edit(layers):
        layers["no2"]["value"] = 55.0
        named = layers["stations"].copy()
        for (station_id, _lat, _lng), case in zip(stations, CASES):
            named.loc[named["id"] == station_id, "name"] = HOSTILE[case]
        layers["stations"] = named
        works, detours = layers["works"], layers["detours"]
        new_works, new_detours = [], []
        for n, case in enumerate(CASES):
            work = works[works["id"] == RUNNING_WORK].copy()
            # a distinct start: works with the same description key at one spot are one item
            work["id"], work["description"] = f"99{n:05d}", f"Werk {n} {HOSTILE[case]}"
            work["status"] = RUNNING
            detour = detours[detours["id"] == HIT_DETOUR].copy()
            detour["id"], detour["title"] = f"99{n:03d}", HOSTILE[case]
            new_works.append(work)
            new_detours.append(detour)
        layers["works"] = pd.concat([works, *new_works]).reset_index(drop=True)
        layers["detours"] = pd.concat([detours, *new_detours]).sort_values("id").reset_index(drop=True)

    return edit


def no2_everywhere(value):
    def edit(layers):
        layers["no2"]["value"] = value

    return edit


@pytest.fixture(scope="module")
def hostile_round(snapshot_dir, engine, tmp_path_factory):
    """One real alert round over hostile data. Returns (mail by (field, case), address by location id, the
    round's counts, the inbox); a mail is (recipients, parsed message, bytes as received, location id)."""
    from geo.data.snapshot import read_snapshot

    tmp = tmp_path_factory.mktemp("hostile-mail")
    layers, _manifest = read_snapshot(snapshot_dir)
    stations = stations_with_readings(engine, layers, len(CASES))
    before = variant(snapshot_dir, tmp / "before", no2=20.0, edit=no2_everywhere(20.0))
    variant(snapshot_dir, tmp / "after", no2=55.0, hours_later=2, edit=hostile_upstream(stations))

    inbox = Inbox()
    inbox.port = free_port()
    inbox.start()
    app = create_app(
        {
            "TESTING": True,
            "ENGINE": before,
            "INSTANCE_PATH": str(tmp / "instance"),
            "SECRET_KEY": "hostile-mail-test-secret-key",
            "MAIL_BACKEND": "smtp",
            "MAIL_HOST": "127.0.0.1",
            "MAIL_PORT": inbox.port,
            "MAIL_SECURITY": "none",
            "MAIL_TIMEOUT": 5.0,
            "MAIL_SENDER": "Urban Conditions <no-reply@urban.test>",
            "PUBLIC_URL": PUBLIC_URL,
            "HISTORY_URL": str(tmp / "history.sqlite"),
        }
    )
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    address_of, field_of = {}, {}

    made = []

    def subscribed(address, name, lat, lng, types, field=None):
        account, _key = accounts.create_account(conn, f"account{len(made)}@stad.be", "pro")
        loc = add_location(conn, account["id"], name="placeholder", address="", lat=lat, lng=lng)
        # stored as is: a name or address saved before today's checks reaches the mail path unchanged
        conn.execute("UPDATE locations SET name = ? WHERE id = ?", (name, loc["id"]))
        conn.execute("UPDATE accounts SET email = ? WHERE id = ?", (address, account["id"]))
        made.append((account, dict(loc, name=name), types))
        address_of[loc["id"]], field_of[loc["id"]] = address, field

    for n, ((_station, lat, lng), case) in enumerate(zip(stations, CASES)):
        subscribed(f"name{n}@stad.be", HOSTILE[case], lat, lng, ["no2.above_eu"], ("location name", case))
    subscribed("titles@stad.be", "Centrum", *POINT, ["work.appeared", "work.started", "detour.started"])
    for n, case in enumerate(sorted(HOSTILE_ADDRESSES)):
        subscribed(HOSTILE_ADDRESSES[case], f"Plek {n}", *POINT, ["detour.started"])
    history = open_history(app.config["HISTORY_URL"])
    try:
        history.record_dir(tmp / "before")  # served when they subscribed: the feed's baseline
        feed.derive_saved(history, conn)
        head = feed.head(history)
        for account, loc, types in made:
            changealerts.save(conn, account["id"], loc, types=types, email=True, webhook_url="", head=head)
        history.record_dir(tmp / "after")
        feed.derive_saved(history, conn)
    finally:
        history.close()

    counts = run_alerts(app)
    inbox.stop()

    location_of = {
        r["unsubscribe_token"]: r["location_id"] for r in conn.execute("SELECT * FROM change_subscriptions")
    }
    conn.close()
    mails = {}
    for (rcpt, msg), raw in zip(inbox.messages, inbox.raw):
        subject = str(msg["Subject"])
        token = re.search(r"/unsubscribe/([A-Za-z0-9_-]+)>", str(msg["List-Unsubscribe"])).group(1)
        location_id = location_of[token]
        key = field_of[location_id]
        if key is None and (work := re.match(r"Change at Centrum: [^:]+: work 99(\d{5}) ", subject)):
            key = ("work description", CASES[int(work.group(1))])
        elif key is None and (detour := re.match(r"Change at Centrum: [^:]+: detour 99(\d{3})", subject)):
            key = ("detour title", CASES[int(detour.group(1))])
        if key is not None:
            mails[key] = (rcpt, msg, raw, location_id)
    return mails, address_of, counts, inbox


FIELDS = ["location name", "work description", "detour title"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("field", FIELDS)
def test_a_hostile_field_reaches_the_inbox_with_exactly_our_headers(hostile_round, field, case):
    mails, address_of, _counts, _inbox = hostile_round
    assert (field, case) in mails, f"no alert mail carried the hostile {field} ({case})"
    rcpt, msg, raw, location_id = mails[(field, case)]
    assert rcpt == [address_of[location_id]]
    assert raw_header_names(raw) == HEADERS
    assert list(msg.keys()) == HEADERS and msg["Bcc"] is None
    subject = str(msg["Subject"])
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in subject), repr(subject)
    assert "=?" not in subject  # no encoded word survives to be decoded by the next reader
    # at most 180 characters (the folder may add a space where it splits a long word)
    assert len("".join(subject.split())) <= 180 and subject.startswith("Change at ")


def test_every_mail_of_the_round_has_our_headers_and_only_its_account_as_recipient(hostile_round):
    _mails, address_of, counts, inbox = hostile_round
    legit = {a for a in address_of.values() if a not in HOSTILE_ADDRESSES.values()}
    assert inbox.messages, "the round sent nothing"
    for (rcpt, msg), raw in zip(inbox.messages, inbox.raw):
        assert len(rcpt) == 1 and rcpt[0] in legit and CANARY not in rcpt
        assert raw_header_names(raw) == HEADERS, raw[:600]
    # each account with a hostile address had one event: refused, never sent
    assert counts["failed"] >= len(HOSTILE_ADDRESSES)


def test_list_unsubscribe_is_one_plain_line_with_one_click(hostile_round):
    """RFC 2369: ``<https://...>`` as ASCII, never RFC 2047-encoded; RFC 8058: the one-click header."""
    _mails, _address_of, _counts, inbox = hostile_round
    for raw in inbox.raw:
        lines = raw.decode("ascii").split("\r\n")
        [line] = [x for x in lines if x.startswith("List-Unsubscribe:")]
        assert re.fullmatch(
            r"List-Unsubscribe: <" + re.escape(PUBLIC_URL) + r"/dashboard/unsubscribe/[A-Za-z0-9_-]{32}>",
            line,
        ), line
        assert lines[lines.index(line) + 1].startswith("List-Unsubscribe-Post: ")  # not folded
        assert "List-Unsubscribe-Post: List-Unsubscribe=One-Click" in lines
        parsed = email.message_from_bytes(raw, policy=email.policy.default)
        assert str(parsed["List-Unsubscribe"]) == line.split(": ", 1)[1]
