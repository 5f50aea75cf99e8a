"""``python -m app.sources``: the refresher without a Flask app, and live mode in one command.

::

    python -m app.sources refresh [--every SECONDS]          # cron form: no SECRET_KEY, no snapshot needed
    python -m app.sources live [--port 8000] [--every 60]    # refresh once, then refresher loop + API server

Settings come from the ``URBAN_*`` environment (see ``docs/sources.md``).
"""

from __future__ import annotations

import click

from .cli import EVERY, REFERENCE, ROUNDS, standalone_refresh
from .live import run_live


@click.group(help=__doc__.split("\n")[0])
def main():
    pass


@main.command("refresh")
@EVERY
@REFERENCE
@ROUNDS
def refresh(every, reference, rounds):
    """Fetch the live sources; publish a new snapshot at URBAN_DATA_DIR atomically (exit 1: nothing published)."""
    raise SystemExit(standalone_refresh(every, reference, rounds))


@main.command("live")
@click.option("--port", type=int, default=None, help="API port (default: PORT or 8000)")
@click.option("--host", default=None, help="bind address (default: HOST or 127.0.0.1)")
@click.option("--workers", type=int, default=None, help="gunicorn workers (default: WEB_CONCURRENCY or 2)")
@click.option("--every", type=click.FloatRange(min=1.0), default=60.0, show_default=True, metavar="SECONDS",
              help="seconds between refresh rounds")
@REFERENCE
def live(port, host, workers, every, reference):
    """Live mode end to end: one refresh round, then the refresher loop and the API (``python -m app.serve``)."""
    raise SystemExit(run_live(port=port, host=host, workers=workers, every=every, reference=reference))


if __name__ == "__main__":
    main(prog_name="python -m app.sources")
