"""Fixtures for the dashboard: an app on the session's demo snapshot and a real SQLite file, a real SMTP
server (aiosmtpd), signed-in test clients per plan."""

from __future__ import annotations

import time

import pytest

from app.store import accounts
from app import create_app
from app.store.sqlite import connect
from app.store.db import migrate
from app.portal import sessions
from app.portal.views import SESSION_ID
from tests.portal.conftest import smtp_server  # noqa: F401  (the real aiosmtpd server fixture)
from tests.portal.helpers import LiveServer

CSRF = "dashboard-test-csrf-token"


@pytest.fixture
def config(tmp_path, smtp_server, engine):
    return {
        "TESTING": True,
        "ENGINE": engine,
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "HISTORY_URL": str(tmp_path / "history.sqlite"),  # the dossier's store and the change feed
        "SECRET_KEY": "dashboard-test-secret-key-only",
        "MAIL_BACKEND": "smtp",
        "MAIL_HOST": "127.0.0.1",
        "MAIL_PORT": smtp_server.port,
        "MAIL_SECURITY": "none",
        "MAIL_TIMEOUT": 5.0,
        "MAIL_SENDER": "Urban Conditions <no-reply@urban.test>",
        "PUBLIC_URL": "http://urban.test",
        "ALERT_WEBHOOK_ALLOW_PRIVATE": True,
        "SIGNUP_LIMIT_PER_IP": "1000 per hour",
        "SIGNUP_LIMIT_PER_ADDRESS": "100 per hour",
    }


@pytest.fixture
def app(config):
    return create_app(config)


@pytest.fixture
def store(app):
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    yield conn
    conn.close()


def signed_in(app, account_id):
    """A test client holding a live server-side portal session of ``account_id``."""
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    session_id = sessions.start(conn, account_id, now=int(time.time()), hours=1)
    conn.close()
    client = app.test_client()
    client.environ_base["HTTP_ACCEPT_LANGUAGE"] = (
        "en"  # the pages' labels in English (tests of nl/fr set their own)
    )
    with client.session_transaction() as s:
        s[SESSION_ID], s["csrf"] = session_id, CSRF
    return client


@pytest.fixture
def user(app, store):
    """``user(plan)`` → (account row, API key, signed-in test client)."""
    made = iter(range(1000))

    def make(plan="pro"):
        account, key = accounts.create_account(store, f"user{next(made)}-{plan}@stad.be", plan)
        return account, key, signed_in(app, account["id"])

    return make


@pytest.fixture
def live_server(app):
    with LiveServer(app) as server:
        yield server
