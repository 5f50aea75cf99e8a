"""Fixtures of the source tests: the fake upstream on 127.0.0.1, settings pointing at it, a fresh session."""

from __future__ import annotations

import socket

import pytest

from app.sources.http import Upstream, build_session
from app.sources.settings import SourceSettings

from .fakeupstream import FakeUpstream


@pytest.fixture
def fake():
    with FakeUpstream() as server:
        yield server


@pytest.fixture
def settings(fake, tmp_path):
    """Short backoff so fault tests stay fast; everything else as in production. Timeouts a loaded machine
    never reaches by chance (a test of the timeouts themselves sets its own): a fake's answer that comes
    late is not a fault, a retried request would change the counts tests assert."""
    return SourceSettings.from_mapping(
        fake.settings(),
        {},
        connect_timeout=10.0,
        read_timeout=10.0,
        budget=30.0,
        attempts=3,
        backoff=0.05,
        breaker_failures=3,
        breaker_cooldown=0.5,
        http_cache=str(tmp_path / "http_cache.sqlite"),
    )


@pytest.fixture
def session(settings):
    s = build_session(settings.http_cache, settings)
    yield s
    s.close()


@pytest.fixture
def upstream(session, settings):
    return Upstream(session, settings)


@pytest.fixture
def refused_url():
    """A loopback URL on which nothing listens (connections are refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/gipod/ogc/features/v1/collections/INNAME/items"


def create_account_key(env: dict, email: str, plan: str = "enterprise") -> str:
    """``accounts create`` of the admin commands (``python -m app.admin``, the ``flask accounts`` group) run
    in this process with the settings ``env``: the key it prints. For the end-to-end tests whose subject is
    not the account step (the command line itself is tested in tests/app)."""
    from click.testing import CliRunner
    from flask.cli import ScriptInfo

    from app.admin import admin, commands_app

    result = CliRunner().invoke(
        admin,
        ["accounts", "create", "--email", email, "--plan", plan],
        env={**env, "URBAN_LOAD_ENGINE": "0"},
        obj=ScriptInfo(create_app=commands_app),
    )
    assert result.exit_code == 0, result.output
    return result.stdout.strip().splitlines()[-1]
