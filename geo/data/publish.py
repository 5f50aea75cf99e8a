"""Publishing a snapshot: write it aside, prove the engine loads it, move it into place atomically.

This module sits above both :mod:`geo.data.snapshot` (files: write, read, check) and
:mod:`geo.data.engine` (a snapshot's layers and indexes): :func:`verify_loadable` loads a full engine, and
nothing is published that the API workers could not load. Keeping it here leaves the two below free of each
other (``engine`` reads a snapshot; ``snapshot`` knows no engine).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from ..errors import GeoError, SnapshotError
from .engine import Engine
from .snapshot import DEFAULT_SEED, DEMO_AS_OF, build_layers, staging_dir, write_snapshot


def build_snapshot(
    out_dir,
    reference_dir,
    *,
    as_of=DEMO_AS_OF,
    raw: dict | None = None,
    seed: int = DEFAULT_SEED,
    retrieved_at: dict | None = None,
) -> dict:
    """Build a snapshot and publish it atomically at ``out_dir``; returns the manifest.

    Examples
    --------
    >>> manifest = build_snapshot("data/snapshot", "../shared/data")  # doctest: +SKIP
    >>> manifest["layers"]["works"]["kind"]  # doctest: +SKIP
    'demo'
    """
    layers, metas = build_layers(reference_dir, as_of=as_of, raw=raw, seed=seed, retrieved_at=retrieved_at)
    return write_and_publish(layers, metas, as_of, out_dir)


def write_and_publish(layers: dict, metas: dict, as_of, out_dir) -> dict:
    """:func:`write_snapshot` into a staging directory beside ``out_dir``, then :func:`publish` it there."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = staging_dir(out)
    try:
        manifest = write_snapshot(layers, metas, as_of, tmp)
        publish(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def publish(tmp_dir, out_dir) -> Path:
    """Move the complete snapshot ``tmp_dir`` to ``out_dir``, replacing any previous snapshot.

    Each step is a ``rename`` on one filesystem: a new ``out_dir`` appears complete or not at all. When a
    previous snapshot exists it is first renamed aside (``<out>.old-…``), then removed; a reader that opens
    ``out_dir`` in that instant gets a ``SnapshotError`` and may retry.
    """
    tmp, out = Path(tmp_dir), Path(out_dir)
    verify_loadable(tmp)  # never publish something the engine cannot load
    old = None
    if out.exists() or out.is_symlink():
        old = out.parent / f"{out.name}.old-{uuid.uuid4().hex[:12]}"
        os.rename(out, old)
    os.rename(tmp, out)
    if old is not None:
        if old.is_symlink() or old.is_file():
            old.unlink()
        else:
            shutil.rmtree(old, ignore_errors=True)
    return out


def verify_loadable(path):
    """Load a full ``geo.Engine`` from the snapshot at ``path``, or raise ``SnapshotError`` saying why.

    ``read_snapshot`` checks files, hashes and schemas; the engine also checks every coordinate and builds
    its indexes. A builder or refresher calls this before it publishes, so a snapshot that would stop the
    API workers is never switched in. Returns the engine.

    Examples
    --------
    >>> verify_loadable("/nonexistent")
    Traceback (most recent call last):
    ...
    geo.errors.SnapshotError: snapshot directory /nonexistent does not exist; rebuild it: ...
    """
    try:
        return Engine.load(path)
    except SnapshotError:
        raise
    except (GeoError, ValueError, TypeError) as exc:
        raise SnapshotError(
            f"snapshot {path} does not load into the engine ({type(exc).__name__}: {exc}); "
            f"it was not published"
        ) from None
