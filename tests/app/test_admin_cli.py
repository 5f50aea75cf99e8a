"""Admin commands on the Flask CLI against a real SQLite file; bad arguments write nothing."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.store import accounts, apikeys

ROOT = Path(__file__).resolve().parents[2]


def snapshot(app):
    """A digest of every row of every table: proves that a failed command wrote nothing."""
    from app.store.db import open_store

    conn = open_store(app)
    h = hashlib.sha256()
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"):
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1"):
            h.update(repr(tuple(row)).encode())
    conn.close()
    return h.hexdigest()


def invoke(runner, *args):
    return runner.invoke(args=list(args), catch_exceptions=False)


def test_accounts_create_prints_key_alone_on_last_line(runner, store):
    res = invoke(runner, "accounts", "create", "--email", "ops@antwerpen.be", "--plan", "developer")
    assert res.exit_code == 0, res.output
    key = res.stdout.strip().splitlines()[-1]
    assert apikeys.well_formed(key)
    assert accounts.authenticate(store, key)["plan"] == "developer"


@pytest.mark.parametrize(
    "args, message",
    [
        (["accounts", "create", "--email", "ops@antwerpen.be", "--plan", "gold"], "gold"),
        (["accounts", "create", "--email", "not-an-address", "--plan", "api"], "not a valid e-mail"),
        (["accounts", "create", "--plan", "api"], "--email"),
        (["accounts", "create", "--email", "taken@gent.be", "--plan", "api"], "already exists"),
        (["accounts", "set-plan", "--email", "nobody@gent.be", "--plan", "api"], "no account"),
        (["accounts", "set-plan", "--email", "taken@gent.be", "--plan", "platinum"], "platinum"),
        (["keys", "create", "--email", "nobody@gent.be"], "no account"),
        (["keys", "revoke", "--email", "taken@gent.be", "--id", "999"], "no key with id 999"),
        (["keys", "revoke", "--email", "taken@gent.be", "--id", "x"], "x"),
        (
            ["locations", "add", "--email", "taken@gent.be", "--name", "A", "--lat", "nan", "--lng", "4"],
            "not a decimal number",
        ),
        (
            [
                "locations",
                "add",
                "--email",
                "taken@gent.be",
                "--name",
                "A",
                "--lat",
                "\uff15\uff11.2",
                "--lng",
                "4",
            ],
            "not a decimal number",
        ),  # fullwidth digits
        (
            [
                "locations",
                "add",
                "--email",
                "taken@gent.be",
                "--name",
                "A",
                "--lat",
                "51.2",
                "--lng",
                "\u0664.4",
            ],
            "not a decimal number",
        ),  # Arabic-Indic digit
        (
            ["locations", "add", "--email", "taken@gent.be", "--name", "A", "--lat", " 51.2", "--lng", "4"],
            "not a decimal number",
        ),
        (
            ["locations", "add", "--email", "taken@gent.be", "--name", "A", "--lat", "95", "--lng", "4"],
            "not valid coordinates",
        ),
        (
            ["locations", "add", "--email", "taken@gent.be", "--name", "A", "--lat", "abc", "--lng", "4"],
            "abc",
        ),
        (["locations", "add", "--email", "taken@gent.be", "--name", "", "--lat", "51", "--lng", "4"], "name"),
        (
            [
                "locations",
                "add",
                "--email",
                "taken@gent.be",
                "--name",
                "A",
                "--lat",
                "51",
                "--lng",
                "4",
                "--id",
                "has space",
            ],
            "id must be",
        ),
        (["locations", "remove", "--email", "taken@gent.be", "--id", "loc_nope"], "no location"),
        (["usage", "show", "--email", "nobody@gent.be"], "no account"),
    ],
)
def test_bad_arguments_fail_clearly_and_write_nothing(app, runner, account, args, message):
    account("developer", email="taken@gent.be")
    before = snapshot(app)
    res = runner.invoke(args=args)
    assert res.exit_code != 0
    assert message in res.output, res.output
    assert "Traceback" not in res.output
    assert snapshot(app) == before


def test_outside_service_area_rejected_when_engine_loaded(make_app, box_engine, account):
    app = make_app(ENGINE=box_engine)
    runner = app.test_cli_runner()
    account("developer", email="taken@gent.be")
    before = snapshot(app)
    res = runner.invoke(
        args=[
            "locations",
            "add",
            "--email",
            "taken@gent.be",
            "--name",
            "Amsterdam",
            "--lat",
            "52.37",
            "--lng",
            "4.9",
        ]
    )
    assert res.exit_code != 0 and "lies outside Flanders and Brussels" in res.output
    assert snapshot(app) == before


def test_full_admin_flow(runner, store):
    key = invoke(
        runner, "accounts", "create", "--email", "flow@gent.be", "--plan", "api"
    ).stdout.splitlines()[-1]
    res = invoke(
        runner,
        "locations",
        "add",
        "--email",
        "flow@gent.be",
        "--name",
        "Stadhuis",
        "--address",
        "Grote Markt 1",
        "--lat",
        "51.2213",
        "--lng",
        "4.3997",
        "--label",
        "kantoor",
        "--primary",
        "--id",
        "loc_stadhuis",
    )
    assert res.stdout.strip() == "loc_stadhuis"
    listed = json.loads(invoke(runner, "locations", "list", "--email", "flow@gent.be", "--json").stdout)
    assert listed == {
        "locations": [
            {
                "id": "loc_stadhuis",
                "name": "Stadhuis",
                "address": "Grote Markt 1",
                "lat": 51.2213,
                "lng": 4.3997,
                "label": "kantoor",
                "isPrimary": True,
            }
        ]
    }
    key2 = invoke(runner, "keys", "create", "--email", "flow@gent.be").stdout.splitlines()[-1]
    keys_out = invoke(runner, "keys", "list", "--email", "flow@gent.be").stdout
    assert key not in keys_out and key2 not in keys_out
    assert key[:14] in keys_out and key2[:14] in keys_out
    first_id = keys_out.splitlines()[0].split("\t")[0]
    invoke(runner, "keys", "revoke", "--email", "flow@gent.be", "--id", first_id)
    assert accounts.authenticate(store, key) is None
    assert accounts.authenticate(store, key2) is not None
    assert "revoked" in invoke(runner, "keys", "list", "--email", "flow@gent.be").stdout.splitlines()[0]
    out = invoke(runner, "accounts", "set-plan", "--email", "flow@gent.be", "--plan", "enterprise").stdout
    assert "plan=enterprise" in out
    usage_out = invoke(runner, "usage", "show", "--email", "flow@gent.be").stdout
    assert "used=0" in usage_out and "quota=unlimited" in usage_out
    invoke(runner, "locations", "remove", "--email", "flow@gent.be", "--id", "loc_stadhuis")
    assert json.loads(invoke(runner, "locations", "list", "--email", "flow@gent.be", "--json").stdout) == {
        "locations": []
    }


@pytest.mark.slow
def test_flask_cli_subprocess_on_real_files(tmp_path):
    """`flask --app wsgi accounts create` as an operator runs it (own process, env configuration)."""
    env = dict(os.environ, URBAN_INSTANCE_PATH=str(tmp_path), URBAN_ENV="development", URBAN_LOAD_ENGINE="0")
    cmd = [
        sys.executable,
        "-m",
        "flask",
        "--app",
        "wsgi",
        "accounts",
        "create",
        "--email",
        "cli@gent.be",
        "--plan",
        "pro",
    ]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    key = out.stdout.strip().splitlines()[-1]
    assert apikeys.well_formed(key)
    assert (tmp_path / "urban.sqlite").exists()
    assert key.encode() not in (tmp_path / "urban.sqlite").read_bytes()
    bad = subprocess.run(cmd[:-1] + ["gold"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "gold" in bad.stderr
