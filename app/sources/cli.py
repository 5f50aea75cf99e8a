"""``flask --app wsgi snapshot refresh [--every SECONDS]``: build snapshots from the live sources.

One shot (cron-able; exit status 1 when nothing was published) or, with ``--every``, a loop that starts a
round every SECONDS and keeps the same session, cache and circuit breakers between rounds.
"""

from __future__ import annotations

import os
import time

import click
from flask import current_app
from flask.cli import with_appcontext

from .http import Upstream, build_session
from .refresher import refresh
from .settings import SourceSettings


@click.group("snapshot", help="Data snapshots from the live upstream sources.")
def snapshot_group():
    pass


@snapshot_group.command("refresh")
@click.option("--every", type=click.FloatRange(min=1.0), default=None, metavar="SECONDS",
              help="repeat: start a new round every SECONDS (default: one round, then exit)")
@click.option("--reference", type=click.Path(file_okay=False), default=None,
              help="directory of the published reference files (default: URBAN_REFERENCE_DIR)")
@click.option("--rounds", type=click.IntRange(min=1), default=None, hidden=True,
              help="with --every: stop after N rounds (tests)")
@with_appcontext
def refresh_command(every, reference, rounds):
    """Fetch GIPOD, De Lijn, IRCEL and the LEZ; publish a new snapshot at DATA_DIR atomically."""
    app = current_app
    settings = SourceSettings.from_mapping(app.config)
    reference = reference or settings.reference_dir
    cache = settings.http_cache or os.path.join(app.instance_path, "http_cache.sqlite")
    session = build_session(cache, settings)
    upstream = Upstream(session, settings)
    data_dir = app.config.get("DATA_DIR", "data/snapshot")
    ok, done = True, 0
    try:
        while True:
            started = time.monotonic()
            report = refresh(data_dir, reference, upstream, settings)
            ok = report.published
            for line in report.lines():
                click.echo(line)
            done += 1
            if every is None or (rounds is not None and done >= rounds):
                break
            time.sleep(max(0.0, every - (time.monotonic() - started)))
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        session.close()
    if not ok:
        raise SystemExit(1)
