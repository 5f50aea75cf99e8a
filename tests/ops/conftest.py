"""Fixtures for the operations tests: an app over the demo snapshot on a real SQLite instance folder,
accounts made through the library, and (for the slow tests) a real gunicorn deployment via bench.deploy."""

from __future__ import annotations

import pytest

from app.store import accounts
from app import create_app
from app.store.db import open_store


@pytest.fixture
def make_app(tmp_path, engine):
    """``make_app(**overrides)``: an app over the demo snapshot engine on this test's instance folder."""

    def factory(**overrides):
        config = {
            "TESTING": True,
            "ENGINE": engine,
            "INSTANCE_PATH": str(tmp_path / "instance"),
            "SECRET_KEY": "ops-tests",
            "MAIL_BACKEND": "outbox",
        }
        config.update(overrides)
        return create_app(config)

    return factory


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def store(app):
    conn = open_store(app)
    yield conn
    conn.close()


@pytest.fixture
def account(store):
    """``account(plan="enterprise")`` → (row, key)."""
    counter = iter(range(1, 100_000))

    def make(plan="enterprise", email=None):
        return accounts.create_account(store, email or f"ops{next(counter)}@stad.gent.be", plan)

    return make


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}
