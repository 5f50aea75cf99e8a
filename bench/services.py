"""Debian's real PostgreSQL, redis-server and nginx on 127.0.0.1, each in a temporary directory and on a free
port, for the multi-host tests and ``make loadtest --topology``.

Each class is a context manager: ``start()`` waits until the server answers, ``stop()`` ends only the
process it started. PostgreSQL refuses to run as root, so as root ``initdb`` and ``postgres`` run as the
``postgres`` system user (the Debian package creates it) in a directory handed to that user.

Examples
--------
>>> with Postgres() as pg, Redis() as redis:      # doctest: +SKIP
...     pg.url("urban"), redis.url
('postgresql://postgres@127.0.0.1:41234/urban', 'redis://127.0.0.1:41235/0')
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from bench.deploy import ROOT, free_port

NGINX_CONF = ROOT / "deploy" / "nginx.conf"


class ServiceError(RuntimeError):
    """A server did not start; the message carries the end of its log."""


def _wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    raise ServiceError(f"{what} did not start on 127.0.0.1:{port}:\n{tail}")


def _stop(proc: subprocess.Popen | None, sig=signal.SIGTERM, timeout: float = 20) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _other_free_ports(taken: set[int], n: int) -> list[int]:
    """``n`` free ports on 127.0.0.1, distinct from each other and from ``taken``."""
    ports: list[int] = []
    while len(ports) < n:
        port = free_port()
        if port not in taken and port not in ports:
            ports.append(port)
    return ports


class _Service:
    proc: subprocess.Popen | None = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def postgres_bin(name: str) -> str:
    """Path of a PostgreSQL server program (Debian keeps them in /usr/lib/postgresql/<major>/bin)."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    if found:
        return found[-1]
    path = shutil.which(name)
    if path is None:
        raise ServiceError(f"PostgreSQL's {name} not found: apt-get install postgresql")
    return path


class Postgres(_Service):
    """A throw-away PostgreSQL cluster (``initdb`` into a temp dir, trust auth, 127.0.0.1 + a socket in the
    temp dir). ``durable=False`` (tests) turns fsync off; the load test keeps the defaults."""

    def __init__(self, *, durable: bool = False, port: int | None = None):
        self.durable = durable
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="urban-pg-"))
        self.data, self.log = self.dir / "data", self.dir / "postgres.log"
        self._user = None
        if os.geteuid() == 0:
            self._user = pwd.getpwnam("postgres")
            os.chown(self.dir, self._user.pw_uid, self._user.pw_gid)
        os.chmod(self.dir, 0o700)

    @classmethod
    def attach(cls, port: int, directory: Path) -> "Postgres":
        """A handle on a server another process started and will stop (``stop()`` leaves it running)."""
        server = cls.__new__(cls)
        server.durable, server.port, server.dir, server._user = False, port, directory, None
        server.data, server.log = directory / "data", directory / "postgres.log"
        return server

    def _demote(self):
        if self._user is not None:
            os.setgid(self._user.pw_gid)
            os.setuid(self._user.pw_uid)

    def _run(self, *cmd) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, preexec_fn=self._demote, capture_output=True, text=True, cwd=self.dir)

    def start(self, timeout: float = 60) -> "Postgres":
        init = self._run(
            postgres_bin("initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
            "--no-instructions",
        )
        if init.returncode != 0:
            raise ServiceError(f"initdb failed:\n{init.stdout}\n{init.stderr}")
        options = [
            "-c",
            f"port={self.port}",
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={self.dir}",
            "-c",
            "max_connections=200",
            "-c",
            "shared_buffers=64MB",
        ]
        if not self.durable:
            options += ["-c", "fsync=off", "-c", "full_page_writes=off"]
        log = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [postgres_bin("postgres"), "-D", str(self.data), *options],
            preexec_fn=self._demote,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.dir,
        )
        log.close()
        _wait_port(self.port, self.proc, self.log, timeout, "PostgreSQL")
        # accepting TCP is not yet accepting queries: wait for a real session
        deadline = time.monotonic() + timeout
        while self.psql("postgres", "SELECT 1").returncode != 0:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise ServiceError("PostgreSQL does not accept sessions:\n" + self.log.read_text()[-3000:])
            time.sleep(0.1)
        return self

    def psql(self, database: str, sql: str) -> subprocess.CompletedProcess:
        """Run ``sql`` with Debian's psql over TCP (``-v ON_ERROR_STOP=1``)."""
        return subprocess.run(
            [
                postgres_bin("psql") if glob.glob("/usr/lib/postgresql/*/bin/psql") else "psql",
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                database,
                "-c",
                sql,
            ],
            capture_output=True,
            text=True,
        )

    def create_database(self, name: str) -> str:
        """Create database ``name``; returns its URL."""
        done = self.psql("postgres", f'CREATE DATABASE "{name}"')
        if done.returncode != 0:
            raise ServiceError(f"CREATE DATABASE {name} failed: {done.stderr}")
        return self.url(name)

    def url(self, database: str = "postgres", **options: str) -> str:
        """``postgresql://postgres@127.0.0.1:<port>/<database>`` (``options`` become ``-c`` settings)."""
        url = f"postgresql://postgres@127.0.0.1:{self.port}/{database}"
        if options:
            url += "?options=" + "%20".join(f"-c%20{k}%3D{v}" for k, v in options.items())
        return url

    def stop(self) -> None:
        if self.proc is None:  # attached: its owner stops it
            return
        _stop(self.proc, signal.SIGINT)  # "fast" shutdown
        shutil.rmtree(self.dir, ignore_errors=True)


class Redis(_Service):
    """A throw-away ``redis-server`` (no persistence) on 127.0.0.1."""

    def __init__(self, *, port: int | None = None):
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="urban-redis-"))
        self.log = self.dir / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 30) -> "Redis":
        exe = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.path.exists(exe):
            raise ServiceError("redis-server not found: apt-get install redis-server")
        log = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [
                exe,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
                "--unixsocket",
                "",
                "--daemonize",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.dir,
        )
        log.close()
        _wait_port(self.port, self.proc, self.log, timeout, "redis-server")
        return self

    def stop(self) -> None:
        _stop(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


def self_signed_certificate(
    directory: Path,
    name: str = "localhost",
    *,
    ips: tuple[str, ...] = ("127.0.0.1",),
    ca: bool = False,
    days: int = 1,
) -> tuple[Path, Path]:
    """A fresh ECDSA P-256 key and a self-signed server certificate: (certificate path, key path) in
    ``directory``, named after ``name``. The one builder of every TLS test and benchmark.

    Parameters
    ----------
    directory
        Where ``<name>.pem`` and ``<name>.key`` (mode 0600) are written.
    name
        The subject's common name and DNS name.
    ips
        IP addresses added to the subject alternative names.
    ca
        The ``BasicConstraints`` CA flag. A client trusts the certificate by loading the certificate itself
        either way; ``True`` only for a test that needs a CA (e.g. to sign another certificate).
    days
        Validity from an hour ago (clock skew) to ``days`` days from now.

    The certificate always carries the ``serverAuth`` extended key usage.
    """
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    alt_names = [x509.DNSName(name), *(x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips)]
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = Path(directory) / f"{name}.pem", Path(directory) / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path


def tls_server_context(certificate: Path, key: Path):
    """A server ``ssl.SSLContext`` holding ``certificate`` and ``key`` (for the tests' own TLS servers)."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    return context


def render_nginx(
    conf: str,
    *,
    port: int,
    upstreams: list[int],
    prefix: Path,
    user: str | None,
    tls_port: int,
    redirect_port: int,
    certificate: Path,
    key: Path,
) -> str:
    """``deploy/nginx.conf`` for a local run on 127.0.0.1: its TLS listener on ``tls_port`` with
    ``certificate`` and ``key``, its plain port-80 listener (the redirect to https) on ``redirect_port``,
    plus a plain listener on ``port`` that proxies without redirecting (what a TLS-terminating balancer
    in front would reach); proxying to gunicorns on 127.0.0.1 ``upstreams``, pid, logs and temp files under
    ``prefix``, in the foreground. Every substitution must match exactly once, so a change to the shipped
    file that breaks it fails loudly."""
    servers = "".join(f"        server 127.0.0.1:{p} max_fails=0;\n" for p in upstreams)
    temp = "".join(
        f"    {kind}_temp_path {prefix}/{kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    swaps = [
        ("user nginx;\n", f"user {user};\n" if user else ""),
        ("pid /run/nginx.pid;\n", f"pid {prefix}/nginx.pid;\ndaemon off;\n"),
        ("error_log /dev/stderr warn;\n", f"error_log {prefix}/error.log warn;\n"),
        ("    access_log /dev/stdout urban", f"{temp}    access_log {prefix}/access.log urban"),
        ("    include /etc/nginx/mime.types;\n", ""),
        ("        server app1:8000 max_fails=0;\n        server app2:8000 max_fails=0;\n", servers),
        (
            "        listen 443 ssl default_server;\n        listen 80 default_server;\n",
            f"        listen 127.0.0.1:{tls_port} ssl default_server;\n"
            f"        listen 127.0.0.1:{redirect_port} default_server;\n"
            f"        listen 127.0.0.1:{port};\n",
        ),
        ("if ($server_port = 80) {", f"if ($server_port = {redirect_port}) {{"),
        ("return 308 https://$host$request_uri;", f"return 308 https://$host:{tls_port}$request_uri;"),
        ("ssl_certificate /etc/nginx/tls/fullchain.pem;", f"ssl_certificate {certificate};"),
        ("ssl_certificate_key /etc/nginx/tls/privkey.pem;", f"ssl_certificate_key {key};"),
    ]
    for old, new in swaps:
        if conf.count(old) != 1:
            raise ServiceError(f"deploy/nginx.conf no longer contains {old.strip()!r} exactly once")
        conf = conf.replace(old, new)
    return conf


class Nginx(_Service):
    """Debian's nginx running ``deploy/nginx.conf`` in front of local gunicorns (master + workers, in the
    foreground; as root the workers run as ``nobody``).

    ``port``: plain HTTP, proxied (as from a TLS-terminating balancer); ``tls_port``: the shipped TLS
    listener with ``certificate`` and ``key`` (a fresh self-signed pair when not given); ``redirect_port``:
    the shipped plain listener that redirects to https."""

    def __init__(
        self,
        upstreams: list[int],
        *,
        port: int | None = None,
        conf: Path = NGINX_CONF,
        certificate: Path | None = None,
        key: Path | None = None,
    ):
        self.port = port or free_port()
        self.tls_port, self.redirect_port = _other_free_ports({self.port}, 2)
        self.upstreams = list(upstreams)
        self.dir = Path(tempfile.mkdtemp(prefix="urban-nginx-"))
        os.chmod(self.dir, 0o755)
        if certificate is None or key is None:
            certificate, key = self_signed_certificate(self.dir)
        self.certificate = Path(certificate)
        user = "nobody nogroup" if os.geteuid() == 0 else None
        self.conf = self.dir / "nginx.conf"
        self.conf.write_text(
            render_nginx(
                conf.read_text(),
                port=self.port,
                upstreams=self.upstreams,
                prefix=self.dir,
                user=user,
                tls_port=self.tls_port,
                redirect_port=self.redirect_port,
                certificate=self.certificate,
                key=Path(key),
            )
        )
        self.log = self.dir / "error.log"

    def start(self, timeout: float = 30) -> "Nginx":
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(exe):
            raise ServiceError("nginx not found: apt-get install nginx")
        out = open(self.dir / "stderr.log", "ab")
        self.proc = subprocess.Popen(
            [exe, "-p", str(self.dir), "-c", str(self.conf), "-e", str(self.log)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=self.dir,
        )
        out.close()
        _wait_port(self.port, self.proc, self.dir / "stderr.log", timeout, "nginx")
        return self

    def stop(self) -> None:
        _stop(self.proc, signal.SIGQUIT)  # graceful: finish requests in flight
        shutil.rmtree(self.dir, ignore_errors=True)
