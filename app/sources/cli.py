"""The refresher's two command lines: build snapshots from the live sources, one round or ``--every SECONDS``.

- ``python -m app.sources refresh [--every SECONDS]`` needs no Flask app, no ``SECRET_KEY`` and no snapshot:
  settings come from the ``URBAN_*`` environment (``URBAN_DATA_DIR``, ``URBAN_INSTANCE_PATH`` …). This is the
  form for cron and for ``python -m app.sources live``.
- ``flask --app wsgi snapshot refresh [--every SECONDS]`` does the same from the app's config (it builds the
  app, so it needs what the app needs: ``URBAN_SECRET_KEY`` or ``URBAN_ENV=development``, and
  ``URBAN_LOAD_ENGINE=0`` when there is no snapshot yet).

One shot exits 1 when nothing was published; the loop keeps the same session, cache and breakers.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import click
from flask import current_app
from flask.cli import with_appcontext

from .extension import publish_hooks
from .settings import SourceSettings


def refresh(data_dir, reference, upstream, settings):
    """One round: :func:`app.sources.refresher.refresh`, imported (with the sources' HTTP layer) by the first."""
    from .refresher import refresh as one_round

    return one_round(data_dir, reference, upstream, settings)


def run_rounds(
    data_dir,
    reference,
    settings: SourceSettings,
    cache_path,
    *,
    every: float | None = None,
    rounds: int | None = None,
    echo: Callable[[str], None] = click.echo,
    after_publish: Callable | None = None,
) -> bool:
    """Run refresh rounds; returns whether the last round published. ``after_publish(report)`` runs after
    each round that published (the dashboard's alerts: it must return quickly); its ``close()``, if it has
    one, runs when the rounds end.

    Examples
    --------
    >>> s = SourceSettings.from_mapping()
    >>> run_rounds("data/snapshot", "../shared/data", s, "instance/http_cache.sqlite")  # doctest: +SKIP
    True
    """
    from .http import Upstream, build_session  # requests-cache: only in the process that calls the upstreams

    session = build_session(cache_path, settings)
    upstream = Upstream(session, settings)
    ok, done = True, 0
    try:
        while True:
            started = time.monotonic()
            report = refresh(data_dir, reference, upstream, settings)
            ok = report.published
            for line in report.lines():
                echo(line)
            if ok and after_publish is not None:
                after_publish(report)
            done += 1
            if every is None or (rounds is not None and done >= rounds):
                break
            time.sleep(max(0.0, every - (time.monotonic() - started)))
    except KeyboardInterrupt:
        echo("stopped")
    finally:
        session.close()
        close = getattr(after_publish, "close", None)
        if close is not None:
            close()
    return ok


def default_cache(settings: SourceSettings, instance_path) -> str:
    """``URBAN_HTTP_CACHE``, else ``<instance>/http_cache.sqlite``."""
    return settings.http_cache or os.path.join(instance_path, "http_cache.sqlite")


EVERY = click.option(
    "--every",
    type=click.FloatRange(min=1.0),
    default=None,
    metavar="SECONDS",
    help="repeat: start a new round every SECONDS (default: one round, then exit)",
)
REFERENCE = click.option(
    "--reference",
    type=click.Path(file_okay=False),
    default=None,
    help="directory of the published reference files (default: URBAN_REFERENCE_DIR)",
)
ROUNDS = click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=None,
    hidden=True,
    help="with --every: stop after N rounds (tests)",
)


@click.group("snapshot", help="Data snapshots from the live upstream sources.")
def snapshot_group():
    pass


@snapshot_group.command("refresh")
@EVERY
@REFERENCE
@ROUNDS
@with_appcontext
def refresh_command(every, reference, rounds):
    """Fetch the live sources; publish a new snapshot at DATA_DIR atomically."""
    app = current_app._get_current_object()
    settings = SourceSettings.from_config(app.config)
    ok = run_rounds(
        app.config.get("DATA_DIR", "data/snapshot"),
        reference or settings.reference_dir,
        settings,
        default_cache(settings, app.instance_path),
        every=every,
        rounds=rounds,
        after_publish=publish_hooks(app),
    )
    if not ok:
        raise SystemExit(1)


def standalone_refresh(every, reference, rounds, after_publish: Callable | None = None) -> int:
    """``python -m app.sources refresh``: the same rounds, settings from the environment only."""
    settings = SourceSettings.from_mapping({})
    instance = os.environ.get("URBAN_INSTANCE_PATH") or "instance"
    ok = run_rounds(
        os.environ.get("URBAN_DATA_DIR") or "data/snapshot",
        reference or settings.reference_dir,
        settings,
        default_cache(settings, instance),
        every=every,
        rounds=rounds,
        after_publish=after_publish,
    )
    return 0 if ok else 1
