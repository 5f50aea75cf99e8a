"""``flask --app wsgi alerts run``: one alert round: the change feed's new events enqueued and delivered."""

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
    """Turn the change feed's new events into deliveries and deliver what is due."""
    from .run import run_alerts

    counts = run_alerts(current_app._get_current_object())
    click.echo(
        "{new} new events; sent {mail} mails, {webhook} webhooks; {failed} failed, {deferred} deferred".format(
            **counts
        )
    )
