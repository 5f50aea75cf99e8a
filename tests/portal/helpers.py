"""Helpers shared by the portal tests (mail parsing, real servers, form fields)."""

from __future__ import annotations

import email
import email.policy
import re
import socket
import threading

from werkzeug.serving import make_server

from app import create_app

LINK = re.compile(r"https?://[^\s\"<>]+/portal/link/([A-Za-z0-9_-]+)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Inbox:
    """aiosmtpd handler that keeps every received message in order: (recipients, parsed message) in
    ``messages``, the bytes as received in ``raw``."""

    def __init__(self):
        self.messages = []
        self.raw = []
        self._arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._arrived:
            self.raw.append(envelope.original_content)
            self.messages.append((envelope.rcpt_tos, msg))
            self._arrived.notify_all()
        return "250 OK"

    def start(self):
        """Serve on ``self.port`` (again): a stopped aiosmtpd controller cannot be restarted, so make one."""
        from aiosmtpd.controller import Controller

        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def stop(self):
        self.controller.stop()

    def wait_for(self, count, timeout=10):
        with self._arrived:
            self._arrived.wait_for(lambda: len(self.messages) >= count, timeout)
        assert len(self.messages) >= count, f"expected {count} mail(s), got {len(self.messages)}"
        return self.messages[count - 1][1]

    def last_for(self, address):
        for rcpt, msg in reversed(self.messages):
            if address in rcpt:
                return msg
        raise AssertionError(f"no mail for {address}")


def text_of(msg):
    return msg.get_body(preferencelist=("plain",)).get_content()


def html_of(msg):
    return msg.get_body(preferencelist=("html",)).get_content()


def link_in(msg):
    """(url, token) of the link in the plain-text part."""
    found = LINK.search(text_of(msg))
    assert found, "no portal link in the mail"
    return found.group(0), found.group(1)


def build_app(config):
    app = create_app(config)
    if "portal" not in app.blueprints:  # until create_app registers the portal itself
        from app import portal

        portal.init_app(app)
    return app


#: seconds between a test server's checks for shutdown (``serve_forever``'s default, 0.5 s, is what each
#: ``shutdown()`` waits)
SHUTDOWN_POLL = 0.02


class LiveServer:
    def __init__(self, app):
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True
        )

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.thread.join(10)


def csrf_from(html):
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "no CSRF field on the page"
    return found.group(1)


KEY = re.compile(r"uc_live_[0-9A-Za-z]{38}")


def request_link(client, address):
    """POST /api/v1/signup for ``address`` through a Flask test client; returns the response."""
    return client.post("/api/v1/signup", json={"email": address})


def open_link(client, url):
    """GET the link page; returns (response, csrf, token field)."""
    path = url.split("://", 1)[1].split("/", 1)[1]
    resp = client.get("/" + path)
    html = resp.get_data(as_text=True)
    return resp, (csrf_from(html) if resp.status_code == 200 else None)


def press_button(client, token, csrf):
    return client.post("/portal/link", data={"token": token, "csrf_token": csrf})


def sign_up(client, inbox, address):
    """Whole flow through the test client: request, receive mail, open, confirm. Returns (key, response)."""
    before = len(inbox.messages)
    assert request_link(client, address).status_code == 202
    msg = inbox.wait_for(before + 1)
    url, token = link_in(msg)
    _resp, csrf = open_link(client, url)
    resp = press_button(client, token, csrf)
    found = KEY.search(resp.get_data(as_text=True))
    return (found.group(0) if found else None), resp
