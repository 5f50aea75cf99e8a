"""``python -m app.sources``: the refresher without a Flask app, and live mode in one command.

::

    python -m app.sources refresh [--every SECONDS]          # cron form: no SECRET_KEY, no snapshot needed
    python -m app.sources live [--port 8000] [--every 60]    # refresh once, then refresher loop + API server
    python -m app.sources record DIR                         # save every upstream answer raw (+ manifest)
    python -m app.sources replay DIR --out SNAPSHOT          # build a snapshot offline from a recording

Settings come from the ``URBAN_*`` environment (see ``docs/sources.md``). ``refresh`` builds the app from
the environment once to run what other features registered after a published refresh (the dashboard's
alerts); without ``URBAN_SECRET_KEY`` or ``URBAN_ENV=development`` it says so and refreshes anyway. This
entry point is the one module of ``app/sources`` that may build the app: nothing imports it.
"""

from __future__ import annotations

import logging

import click

from app.config import ConfigurationError

from .extension import publish_hooks
from .cli import EVERY, REFERENCE, ROUNDS, standalone_refresh
from .live import run_live

log = logging.getLogger("app.sources")


def publish_hooks_from_environ():
    """The hooks to run after a published refresh, from an app built from the environment (no engine);
    None, with a warning, when the settings do not allow building one. Only ``refresh`` and ``live`` build
    it: ``record``, ``replay`` and ``--help`` do not import the factory."""
    from app import create_app

    try:
        app = create_app({"LOAD_ENGINE": False})
    except (ConfigurationError, ValueError) as exc:
        log.warning("alerts are not evaluated after refreshes: %s", exc)
        return None
    return publish_hooks(app)


@click.group(help=__doc__.split("\n")[0])
def main():
    pass


@main.command("refresh")
@EVERY
@REFERENCE
@ROUNDS
def refresh(every, reference, rounds):
    """Fetch the live sources; publish a new snapshot at URBAN_DATA_DIR atomically (exit 1: nothing published)."""
    raise SystemExit(standalone_refresh(every, reference, rounds, publish_hooks_from_environ()))


@main.command("live")
@click.option("--port", type=int, default=None, help="API port (default: PORT or 8000)")
@click.option("--host", default=None, help="bind address (default: HOST or 127.0.0.1)")
@click.option("--workers", type=int, default=None, help="gunicorn workers (default: WEB_CONCURRENCY or 2)")
@click.option(
    "--every",
    type=click.FloatRange(min=1.0),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="seconds between refresh rounds",
)
@REFERENCE
def live(port, host, workers, every, reference):
    """Live mode end to end: one refresh round, then the refresher loop and the API (``python -m app.serve``)."""
    raise SystemExit(run_live(port=port, host=host, workers=workers, every=every, reference=reference))


@main.command("record")
@click.argument("directory", type=click.Path(file_okay=False))
def record_command(directory):
    """Fetch every configured source once and save each answer raw in DIRECTORY (+ manifest.json)."""
    from .recording import RecordingError, record_live, summary_line

    try:
        manifest, failed = record_live(directory)
    except RecordingError as exc:
        raise click.ClickException(str(exc)) from None
    for name, message in failed.items():
        click.echo(f"  {name:<8} FAILED  {message}", err=True)
    if not failed:
        click.echo(summary_line(directory, manifest))
    raise SystemExit(1 if failed else 0)


@main.command("replay")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out", required=True, type=click.Path(file_okay=False), help="snapshot directory to (re)place"
)
@REFERENCE
def replay_command(directory, out, reference):
    """Build a snapshot offline from a recording (answers as of its recordedAt)."""
    from .recording import RecordingError, replay
    from .settings import SourceSettings

    settings = SourceSettings.from_mapping({})
    try:
        manifest = replay(directory, out, reference or settings.reference_dir, base=settings)
    except (RecordingError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"replayed {directory} into {out}: snapshot {manifest['snapshotId'][:16]}… asOf {manifest['asOf']}"
    )
    for source, reasons in (manifest.get("skipped") or {}).items():
        for reason, n in reasons.items():
            click.echo(f"  skipped {source} {reason}: {n}")


if __name__ == "__main__":
    main(prog_name="python -m app.sources")
