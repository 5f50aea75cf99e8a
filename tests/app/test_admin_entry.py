"""``python -m app.admin`` (issue 30, item 9): the admin commands run locally without ``URBAN_ENV``,
``URBAN_SECRET_KEY`` or ``URBAN_PUBLIC_URL``; the server keeps refusing to start without them in production,
no setting lifts that, and the app built for the commands serves nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app import create_app
from app.config import ConfigurationError
from app.store import accounts
from app.store.sqlite import connect

ROOT = Path(__file__).resolve().parents[2]


def production_env(instance) -> dict:
    """The environment of a shell on a fresh clone: no URBAN_ENV (production), no secret, no public URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("URBAN_")}
    env.update(URBAN_INSTANCE_PATH=str(instance), URBAN_LOAD_ENGINE="0", PYTHONPATH=str(ROOT))
    return env


def run(env, *args):
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_the_upgrade_command_runs_without_development_mode_and_the_server_still_refuses(tmp_path):
    env = production_env(tmp_path)
    admin = (sys.executable, "-m", "app.admin")
    made = run(env, *admin, "accounts", "create", "--email", "ops@antwerpen.be", "--plan", "developer")
    assert made.returncode == 0, made.stderr
    upgraded = run(env, *admin, "accounts", "set-plan", "--email", "ops@antwerpen.be", "--plan", "pro")
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout.strip().endswith("plan=pro") and "Traceback" not in upgraded.stderr
    conn = connect(str(tmp_path / "urban.sqlite"))
    assert accounts.get_account(conn, "ops@antwerpen.be")["plan"] == "pro"
    conn.close()
    bad = run(env, *admin, "accounts", "set-plan", "--email", "ops@antwerpen.be", "--plan", "gold")
    assert bad.returncode == 2 and "gold" in bad.stderr
    # the server's app (gunicorn wsgi:app, flask --app wsgi …) in the same shell: the production guard
    server = run(env, sys.executable, "-m", "flask", "--app", "wsgi", "accounts", "list")
    assert server.returncode != 0 and "SECRET_KEY is not set" in server.stderr
    assert "python -m app.admin" in server.stderr  # where the admin commands run without it


def test_no_setting_lets_a_server_skip_the_production_checks(tmp_path, monkeypatch):
    monkeypatch.delenv("URBAN_ENV", raising=False)
    monkeypatch.delenv("URBAN_SECRET_KEY", raising=False)
    monkeypatch.setenv("URBAN_COMMANDS_ONLY", "true")
    (tmp_path / "config.py").write_text("COMMANDS_ONLY = True\n")
    with pytest.raises(ConfigurationError, match="SECRET_KEY is not set"):
        create_app({"INSTANCE_PATH": str(tmp_path), "LOAD_ENGINE": False})


def test_the_commands_app_serves_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("URBAN_ENV", raising=False)
    app = create_app({"COMMANDS_ONLY": True, "INSTANCE_PATH": str(tmp_path), "LOAD_ENGINE": False})
    with pytest.raises(RuntimeError, match="never serves requests"):
        app.test_client().get("/healthz")
