"""``flask --app wsgi alerts run``: one alert round against the served snapshot (DATA_DIR)."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import with_appcontext


@click.group("alerts", help="Dashboard alerts.")
def alerts_group():
    pass


@alerts_group.command("run")
@with_appcontext
def run_command():
    """Evaluate every subscription against the current snapshot and deliver the new events."""
    from geo.data.engine import Engine

    from .run import run_alerts

    app = current_app._get_current_object()
    engine = app.extensions["urban"].engine or Engine.load(app.config["DATA_DIR"])
    counts = run_alerts(app, engine)
    click.echo(
        "{new} new events; sent {mail} mails, {webhook} webhooks; {failed} failed, {deferred} deferred".format(
            **counts
        )
    )
