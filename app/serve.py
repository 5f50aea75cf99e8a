"""Run the API on gunicorn: ``python -m app.serve --port 8000`` (what ``make serve`` does).

Binds 127.0.0.1 by default. Without ``URBAN_ENV`` it runs in development mode with one ephemeral
``SECRET_KEY`` shared by all workers; set ``URBAN_ENV=production`` and ``URBAN_SECRET_KEY`` for production.
"""

from __future__ import annotations

import argparse
import os
import secrets
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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m app.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--workers", type=int, default=None, help="default: WEB_CONCURRENCY or 2")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    env.setdefault("URBAN_ENV", "development")
    if env["URBAN_ENV"] == "development" and not env.get("URBAN_SECRET_KEY"):
        env["URBAN_SECRET_KEY"] = secrets.token_urlsafe(32)
        print("development mode: ephemeral SECRET_KEY for this run", file=sys.stderr)
    os.chdir(CONF.parent if CONF.is_file() else os.getcwd())
    cmd = command(args.port, args.host, args.workers)
    os.execve(cmd[0], cmd, env)


if __name__ == "__main__":
    main()
