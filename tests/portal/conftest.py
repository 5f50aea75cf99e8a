"""Fixtures for sign-up and portal tests: a real SMTP server (aiosmtpd), an app on a real SQLite file, and a
real threaded HTTP server on 127.0.0.1 for the browser and concurrency tests."""

from __future__ import annotations

import pytest

from app.store.sqlite import connect

from app.store.db import migrate

from .helpers import Inbox, LiveServer, build_app, free_port


@pytest.fixture
def smtp_server():
    inbox = Inbox()
    inbox.port = free_port()
    inbox.start()
    yield inbox
    inbox.stop()


@pytest.fixture
def portal_config(tmp_path, smtp_server):
    return {
        "TESTING": True,
        "ENGINE": None,
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "SECRET_KEY": "test-secret-key-for-portal-tests-only",
        "MAIL_BACKEND": "smtp",
        "MAIL_HOST": "127.0.0.1",
        "MAIL_PORT": smtp_server.port,
        "MAIL_SECURITY": "none",
        "MAIL_TIMEOUT": 5.0,
        "MAIL_SENDER": "Urban Conditions <no-reply@urban.test>",
        "SIGNUP_LIMIT_PER_IP": "1000 per hour",
        "SIGNUP_LIMIT_PER_ADDRESS": "100 per hour",
    }


@pytest.fixture
def app(portal_config):
    return build_app(portal_config)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def store(app):
    """A connection to the app's real SQLite file (migrated)."""
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    yield conn
    conn.close()


@pytest.fixture
def live_server(app):
    with LiveServer(app) as server:
        yield server
