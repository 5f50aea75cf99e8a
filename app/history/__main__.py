"""``python -m app.history``: record, prune, inspect the history store; seed the demo's history.

python -m app.history record data/snapshot            # record the snapshot being served (idempotent)
python -m app.history prune --days 365                # drop what no instant of the window needs
python -m app.history info data/snapshot              # publishes, rows, blobs, first and last asOf
python -m app.history demo --reference ../shared/data --out data/snapshot --days 31 --fresh
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click

from .recorder import history_url
from .store import open_store


def _data_dir(data_dir) -> str:
    return data_dir or os.environ.get("URBAN_DATA_DIR") or "data/snapshot"


@click.group()
def main():
    """The history store (docs/history.md)."""


@main.command("record")
@click.argument("data_dir", required=False)
@click.option("--url", default=None, help="store URL (default: URBAN_HISTORY_URL, else beside DATA_DIR)")
def record_command(data_dir, url):
    """Record the snapshot DATA_DIR points at."""
    store = open_store(history_url(_data_dir(data_dir), url))
    outcome = store.record_dir(_data_dir(data_dir))
    click.echo(f"publish {outcome.seq}: {'recorded' if outcome.new else outcome.reason}")
    raise SystemExit(0 if outcome.seq is not None else 1)


@main.command("prune")
@click.argument("data_dir", required=False)
@click.option("--url", default=None, help="store URL (default: URBAN_HISTORY_URL, else beside DATA_DIR)")
@click.option(
    "--days",
    type=click.IntRange(min=1),
    default=None,
    help="days to keep (default URBAN_HISTORY_DAYS or 365)",
)
@click.option("--now", "now_text", default=None, help="the current instant (RFC 3339; default: now)")
def prune_command(data_dir, url, days, now_text):
    """Drop the publishes, row versions and blobs no instant of the last DAYS days needs."""
    days = days or int(os.environ.get("URBAN_HISTORY_DAYS") or 365)
    now = datetime.fromisoformat(now_text.replace("Z", "+00:00")) if now_text else datetime.now(UTC)
    store = open_store(history_url(_data_dir(data_dir), url))
    counts = store.prune(now, days)
    click.echo(
        f"pruned {counts['publishes']} publishes, {counts['rows']} row versions, {counts['blobs']} blobs"
    )


@main.command("info")
@click.argument("data_dir", required=False)
@click.option("--url", default=None, help="store URL (default: URBAN_HISTORY_URL, else beside DATA_DIR)")
def info_command(data_dir, url):
    """Publishes, row versions, blobs, and the recorded window."""
    store = open_store(history_url(_data_dir(data_dir), url))
    first, last = store.first_last()
    for table in ("history_publish", "history_row", "history_blob"):
        (n,) = store.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
        click.echo(f"{table:<16} {n}")
    if first and last:
        click.echo(f"recorded from {first.as_of.isoformat()} to {last.as_of.isoformat()} ({store.label})")


@main.command("demo")
@click.option(
    "--reference", default=None, help="reference files (default: URBAN_REFERENCE_DIR or ../shared/data)"
)
@click.option("--out", "out", default=None, help="the demo snapshot directory (default: URBAN_DATA_DIR)")
@click.option("--days", type=click.FloatRange(min=0), default=31.0, show_default=True)
@click.option(
    "--cadence", type=click.IntRange(min=1), default=60, show_default=True, help="minutes between refreshes"
)
@click.option("--fresh/--keep", default=True, show_default=True, help="start the store afresh (demo only)")
@click.option("--url", default=None, help="store URL (default: URBAN_HISTORY_URL, else beside --out)")
def demo_command(reference, out, days, cadence, fresh, url):
    """Record the simulated refreshes of the DAYS before the demo's clock, then the demo snapshot itself."""
    from .simulate import seed_demo

    out = _data_dir(out)
    reference = reference or os.environ.get("URBAN_REFERENCE_DIR") or "../shared/data"
    target = history_url(out, url)
    if fresh and not target.startswith(("postgresql://", "postgres://")):
        for suffix in ("", "-wal", "-shm"):
            Path(target + suffix).unlink(missing_ok=True)
    store = open_store(target)
    n = seed_demo(store, reference, out, days=days, cadence_min=cadence)
    first, last = store.first_last()
    click.echo(
        f"recorded {n} publishes from {first.as_of.isoformat()} to {last.as_of.isoformat()} in {store.label}"
    )


if __name__ == "__main__":
    main()
