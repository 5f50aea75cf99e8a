"""Build a new snapshot from the live sources and switch it in atomically; keep the last good one on failure.

One round: every adapter fetches (through the injected ``Upstream``); the payloads go to
``geo.data.snapshot.build_layers``; the new version is written aside, verified by loading a full ``geo.Engine``
from it (``geo.data.publish.verify_loadable``) and switched in with ``store.switch``; a version that does not
load is removed and nothing is published. A source that fails keeps its layers from the serving snapshot
(kind ``live``, with their original ``retrievedAt``, so the freshness limit catches a source that keeps
failing). When a failed source has no earlier live layers to keep (its layers would otherwise become demo
data), or every source failed, nothing is published and the serving snapshot stays exactly as it was.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from app.history.recorder import record_published
from geo.errors import SnapshotError
from geo.data.publish import verify_loadable
from geo.data.snapshot import DEFAULT_SEED, build_layers, read_snapshot, tables_read, write_snapshot

from . import boundary, delijn, gipod, ircel, lez, store
from .catalog import SOURCES
from .errors import UpstreamError
from .http import Upstream
from .payload import SourceData
from .settings import SourceSettings

log = logging.getLogger("app.sources.refresher")

ADAPTERS: dict[str, Callable[..., SourceData]] = {
    "gipod": gipod.fetch,
    "delijn": delijn.fetch,
    "ircel": ircel.fetch,
    "lez": lez.fetch,
    "boundary": boundary.fetch,
}

#: optional sources, asked only when configured (else their layers come from the reference files)
OPTIONAL = {"boundary": boundary.enabled}

#: sources whose layers may fall back to the published reference files when never fetched live
REFERENCE_FALLBACK = {"lez", "boundary"}


@dataclass
class RefreshReport:
    """Outcome of one refresh round."""

    published: bool
    path: Path | None = None
    snapshot_id: str | None = None
    as_of: str | None = None
    fetched: dict[str, SourceData] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)  # layers carried over from the serving snapshot
    reason: str = ""

    def lines(self) -> list[str]:
        """Human-readable summary (one line per source, then the outcome)."""
        out = [
            f"  {name:<7} ok      {d.requests} requests ({d.from_cache} from cache)"
            for name, d in self.fetched.items()
        ]
        out += [f"  {name:<7} FAILED  {msg}" for name, msg in self.failed.items()]
        if self.published and self.snapshot_id is not None:
            out.append(
                f"published snapshot {self.snapshot_id[:16]}… asOf {self.as_of} at {self.path}"
                + (f" (kept from the previous snapshot: {', '.join(self.kept)})" if self.kept else "")
            )
        else:
            out.append(f"nothing published, the serving snapshot is unchanged: {self.reason}")
        return out


def refresh(
    data_dir,
    reference_dir,
    upstream: Upstream,
    settings: SourceSettings,
    *,
    now: datetime | None = None,
    seed: int = DEFAULT_SEED,
    sources: dict[str, Callable[..., SourceData]] | None = None,
) -> RefreshReport:
    """Run one refresh round (see the module docstring); never raises for an upstream failure.

    Examples
    --------
    >>> report = refresh("data/snapshot", "../shared/data", upstream, settings)   # doctest: +SKIP
    >>> report.published, sorted(report.fetched)                                  # doctest: +SKIP
    (True, ['delijn', 'gipod', 'ircel', 'lez'])
    """
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    data_dir = Path(data_dir)
    if (data_dir / "manifest.json").is_file():
        # catch up a live publish a crash or an unreachable store left unrecorded
        record_published(data_dir, settings.history_url, live_only=True)
    report = RefreshReport(published=False)
    for name, fetch in (sources or ADAPTERS).items():
        if name in OPTIONAL and not OPTIONAL[name](settings):
            continue
        try:
            report.fetched[name] = fetch(upstream, settings, now)
        except UpstreamError as exc:
            report.failed[name] = str(exc)
            log.warning("refresh: %s failed: %s", name, exc)
    if not report.fetched:
        report.reason = "every source failed"
        return report

    current_layers, current_manifest = _serving(data_dir) if report.failed else (None, None)
    kept: dict[str, tuple] = {}
    for name in report.failed:
        layers = SOURCES[name].layers
        entries = [(current_manifest or {}).get("layers", {}).get(layer) or {} for layer in layers]
        if current_layers is not None and all(e.get("kind") == "live" for e in entries):
            for layer, entry in zip(layers, entries):
                kept[layer] = (current_layers[layer], entry)
        elif name not in REFERENCE_FALLBACK:
            report.reason = (
                f"{name} failed and the serving snapshot has no live {'/'.join(layers)} to keep "
                f"(a live snapshot never mixes in demo data)"
            )
            return report

    raw, retrieved = {}, {}
    for data in report.fetched.values():
        raw.update(data.raw)
        retrieved.update({layer: t for layer, t in data.retrieved_at.items()})
    layers, metas = build_layers(
        reference_dir,
        as_of=now,
        raw=raw,
        seed=seed,
        retrieved_at=retrieved,
        keep={layer: frame for layer, (frame, _entry) in kept.items()},
    )
    for layer, (frame, entry) in kept.items():
        layers[layer] = frame
        metas[layer] = {
            k: entry[k] for k in ("kind", "source", "licence", "retrievedAt", "note", "skipped") if k in entry
        }
    report.kept = sorted(kept)

    version = store.new_version_dir(data_dir, now)
    try:
        manifest = write_snapshot(layers, metas, now, version)
        with tables_read() as tables:  # handed to the recorder: it need not parse the files again
            verify_loadable(version)  # a full engine load: never switch to something the workers cannot load
        store.switch(data_dir, version)
    except SnapshotError as exc:
        shutil.rmtree(version, ignore_errors=True)
        report.reason = f"the new snapshot was refused: {exc}"
        log.error("refresh: %s", report.reason)
        return report
    except BaseException:
        shutil.rmtree(version, ignore_errors=True)
        raise
    # after the switch: a failed round records nothing
    record_published(data_dir, settings.history_url, tables=tables)
    store.prune(data_dir, settings.keep_versions)
    report.published, report.path = True, version
    report.snapshot_id, report.as_of = manifest["snapshotId"], manifest["asOf"]
    return report


def _serving(data_dir: Path):
    """(layers, manifest) of the snapshot being served, or (None, None) when there is none usable."""
    try:
        return read_snapshot(data_dir)
    except SnapshotError:
        return None, None
