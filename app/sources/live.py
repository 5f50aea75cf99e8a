"""Live mode in one command (``python -m app.sources live``, what ``make serve-live`` runs).

1. One refresh round in this process, so the API starts on live data (exit 1 when it publishes nothing and
   there is no snapshot to serve).
2. The refresher loop as a child process (``python -m app.sources refresh --every SECONDS``).
3. The API as a child process (``python -m app.serve``: gunicorn, development mode unless ``URBAN_ENV`` says
   otherwise); its workers reload each new snapshot.

``URBAN_CLOCK`` defaults to ``system`` (live data is judged against the real time) and ``URBAN_DATA_DIR`` is
made absolute for the children. SIGINT/SIGTERM stop both children; when either ends, the other is stopped.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click

from .cli import default_cache, run_rounds
from .settings import SourceSettings


def live_environ(environ=None) -> dict:
    """The children's environment: ``URBAN_CLOCK=system`` by default, absolute ``URBAN_DATA_DIR``.

    Examples
    --------
    >>> env = live_environ({"URBAN_DATA_DIR": "/srv/snap"})
    >>> env["URBAN_CLOCK"], env["URBAN_DATA_DIR"]
    ('system', '/srv/snap')
    """
    env = dict(os.environ if environ is None else environ)
    env.setdefault("URBAN_CLOCK", "system")
    env["URBAN_DATA_DIR"] = os.path.abspath(env.get("URBAN_DATA_DIR") or "data/snapshot")
    env["URBAN_INSTANCE_PATH"] = os.path.abspath(env.get("URBAN_INSTANCE_PATH") or "instance")
    return env


def run_live(*, port=None, host=None, workers=None, every: float = 60.0, reference=None) -> int:
    """Refresh once, then run the refresher loop and the API until stopped; returns the exit status."""
    env = live_environ()
    settings = SourceSettings.from_mapping({}, env)
    reference = reference or settings.reference_dir
    data_dir = env["URBAN_DATA_DIR"]
    click.echo(f"live mode: first refresh into {data_dir}", err=True)
    published = run_rounds(
        data_dir,
        reference,
        settings,
        default_cache(settings, env["URBAN_INSTANCE_PATH"]),
        echo=lambda line: click.echo(line, err=True),
    )
    if not published and not (Path(data_dir) / "manifest.json").is_file():
        click.echo(
            "live mode: the first refresh published nothing and there is no snapshot to serve; "
            "check the URBAN_*_URL settings and URBAN_DELIJN_KEY (or run `make snapshot` first)",
            err=True,
        )
        return 1
    py = sys.executable
    refresher = subprocess.Popen(
        [py, "-m", "app.sources", "refresh", "--every", f"{every:g}", "--reference", str(reference)], env=env
    )
    serve = [py, "-m", "app.serve"]
    for flag, value in (("--port", port), ("--host", host), ("--workers", workers)):
        if value is not None:
            serve += [flag, str(value)]
    server = subprocess.Popen(serve, env=env)
    children = (server, refresher)
    stopped = []

    def stop(*_):
        stopped.append(True)
        for child in children:
            if child.poll() is None:
                child.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        while all(child.poll() is None for child in children):
            time.sleep(0.2)
    finally:
        ended_alone = not stopped
        stop()
        for child in children:
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                child.kill()
    return (server.returncode or 0) if ended_alone else 0
