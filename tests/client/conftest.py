"""Real parts for the client tests: the Flask app served over HTTP on 127.0.0.1, real accounts and keys,
the `urban` command run as a subprocess, and small misbehaving servers (silent, non-JSON) on loopback."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
_emails = itertools.count(1)


def urban_command() -> list[str]:
    """The installed console script next to this interpreter (what `pip install` gives), else `-m`."""
    script = Path(sys.executable).with_name("urban")
    if script.exists():
        return [str(script)]
    found = shutil.which("urban")
    return [found] if found else [sys.executable, "-m", "urban_client"]


@dataclass
class Account:
    email: str
    key: str
    id: int


@dataclass
class ApiServer:
    app: object
    base_url: str

    def create_account(self, plan: str = "developer") -> Account:
        """A real account and key, made by the Flask CLI command `flask accounts create`."""
        email = f"client{next(_emails)}@stad.antwerpen.be"
        out = self.flask("accounts", "create", "--email", email, "--plan", plan)
        key = out.strip().splitlines()[-1].strip()
        account_id = int(out.split()[1])  # "account <id> <email> plan=<plan>"
        return Account(email, key, account_id)

    def flask(self, *args) -> str:
        """Run an admin command of the Flask CLI (`flask --app wsgi ...`) on this app; returns its stdout."""
        result = self.app.test_cli_runner().invoke(args=list(args))
        assert result.exit_code == 0, result.output
        return result.stdout

    def set_plan(self, account: Account, plan: str) -> None:
        self.flask("accounts", "set-plan", "--email", account.email, "--plan", plan)

    def revoke_keys(self, account: Account) -> None:
        for line in self.flask("keys", "list", "--email", account.email).splitlines():
            self.flask("keys", "revoke", "--email", account.email, "--id", line.split("\t")[0])

    def add_location(self, account: Account, location_id: str, name: str, lat: float, lng: float,
                     primary: bool = False, address: str = "", label: str = "") -> None:
        self.flask("locations", "add", "--email", account.email, "--id", location_id, "--name", name,
                   "--lat", str(lat), "--lng", str(lng), "--address", address, "--label", label,
                   *(["--primary"] if primary else []))

    def get(self, path: str, key: str | None, **params) -> requests.Response:
        """The REST call the client should reproduce (same key, same parameters)."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return requests.get(f"{self.base_url}/{path}", params=params, headers=headers, timeout=30)


@pytest.fixture(scope="session")
def api_server(snapshot_dir, tmp_path_factory):
    """`app.create_app(test_config)` on a temp instance dir and the demo snapshot, on a free loopback port."""
    from werkzeug.serving import WSGIRequestHandler, make_server

    class QuietHandler(WSGIRequestHandler):
        def log_request(self, *args, **kwargs):
            pass

    from app import create_app

    instance = tmp_path_factory.mktemp("client-instance")
    app = create_app({
        "TESTING": True,
        "SECRET_KEY": "client-tests",
        "DATABASE": str(instance / "urban.sqlite"),
        "DATA_DIR": str(snapshot_dir),
        "CLOCK": "snapshot",
        "RATELIMIT_STORAGE_URI": "memory://",
        "AUTH_FAILURE_LIMIT": "1000 per minute",
        "INSTANCE_PATH": str(instance),
    })
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="client-api-server", daemon=True)
    thread.start()
    try:
        yield ApiServer(app, f"http://127.0.0.1:{server.server_port}/api/v1")
    finally:
        server.shutdown()
        thread.join(10)


@pytest.fixture(scope="session")
def account(api_server) -> Account:
    """An API-plan account with two saved locations: inside the Antwerp LEZ (primary) and in Gent."""
    acc = api_server.create_account("api")
    api_server.add_location(acc, "loc_groenplaats", "Groenplaats", 51.2194, 4.4009, primary=True,
                            address="Groenplaats, 2000 Antwerpen", label="werf")
    api_server.add_location(acc, "loc_gent", "Korenmarkt", 51.0549, 3.7215, address="Korenmarkt, 9000 Gent")
    return acc


@pytest.fixture
def fresh_account(api_server) -> Account:
    """A new developer account (100 calls a day) for tests that count calls."""
    return api_server.create_account("developer")


@pytest.fixture
def client_env(tmp_path):
    """Environment for a `urban` subprocess: no inherited URBAN_* settings, a private config path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("URBAN_", "NO_COLOR", "FORCE_COLOR"))}
    env["URBAN_CONFIG"] = str(tmp_path / "config" / "urban.ini")
    env["COLUMNS"] = "200"
    return env


@pytest.fixture
def run_urban(client_env):
    """Run `urban ARGS` as a subprocess; returns CompletedProcess with bytes stdout/stderr."""

    def run(*args, env=None, input=None, timeout=60):
        full_env = dict(client_env, **(env or {}))
        full_env = {k: v for k, v in full_env.items() if v is not None}
        return subprocess.run(urban_command() + [str(a) for a in args], env=full_env, input=input,
                              capture_output=True, timeout=timeout)

    return run


def free_port() -> int:
    """A loopback port with nothing listening on it (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_server():
    """A loopback server that accepts connections and never answers: base URL for timeout tests."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/api/v1"
    stop.set()
    thread.join(5)
    for conn in accepted:
        conn.close()
    sock.close()
