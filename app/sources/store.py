"""Snapshot versions behind one pointer: ``DATA_DIR`` is a symlink to ``<DATA_DIR>.versions/<version>``.

A refresh writes a complete new version beside the others, verifies it, then switches the symlink with one
``os.replace`` (atomic on POSIX): a reader resolves either the old or the new version, never a mix. Old
versions are pruned, keeping the newest few (a worker that resolved one has already loaded it into memory).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from datetime import datetime
from pathlib import Path

SUFFIX = ".versions"


def versions_dir(data_dir) -> Path:
    """Directory holding the versions of ``data_dir`` (a sibling, on the same filesystem)."""
    data_dir = Path(data_dir)
    return data_dir.parent / f"{data_dir.name}{SUFFIX}"


def new_version_dir(data_dir, as_of: datetime) -> Path:
    """A fresh, not yet existing directory name for a version built at ``as_of``."""
    stamp = as_of.strftime("%Y%m%dT%H%M%S")
    return versions_dir(data_dir) / f"{stamp}-{uuid.uuid4().hex[:8]}"


def switch(data_dir, version: Path) -> None:
    """Point ``data_dir`` at ``version`` atomically.

    A ``data_dir`` that is still a plain directory (built by ``make snapshot``) is first moved into the
    versions directory; during that one rename a reader finds no snapshot and keeps its current engine.
    """
    data_dir, version = Path(data_dir), Path(version)
    vdir = versions_dir(data_dir)
    vdir.mkdir(parents=True, exist_ok=True)
    if data_dir.is_dir() and not data_dir.is_symlink():
        os.rename(data_dir, vdir / f"initial-{uuid.uuid4().hex[:8]}")
    tmp_link = data_dir.parent / f".{data_dir.name}.link-{uuid.uuid4().hex[:8]}"
    os.symlink(os.path.relpath(version, data_dir.parent), tmp_link)
    os.replace(tmp_link, data_dir)


def prune(data_dir, keep: int = 3) -> list[Path]:
    """Remove all but the ``keep`` most recent versions (never the current one); returns what was removed."""
    vdir = versions_dir(data_dir)
    if not vdir.is_dir():
        return []
    current = Path(os.path.realpath(data_dir))
    versions = sorted(
        (p for p in vdir.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True
    )
    removed = []
    for old in versions[max(1, keep) :]:
        if old.resolve() != current:
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
    return removed


def version_token(data_dir) -> tuple[str, str, str]:
    """(resolved directory, snapshotId, asOf) of the snapshot ``data_dir`` points at now.

    Raises ``OSError`` or ``ValueError`` when there is no readable manifest at this instant.
    """
    real = os.path.realpath(data_dir)
    manifest = json.loads(Path(real, "manifest.json").read_text(encoding="utf-8"))
    return real, str(manifest["snapshotId"]), str(manifest["asOf"])
