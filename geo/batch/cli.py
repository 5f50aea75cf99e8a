"""``urban-score INPUT -o OUTPUT``: score a file of coordinates in chunks, on one process, local worker
processes or a Dask cluster. A thin layer over :func:`geo.batch.score.score`; see docs/scoring.md."""

from __future__ import annotations

import copy
import os
import sys
import time
from collections import Counter, deque
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import click

from .errors import InputError

HISTORY_KEY = "history:"  # what the runner keys an --as-of engine by (no snapshot directory to load)


def _parse_now(value, engine):
    if value is None:
        if engine.as_of is None:
            raise click.BadParameter("the snapshot has no asOf: give --now", param_hint="--now")
        return engine.as_of
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not an ISO 8601 date-time (e.g. 2026-11-16T07:00:00Z)", param_hint="--now"
        ) from None
    return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)


def _parse_instant(value) -> datetime:
    """``--as-of``: an ISO 8601 / RFC 3339 date-time with its offset (a local time without one is ambiguous)."""
    try:
        ts = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        ts = None
    if ts is None or ts.tzinfo is None:
        what = "has no offset" if ts is not None else "is not an ISO 8601 instant"
        raise click.BadParameter(
            f"{value!r} {what}: give date, time and offset, e.g. 2026-11-16T07:00:00Z or "
            "2026-11-16T08:00:00+01:00",
            param_hint="--as-of",
        )
    return ts.astimezone(timezone.utc)


class _Runner:
    """Scores chunks in order: in this process, in a local process pool, or on a Dask client."""

    def __init__(self, data, engine, now, workers, dask, slot_rows=0):
        # a rebuilt snapshot (--as-of) has no directory: its forked workers find it under its own key
        key = data if str(data).startswith(HISTORY_KEY) else str(Path(data).resolve())
        self.data, self.engine, self.now_iso = key, engine, now.isoformat()
        self.window = 1
        self._pool = self._client = self._cluster = self._slots = None
        if dask:
            from .dask import connect, register_engine

            try:
                self._client, self._cluster = connect(dask, workers)
            except OSError as exc:  # unreachable scheduler: the user's input, not a crash
                raise InputError(f"--dask {dask}: cannot reach the scheduler: {exc}") from None
            register_engine(self._client, self.data)
            self.window = 2 * max(1, len(self._client.scheduler_info().get("workers", {})) or 1)
            self.where = f"Dask {self._client.scheduler.address}"
        elif workers > 1:
            from .workers import local_pool, start_method

            self.window = 2 * workers
            if slot_rows and start_method() == "fork":
                from .pipe import DEPTH
                from .slots import Slots

                # held from submit until written: the window, the write queue, one being put, one being written
                self._slots = Slots(self.window + DEPTH + 2, slot_rows)
            self._pool = local_pool(workers, self.data, engine, now, self._slots)
            self.where = f"{workers} local processes"
        else:
            self.where = "1 process"

    def call(self, fn, *args):
        """``fn(*args)`` where the runner runs things: a future with ``result()``."""
        if self._client is not None:
            return self._client.submit(fn, *args, pure=False)
        if self._pool is not None:
            return self._pool.submit(fn, *args)
        return _Done(fn(*args))

    def submit(self, chunk, pairs=False):
        """Score one chunk (its pairs with ``pairs``): a future of the Arrow table."""
        from . import workers as score_worker

        if self._client is None and self._pool is None:  # this process: the engine at hand
            clock = datetime.fromisoformat(self.now_iso)
            if pairs:
                from .pair_rows import pairs_table

                return _Done(pairs_table(self.engine, chunk.lat, chunk.lng, clock, chunk.first_row - 1))
            from .io import score_arrow

            return _Done(score_arrow((chunk.lat, chunk.lng), self.engine, clock))
        slots = self._slots
        if slots is not None and not pairs and slots.fits(chunk.lat.size):
            slot = slots.take()
            try:
                slots.put_input(slot, chunk.lat, chunk.lng)
                # the chunk keeps the slot's copy (given back after its rows are written), not its own
                chunk.lat, chunk.lng = slots.inputs(slot, chunk.lat.size)
                fut = self._pool.submit(
                    score_worker.score_slot,
                    self.data,
                    self.engine.snapshot_id,
                    slot,
                    chunk.lat.size,
                    self.now_iso,
                )
            except BaseException:
                slots.give(slot)
                raise
            return _InSlot(fut, slots, slot)
        args = (self.data, self.engine.snapshot_id, chunk.lat, chunk.lng, self.now_iso)
        if pairs:
            return self.call(score_worker.pairs_arrays, *args, chunk.first_row - 1)
        return self.call(score_worker.score_arrays, *args)

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()


class _Done:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value

    def release(self):
        """Nothing to give back once the chunk is written."""


class _InSlot:
    """A chunk scored in a shared slot (geo.batch.slots): the table is read in place, the slot given back
    by :meth:`release` once the chunk is written."""

    def __init__(self, future, slots, slot):
        self.future, self.slots, self.slot = future, slots, slot

    def result(self):
        import pyarrow as pa

        got = self.future.result()
        return got if isinstance(got, pa.Table) else self.slots.table(self.slot, got)

    def release(self):
        if self.slot is not None:
            self.slots.give(self.slot)
            self.slot = None


def _nothing():
    pass


class _NoProgress:
    """The progress bar's interface when it is off (rich not even imported)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add_task(self, *args, **kwargs):
        return 0

    def update(self, *args, **kwargs):
        pass


def _progress(enabled, total, unit):
    if not enabled:
        return _NoProgress(), None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    columns = [
        TextColumn("scoring"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rows]:,} rows  {task.fields[rate]:,.0f} rows/s"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    ]
    if unit == "rows":
        columns.insert(3, MofNCompleteColumn())
    return Progress(*columns, console=console, transient=False), console


def run(
    input_path,
    output,
    *,
    lat="lat",
    lng="lng",
    data="data/snapshot",
    now=None,
    chunk_size=250_000,
    workers=1,
    dask=None,
    progress=True,
    engine=None,
    pairs=False,
    as_of=None,
    history=None,
    engine_at=None,
):
    """Score ``input_path`` into ``output``; returns the summary dict (used by the CLI and tests).

    ``engine`` (optional) is an already loaded engine of the snapshot at ``data`` (workers load their own).
    ``pairs``: write the long table of (input row, work / detour id, distance) pairs instead
    (:mod:`geo.batch.pair_rows`). Reading, scoring and writing overlap (:mod:`geo.batch.pipe`).
    ``as_of`` (aware datetime or RFC 3339 text): score against the snapshot served then, with the clock at
    that instant unless ``now`` is given; ``engine_at(instant, history, data)`` gives that snapshot's engine
    (``geo`` reads no history store: the ``urban-score`` entry point passes the app's reader,
    ``app.history.scoring.engine_at``, which takes ``history`` as the store's URL) and raises
    :class:`~geo.batch.io.InputError` for an instant it cannot answer.

    Examples
    --------
    >>> run("points.csv", "scores.parquet", data="data/snapshot")  # doctest: +SKIP
    {'rows': 1000, 'ok': 998, ...}
    """
    from ..data.engine import Engine
    from .io import file_format, open_reader, open_writer
    from .pipe import ReadAhead, WriteBehind
    from .slots import IN_ROWS_FACTOR

    if as_of is not None:
        engine, data, now, as_of = _as_of(as_of, history, data, now, workers, dask, engine_at)
    if Path(input_path).is_dir():
        return _run_dataset(
            input_path,
            output,
            lat=lat,
            lng=lng,
            data=data,
            now=now,
            chunk_size=chunk_size,
            workers=workers,
            dask=dask,
            progress=progress,
            engine=engine,
            pairs=pairs,
            as_of=as_of,
        )
    file_format(output)
    if Path(input_path).resolve() == Path(output).resolve():
        raise InputError(f"{output}: the output must not be the input file")
    # the engine and clock first: a failure after Arrow's CSV reader started its threads must still close it
    engine = engine if engine is not None else Engine.load(data)
    now = _parse_now(now, engine) if not isinstance(now, datetime) else now
    # local workers are forked before the reader starts Arrow's threads (geo.batch.workers.local_pool)
    local = workers > 1 and not dask
    runner = _Runner(data, engine, now, workers, None, IN_ROWS_FACTOR * chunk_size) if local else None
    try:
        reader = open_reader(input_path, lat, lng, chunk_size)
    except BaseException:
        if runner is not None:
            runner.close()
        raise
    try:
        writer = open_writer(output, pairs=pairs)
        runner = runner or _Runner(data, engine, now, workers, dask)
    except BaseException:
        reader.close()
        if runner is not None:
            runner.close()
        raise
    counts, risks, kinds, tally = Counter(), Counter(), Counter(), {"rows": 0}
    bar, console = _progress(progress, reader.total, reader.unit)
    t0 = time.perf_counter()

    def write(chunk, scores, release):
        try:
            writer.write(chunk, scores)
        finally:
            release()

    chunks = ReadAhead(reader)
    behind = WriteBehind(write)
    try:
        with bar:
            task = bar.add_task("score", total=reader.total or None, rows=0, rate=0.0)
            pending = deque()

            def drain(limit):
                while len(pending) > limit:
                    chunk, fut = pending.popleft()
                    scores = fut.result()
                    behind.put(chunk, scores, getattr(fut, "release", _nothing))
                    tally["rows"] += chunk.lat.size
                    if pairs:
                        kinds.update(_value_counts(scores, "kind"))
                    else:
                        counts.update(_value_counts(scores, "status"))
                        risks.update(_value_counts(scores, "risk"))
                    elapsed = time.perf_counter() - t0
                    bar.update(
                        task,
                        completed=chunk.progress,
                        rows=tally["rows"],
                        rate=tally["rows"] / elapsed if elapsed else 0,
                    )

            for chunk in chunks:
                pending.append((chunk, runner.submit(chunk, pairs)))
                drain(runner.window - 1)
            drain(0)
            behind.finish()
        writer.close()
    except BaseException:
        behind.close()
        writer.abort()
        raise
    finally:
        chunks.close()
        reader.close()
        runner.close()
    return _summary(
        tally["rows"],
        counts,
        risks,
        kinds,
        pairs,
        time.perf_counter() - t0,
        output,
        engine,
        now,
        runner.where,
        as_of,
    )


def _as_of(as_of, history, data, now, workers, dask, engine_at):
    """``(engine, runner key, clock, instant)`` of an ``--as-of`` run (``engine_at``: see :func:`run`)."""
    from .workers import start_method

    instant = _parse_instant(as_of) if isinstance(as_of, str) else as_of.astimezone(timezone.utc)
    if dask or (workers > 1 and start_method() != "fork"):
        raise InputError(
            "--as-of scores in this process or in local worker processes forked from it (Linux): "
            "the snapshot is rebuilt from the history store, there is no directory for "
            + ("a Dask cluster" if dask else "spawned workers")
            + " to load"
        )
    if engine_at is None:
        raise InputError(
            "--as-of needs the history store, which geo alone does not read: run the urban-score command "
            "(or pass run(..., engine_at=app.history.scoring.engine_at))"
        )
    engine = engine_at(instant, history, data)
    clock = _parse_now(now, engine) if isinstance(now, str) else (now or instant)
    return engine, f"{HISTORY_KEY}{engine.snapshot_id}", clock, instant


def _run_dataset(
    input_path, output, *, lat, lng, data, now, chunk_size, workers, dask, progress, engine, pairs, as_of=None
):
    """A directory of Parquet files into a directory of parts, one task per file (geo.batch.dataset)."""
    from ..data.engine import Engine
    from .dataset import dataset_files, row_offsets, run_dataset

    if Path(input_path).resolve() == Path(output).resolve():
        raise InputError(f"{output}: the output must not be the input directory")
    files = dataset_files(input_path)
    total_rows = row_offsets(files)[-1]
    engine = engine if engine is not None else Engine.load(data)
    now = _parse_now(now, engine) if not isinstance(now, datetime) else now
    runner = _Runner(data, engine, now, workers, dask)
    bar, _ = _progress(progress, total_rows, "rows")
    t0 = time.perf_counter()
    done = [0]
    try:
        with bar:
            task = bar.add_task("score", total=total_rows or None, rows=0, rate=0.0)

            def on_done(rows):
                done[0] += rows
                elapsed = time.perf_counter() - t0
                bar.update(task, completed=done[0], rows=done[0], rate=done[0] / elapsed if elapsed else 0)

            got = run_dataset(
                input_path,
                output,
                runner.call,
                data=runner.data,
                snapshot_id=engine.snapshot_id,
                now_iso=runner.now_iso,
                lat=lat,
                lng=lng,
                pairs=pairs,
                chunk_rows=chunk_size,
                on_done=on_done,
            )
    finally:
        runner.close()
    return _summary(
        got["rows"],
        got["status"],
        got["risk"],
        got["kind"],
        pairs,
        time.perf_counter() - t0,
        output,
        engine,
        now,
        f"{runner.where}, {len(files)} part(s)",
        as_of,
    )


def _summary(rows, counts, risks, kinds, pairs, elapsed, output, engine, now, where, as_of=None) -> dict:
    summary = {
        "rows": rows,
        "seconds": round(elapsed, 3),
        "rows_per_second": round(rows / elapsed) if elapsed else None,
        "output": str(output),
        "snapshot": engine.snapshot_id,
        "now": now.isoformat(),
        "ran_on": where,
    }
    if as_of is not None:  # the instant asked, and the asOf of the snapshot that was served then
        summary["as_of"] = as_of.isoformat()
        summary["snapshot_as_of"] = engine.as_of.isoformat() if engine.as_of else None
    if pairs:
        summary["pairs"] = {"work": kinds.get("work", 0), "detour": kinds.get("detour", 0)}
        return summary
    return {
        **summary,
        "ok": counts.get("ok", 0),
        "outside_service_area": counts.get("outside_service_area", 0),
        "invalid_coordinates": counts.get("invalid_coordinates", 0),
        "risk": {k: risks.get(k, 0) for k in ("low", "moderate", "high")},
    }


def _value_counts(table, column) -> Counter:
    """Non-null value -> rows; a dictionary column is counted by its codes (no text hashed per row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: Counter = Counter()
    for chunk in table.column(column).chunks:
        coded = pa.types.is_dictionary(chunk.type)
        names = chunk.dictionary.to_pylist() if coded else None
        for item in pc.value_counts(chunk.indices if coded else chunk).to_pylist():
            value = item["values"]
            if value is not None:
                out[names[value] if names is not None else value] += item["counts"]
    return out


def _summary_text(s) -> str:
    head = (
        f"{s['rows']:,} rows scored in {s['seconds']:.1f} s ({s['rows_per_second'] or 0:,} rows/s, "
        f"{s['ran_on']}) -> {s['output']}\n"
    )
    tail = f"  snapshot {s['snapshot'][:12]}   clock {s['now']}"
    if "as_of" in s:
        tail += f"\n  as of {s['as_of']}: the snapshot served then (its asOf {s['snapshot_as_of']})"
    if "pairs" in s:
        p = s["pairs"]
        return head + f"  pairs: works {p['work']:,}   detours {p['detour']:,}\n" + tail
    r = s["risk"]
    return (
        head + f"  ok {s['ok']:,}   outside service area {s['outside_service_area']:,}   "
        f"invalid coordinates {s['invalid_coordinates']:,}\n"
        f"  risk: low {r['low']:,}   moderate {r['moderate']:,}   high {r['high']:,}\n" + tail
    )


def missing_snapshot(data, source: str = "DEFAULT", environ=None) -> str | None:
    """What to pass when ``data`` is not a snapshot directory at all (``None`` when it may be one): the
    usual case outside the repository, where the default ``data/snapshot`` does not exist.

    Examples
    --------
    >>> print(missing_snapshot("/nonexistent", "COMMANDLINE"))  # doctest: +ELLIPSIS
    no snapshot at /nonexistent (given with --data): ...
    """
    env = os.environ if environ is None else environ
    path = Path(data)
    if (path / "manifest.json").is_file() or (path.is_dir() and any(path.iterdir())):
        return None  # a snapshot, or something the snapshot reader explains precisely
    if source == "COMMANDLINE":
        origin = "given with --data"
    elif env.get("URBAN_DATA_DIR"):
        origin = "from the environment variable URBAN_DATA_DIR"
    else:
        origin = f"the default, relative to the current directory {Path.cwd()}"
    state = "is empty" if path.is_dir() else "does not exist" if not path.exists() else "is not a directory"
    return (
        f"no snapshot at {data} ({origin}): it {state}. Pass the snapshot directory with --data DIR "
        "(or set URBAN_DATA_DIR), e.g. --data ~/urban-conditions/data/snapshot; in the repository "
        "`make snapshot` builds data/snapshot."
    )


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("input_path", metavar="INPUT", type=click.Path())
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(),
    help="Output file: .csv, .parquet, .geo.parquet / .geoparquet (GeoParquet) or .geojson; "
    "a directory of Parquet parts when INPUT is a directory of Parquet files.",
)
@click.option("--lat", "lat", default="lat", show_default=True, help="Latitude column of the input.")
@click.option("--lng", "lng", default="lng", show_default=True, help="Longitude column of the input.")
@click.option(
    "--data",
    default=lambda: os.environ.get("URBAN_DATA_DIR", "data/snapshot"),
    show_default="$URBAN_DATA_DIR or data/snapshot",
    type=click.Path(file_okay=False),
    help="Snapshot directory.",
)
@click.option(
    "--now",
    default=None,
    help="Clock as ISO 8601 (default: the snapshot's asOf, as the API's demo clock). Without an offset, UTC.",
)
@click.option(
    "--as-of",
    "as_of",
    default=None,
    metavar="INSTANT",
    help="Score against the snapshot that was being served at INSTANT (ISO 8601 with offset, e.g. "
    "2026-11-01T08:00:00+01:00), rebuilt from the history store; the clock is INSTANT unless --now is given.",
)
@click.option(
    "--history",
    default=None,
    metavar="URL",
    help="History store for --as-of (default: $URBAN_HISTORY_URL, else DATA.history.sqlite beside --data).",
)
@click.option(
    "--chunk-size",
    default=250_000,
    show_default=True,
    type=click.IntRange(1, 10_000_000),
    help="Rows per chunk (memory is bounded by a few chunks).",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Local worker processes (each loads the engine once).",
)
@click.option(
    "--dask",
    default=None,
    metavar="ADDRESS|local",
    help="Score on a Dask distributed cluster (scheduler address, or 'local' for a LocalCluster "
    "with --workers workers).",
)
@click.option(
    "--pairs",
    is_flag=True,
    help="Write the long table instead: one row per (input row, listed work or detour) with "
    "its distance (.csv or .parquet).",
)
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal)."
)
def main(
    input_path,
    output,
    lat,
    lng,
    data,
    now,
    as_of,
    history,
    chunk_size,
    workers,
    dask,
    pairs,
    progress,
    engine_at=None,
):
    """Score every coordinate of INPUT (CSV, Parquet, GeoParquet or GeoJSON) into OUTPUT.

    One output row per input row, in input order: the input columns followed by the score columns
    (status, LEZ, river side, nearest NO2 station, NO2 value and trend, works, transit, risk).
    A CSV may be separated by commas, semicolons or tabs (found from the header row); with semicolons,
    coordinates may use a decimal comma (51,2194), as Excel writes them in Belgium.
    """
    from ..errors import SnapshotError
    from .workers import keep_heap_if_pinned, map_large_blocks

    if history and as_of is None:
        raise click.UsageError("--history is read only with --as-of")
    problem = as_of is None and missing_snapshot(
        data, click.get_current_context().get_parameter_source("data").name
    )
    if problem:  # with --as-of the snapshot is rebuilt from the history store
        raise click.ClickException(problem)

    keep_heap_if_pinned()  # e.g. run from a notebook that started a Dask LocalCluster
    if not dask:
        map_large_blocks()  # this process reads and writes (and scores, without workers)
    if progress is None:
        progress = sys.stderr.isatty()
    try:
        summary = run(
            input_path,
            output,
            lat=lat,
            lng=lng,
            data=data,
            now=now,
            chunk_size=chunk_size,
            workers=workers,
            dask=dask,
            progress=progress,
            pairs=pairs,
            as_of=as_of,
            history=history,
            engine_at=engine_at,
        )
    except (InputError, SnapshotError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(_summary_text(summary), err=True)


def command(engine_at) -> click.Command:
    """The ``urban-score`` command with ``--as-of`` answered by ``engine_at(instant, history, data)`` (see
    :func:`run`); ``main`` alone refuses ``--as-of``. The installed ``urban-score`` is
    ``command(app.history.scoring.engine_at)`` (``urban_score.py``): ``geo`` never imports the app."""
    callback = main.callback
    assert callback is not None
    wired = copy.copy(main)
    wired.callback = partial(callback, engine_at=engine_at)
    return wired


if __name__ == "__main__":  # pragma: no cover
    main()
