"""Run the API on gunicorn: ``python -m app.serve --port 8000`` (what ``make serve`` does).

Binds 127.0.0.1 by default. Without ``URBAN_ENV`` it runs in development mode with one ephemeral
``SECRET_KEY`` shared by all workers; set ``URBAN_ENV=production`` and ``URBAN_SECRET_KEY`` for production.
A port that is already taken is reported in one sentence (with ``make serve PORT=…``), and once the
workers are ready one line says which address to open in the browser.
"""

from __future__ import annotations

import argparse
import errno
import os
import secrets
import socket
import sys
from pathlib import Path

CONF = Path(__file__).resolve().parents[1] / "gunicorn.conf.py"


def command(port: int, host: str, workers: int | None) -> list[str]:
    """The gunicorn command line.

    Examples
    --------
    >>> command(8000, "127.0.0.1", 2)[-4:]
    ['--bind', '127.0.0.1:8000', '--workers', '2']
    """
    cmd = [sys.executable, "-m", "gunicorn"]
    if CONF.is_file():
        cmd += ["--config", str(CONF)]
    cmd += ["wsgi:app", "--bind", f"{host}:{port}"]
    if workers:
        cmd += ["--workers", str(workers)]
    return cmd


def port_in_use(host: str, port: int) -> str | None:
    """``None`` when ``host:port`` can be bound (as gunicorn binds it, with SO_REUSEADDR), else the
    sentence that tells what to do."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return None  # gunicorn reports a bad host itself
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                return None
            why = "is already in use" if exc.errno == errno.EADDRINUSE else "needs privileges"
            return (
                f"port {port} on {host} {why} (another server, or an earlier `make serve` still running?): "
                f"start on another port with `make serve PORT={port + 1 if port < 65535 else 8001}` "
                f"(or python -m app.serve --port {port + 1 if port < 65535 else 8001})."
            )
    return None


def browser_url(host: str, port: int) -> str:
    """The address to open in a browser (a wildcard bind is reached on localhost).

    Examples
    --------
    >>> browser_url("0.0.0.0", 8000), browser_url("::1", 8001)
    ('http://127.0.0.1:8000/', 'http://[::1]:8001/')
    """
    if host in ("0.0.0.0", "", "::"):
        host = "127.0.0.1"
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m app.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--workers", type=int, default=None, help="default: WEB_CONCURRENCY or 2")
    args = parser.parse_args(argv)
    problem = port_in_use(args.host, args.port)
    if problem:
        raise SystemExit(problem)
    env = dict(os.environ)
    env["URBAN_SERVE_URL"] = browser_url(args.host, args.port)  # announced by gunicorn.conf.py when ready
    env.setdefault("URBAN_ENV", "development")
    if env["URBAN_ENV"] == "development" and not env.get("URBAN_SECRET_KEY"):
        env["URBAN_SECRET_KEY"] = secrets.token_urlsafe(32)
        print("development mode: ephemeral SECRET_KEY for this run", file=sys.stderr)
    os.chdir(CONF.parent if CONF.is_file() else os.getcwd())
    cmd = command(args.port, args.host, args.workers)
    os.execve(cmd[0], cmd, env)


if __name__ == "__main__":
    main()
