"""What a person asking for sign-in links sees and reads (issue 30, item 4): the "check your mail" page says
when the per-address budget holds a link back and when to ask again, the same for an address with or without
an account; and the outbox's folder and each message's file appear on the console of a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from app.store import accounts

from .helpers import csrf_from, free_port

REPO = Path(__file__).resolve().parents[2]
RETRY = re.compile(r"after <strong>(\d\d:\d\d) (CET|CEST)</strong> \(in about (\d+) minutes?\)")


def ask_on_the_form(client, address):
    """Request a link on the portal form and follow the redirect; the "check your mail" page's HTML (white
    space runs as one space)."""
    csrf = csrf_from(client.get("/portal/").get_data(as_text=True))
    resp = client.post("/portal/signin", data={"email": address, "csrf_token": csrf}, follow_redirects=True)
    assert resp.status_code == 200 and resp.request.path == "/portal/sent"
    return " ".join(resp.get_data(as_text=True).split())


def test_a_held_link_is_announced_with_the_time_to_ask_again(app, client, smtp_server):
    app.config.update(SIGNUP_LIMIT_PER_ADDRESS="2 per hour")
    first, second, third = (ask_on_the_form(client, "nieuw@stad.be") for _ in range(3))
    assert "a link is on its way" in first and "link-last" not in first and "link-held" not in first
    assert "at most 2 an hour for one address" in first
    assert "This was the last link we send to this address" in second and "link-held" not in second
    assert "No new link was sent" in third and "a link is on its way" not in third
    assert "already asked for 2 links to this address in the last hour" in third
    retry = RETRY.search(third)
    assert retry and 1 <= int(retry.group(3)) <= 60, third
    smtp_server.wait_for(2)
    assert len(smtp_server.messages) == 2  # sending is synchronous: a third mail would be here already
    other = ask_on_the_form(client, "ander@stad.be")  # another address: its own budget
    assert "a link is on its way" in other


def test_the_pages_are_the_same_with_or_without_an_account(app, client, store, smtp_server):
    """The budget counts this client's own requests for the address, whoever owns it: the pages (times
    aside) cannot tell whether the address has an account."""
    app.config.update(SIGNUP_LIMIT_PER_ADDRESS="2 per hour")
    accounts.create_account(store, "bekend@stad.be", "developer")

    def pages(address):
        return [RETRY.sub("", ask_on_the_form(client, address)) for _ in range(3)]

    assert pages("bekend@stad.be") == pages("onbekend@stad.be")


def test_the_api_answer_stays_the_same_when_a_link_is_held(app, client, smtp_server):
    app.config.update(SIGNUP_LIMIT_PER_ADDRESS="1 per hour")
    answers = [client.post("/api/v1/signup", json={"email": "api@stad.be"}) for _ in range(2)]
    assert [a.status_code for a in answers] == [202, 202] and answers[0].get_data() == answers[1].get_data()


@pytest.mark.slow
def test_the_outbox_folder_and_each_message_appear_on_the_console(tmp_path):
    """``python -m app.serve`` (gunicorn, as ``make serve``) with the default outbox: its console names the
    folder at start and the file of each message."""
    port = free_port()
    instance = tmp_path / "instance"
    env = {
        **os.environ,
        "URBAN_INSTANCE_PATH": str(instance),
        "URBAN_LOAD_ENGINE": "0",
        "WEB_CONCURRENCY": "1",
        "PYTHONPATH": str(REPO),
    }
    for name in ("URBAN_ENV", "URBAN_MAIL_BACKEND", "URBAN_MAIL_OUTBOX", "URBAN_SECRET_KEY"):
        env.pop(name, None)
    log = tmp_path / "console.txt"
    with open(log, "wb") as console:
        server = subprocess.Popen(
            [sys.executable, "-m", "app.serve", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=console,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while True:
                assert server.poll() is None, log.read_text()
                try:
                    requests.get(base + "/healthz", timeout=5)
                    break
                except requests.ConnectionError:
                    assert time.monotonic() < deadline, log.read_text()
                    time.sleep(0.05)
            resp = requests.post(base + "/api/v1/signup", json={"email": "lokaal@stad.be"}, timeout=30)
            assert resp.status_code == 202
        finally:
            server.terminate()
            server.wait(30)
    text = log.read_text()
    outbox = instance / "outbox"
    assert f"mail is not sent; each message is written to {outbox}" in text
    (written,) = outbox.glob("*.eml")
    assert f"mail written to {written}" in text
