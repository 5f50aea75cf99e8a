"""Real parts for the client tests: the Flask app served over HTTP on 127.0.0.1, real accounts and keys,
the `urban` command run as a subprocess, and small misbehaving servers on loopback (silent, closing, not
HTTP, plain HTTP behind https://, a self-signed TLS server, a proxy's HTML 502, a full accept queue)."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
#: seconds between a test server's checks for shutdown (``serve_forever``'s default, 0.5 s, is what each
#: ``shutdown()`` waits)
SHUTDOWN_POLL = 0.02
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

    def add_location(
        self,
        account: Account,
        location_id: str,
        name: str,
        lat: float,
        lng: float,
        primary: bool = False,
        address: str = "",
        label: str = "",
    ) -> None:
        self.flask(
            "locations",
            "add",
            "--email",
            account.email,
            "--id",
            location_id,
            "--name",
            name,
            "--lat",
            str(lat),
            "--lng",
            str(lng),
            "--address",
            address,
            "--label",
            label,
            *(["--primary"] if primary else []),
        )

    def exhaust_quota(self, account: Account) -> None:
        """Use up the account's daily quota today and tomorrow (UTC), through the app's own usage counter."""
        from app.store import usage
        from app.store.db import open_store
        from app.store.plans import PLANS

        conn = open_store(self.app)
        try:
            plan = conn.execute("SELECT plan FROM accounts WHERE id = ?", (account.id,)).fetchone()[0]
            limit = PLANS[plan].daily_quota
            now = datetime.now(UTC)
            for day in (usage.day_of(now), usage.day_of(now + timedelta(days=1))):
                while usage.admit(conn, account.id, day, limit) is not None:
                    pass
        finally:
            conn.close()

    def get(self, path: str, key: str | None, _lang: str | None = None, **params) -> requests.Response:
        """The REST call the client should reproduce (same key, same parameters; ``_lang`` as
        Accept-Language)."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if _lang:
            headers["Accept-Language"] = _lang
        return requests.get(f"{self.base_url}/{path}", params=params, headers=headers, timeout=30)


@contextlib.contextmanager
def serve_app(data_dir, instance):
    """``app.create_app(test_config)`` on ``instance`` and the snapshot ``data_dir``, served by a threaded
    WSGI server on a free loopback port; yields an :class:`ApiServer`."""
    from werkzeug.serving import WSGIRequestHandler, make_server

    class QuietHandler(WSGIRequestHandler):
        disable_nagle_algorithm = True  # no delayed-ACK wait between an answer's headers and body

        def log_request(self, *args, **kwargs):
            pass

    from app import create_app

    app = create_app(
        {
            "TESTING": True,
            "SECRET_KEY": "client-tests",
            "DATABASE": str(instance / "urban.sqlite"),
            "DATA_DIR": str(data_dir),
            "CLOCK": "snapshot",
            "RATELIMIT_STORAGE_URI": "memory://",
            "AUTH_FAILURE_LIMIT": "1000 per minute",
            "INSTANCE_PATH": str(instance),
        }
    )
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": SHUTDOWN_POLL},
        name="client-api-server",
        daemon=True,
    )
    thread.start()
    try:
        yield ApiServer(app, f"http://127.0.0.1:{server.server_port}/api/v1")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture(scope="session")
def api_server(snapshot_dir, tmp_path_factory):
    """The real app on the demo snapshot, on a free loopback port."""
    with serve_app(snapshot_dir, tmp_path_factory.mktemp("client-instance")) as server:
        yield server


@pytest.fixture(scope="session")
def account(api_server) -> Account:
    """An API-plan account with two saved locations: inside the Antwerp LEZ (primary) and in Gent."""
    acc = api_server.create_account("api")
    api_server.add_location(
        acc,
        "loc_groenplaats",
        "Groenplaats",
        51.2194,
        4.4009,
        primary=True,
        address="Groenplaats, 2000 Antwerpen",
        label="werf",
    )
    api_server.add_location(acc, "loc_gent", "Korenmarkt", 51.0549, 3.7215, address="Korenmarkt, 9000 Gent")
    return acc


@pytest.fixture
def fresh_account(api_server) -> Account:
    """A new developer account (100 calls a day) for tests that count calls."""
    return api_server.create_account("developer")


def client_environment(directory: Path) -> dict:
    """Environment for a `urban` subprocess: no inherited URBAN_* settings, a private config path under
    ``directory``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("URBAN_", "NO_COLOR", "FORCE_COLOR"))}
    env["URBAN_CONFIG"] = str(directory / "config" / "urban.ini")
    env["COLUMNS"] = "200"
    env["LC_ALL"] = "C.UTF-8"  # the locale chooses the default language: English here, whatever the machine's
    return env


@pytest.fixture
def client_env(tmp_path):
    """Environment for a `urban` subprocess: no inherited URBAN_* settings, a private config path."""
    return client_environment(tmp_path)


@pytest.fixture
def run_urban(client_env):
    """Run `urban ARGS` in its own process (forked from a warm one where Python's start-up is the same,
    tests/client/cli_forkserver.py; else a subprocess); returns CompletedProcess with bytes stdout/stderr."""

    def run(*args, env=None, input=None, timeout=60):
        full_env = dict(client_env, **(env or {}))
        full_env = {k: v for k, v in full_env.items() if v is not None}
        command = urban_command()
        server = _cli_fork_server()
        if server.can_run(full_env):
            argv = [command[0] if len(command) == 1 else "urban", *map(str, args)]
            return server.run(argv, full_env, os.getcwd(), input, timeout)
        return subprocess.run(
            command + [str(a) for a in args],
            env=full_env,
            input=input,
            capture_output=True,
            timeout=timeout,
        )

    return run


_fork_server = None
_mcp_server = None


def _cli_fork_server():
    """This test process's `urban` fork server (tests/client/cli_forkserver.py), started on first use."""
    global _fork_server
    if _fork_server is None:
        from tests.client.cli_forkserver import ForkServer

        _fork_server = ForkServer(client_environment(Path(tempfile.gettempdir())), ROOT)
    return _fork_server


def mcp_command(env: dict, *options: str) -> list[str]:
    """The command of `urban mcp OPTIONS` run with ``env`` (plus what an MCP client passes on): forked from a
    warm process that has imported the MCP server (tests/client/cli_forkserver.py), on the spawned process's
    own pipes, where Python's start-up is the same; else the console script."""
    from mcp.client.stdio import get_default_environment

    global _mcp_server
    if _mcp_server is None:
        from tests.client.cli_forkserver import ForkServer

        _mcp_server = ForkServer(
            client_environment(Path(tempfile.gettempdir())), ROOT, preload=("urban_client.mcp_server",)
        )
    if _mcp_server.can_run({**get_default_environment(), **env}):
        return _mcp_server.attach_command(["urban", "mcp", *options])
    return [*urban_command(), "mcp", *options]


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
    wake_accept(sock)
    thread.join(5)
    for conn in accepted:
        conn.close()
    sock.close()


def wake_accept(sock: socket.socket) -> None:
    """End a thread's blocking ``accept()`` on ``sock`` now (it raises), not at its next timeout."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class RawServer:
    """A TCP server on 127.0.0.1 that runs ``behaviour(conn)`` for each accepted connection in a thread;
    ``base_url`` points at it (``scheme`` http or https)."""

    def __init__(self, behaviour, scheme="http", tls: ssl.SSLContext | None = None, host="127.0.0.1"):
        self.behaviour, self.tls = behaviour, tls
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.base_url = f"{scheme}://{host}:{self.port}/api/v1"
        self._stop = threading.Event()
        self._conns = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(10)
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            self.behaviour(conn)
        except OSError:  # the client hung up, or the TLS handshake failed: both are the point of some tests
            pass
        finally:
            conn.close()

    def close(self):
        self._stop.set()
        wake_accept(self.sock)
        self._thread.join(5)
        for conn in self._conns:
            conn.close()
        self.sock.close()


def read_request(conn) -> bytes:
    """Bytes up to the end of the request head; only the first chunk when it is not HTTP (a TLS hello),
    as a real HTTP server answers 400 at once."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if not data[:1].isalpha():
            break
    return data


def http_answer(status: str, content_type: str, body: bytes):
    """A behaviour that reads one request and sends a complete HTTP/1.1 answer, then closes."""

    def behaviour(conn):
        read_request(conn)
        conn.sendall(
            f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )

    return behaviour


NGINX_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


@pytest.fixture
def raw_server():
    """Factory of :class:`RawServer` instances, all closed at the end of the test."""
    servers = []

    def make(behaviour, **kwargs):
        servers.append(RawServer(behaviour, **kwargs))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


@pytest.fixture(scope="session")
def self_signed(tmp_path_factory):
    """A self-signed certificate for localhost / 127.0.0.1: (server SSLContext, path of the PEM cert)."""
    from bench.services import self_signed_certificate, tls_server_context

    certificate, key = self_signed_certificate(tmp_path_factory.mktemp("tls"))
    return tls_server_context(certificate, key), certificate


@pytest.fixture
def unreachable_port():
    """A port whose accept queue is full, so the kernel drops new SYNs: connecting times out (the real
    symptom of a firewalled or overloaded host), with nothing leaving the machine."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(0)
    port = sock.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    probe = socket.socket()
    probe.settimeout(0.3)
    try:
        with pytest.raises(TimeoutError):
            probe.connect(("127.0.0.1", port))
    finally:
        probe.close()
    yield port
    for filler in fillers:
        filler.close()
    sock.close()
