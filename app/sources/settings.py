"""Source settings: every knob with its default, read from the Flask config or ``URBAN_*`` environment.

Each value is looked up as ``config[KEY]``, then ``config[KEY without "URBAN_"]`` (the platform's convention:
``URBAN_X`` in the environment becomes ``config["X"]``), then ``os.environ[KEY]``, then the default below. Dict-valued
settings (``URBAN_CACHE_EXPIRY``, ``URBAN_FRESHNESS``) accept a dict in the config or ``layer=seconds,...``
text in the environment, and override only the entries they name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from geo.data.layers import FRESHNESS_S

from .catalog import SOURCES


# Flanders + Brussels bounding box (lon/lat) used for GIPOD bbox paging.
DEFAULT_BBOX = (2.54, 50.67, 5.92, 51.51)


def _default_expiry() -> dict[str, int]:
    return {f"{s.name}.{kind}": sec for s in SOURCES.values() for kind, sec in s.expiry.items()}


@dataclass(frozen=True)
class SourceSettings:
    """Resolved settings of the source layer (see the module docstring for the lookup order)."""

    gipod_url: str = SOURCES["gipod"].default_url
    delijn_url: str = SOURCES["delijn"].default_url
    delijn_key: str = ""
    ircel_url: str = SOURCES["ircel"].default_url
    lez_url: str = SOURCES["lez"].default_url
    boundary_url: str = SOURCES["boundary"].default_url
    delijn_entity: int = 1
    gipod_bbox: tuple[float, float, float, float] = DEFAULT_BBOX
    gipod_page_size: int = 1000
    gipod_max_pages: int = 200
    ircel_hours: int = 48
    skip_share: float = 0.2
    skip_min: int = 10
    http_cache: str = ""
    redis_url: str = ""
    connect_timeout: float = 3.05
    read_timeout: float = 20.0
    budget: float = 60.0
    attempts: int = 3
    backoff: float = 0.5
    max_bytes: int = 64 * 1024 * 1024
    breaker_failures: int = 5
    breaker_cooldown: float = 60.0
    cache_expiry: dict[str, int] = field(default_factory=_default_expiry)
    freshness: dict[str, int] = field(default_factory=lambda: dict(FRESHNESS_S))
    reload_interval: float = 5.0
    reference_dir: str = "../shared/data"
    keep_versions: int = 3

    @classmethod
    def from_mapping(
        cls, config: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None, **overrides
    ) -> "SourceSettings":
        """Resolve every setting from ``config`` (e.g. ``app.config``), then ``environ``, then defaults.

        Examples
        --------
        >>> SourceSettings.from_mapping({"URBAN_HTTP_ATTEMPTS": "2"}, {}).attempts
        2
        """
        config = config or {}
        environ = os.environ if environ is None else environ
        base = cls()
        values: dict[str, Any] = {}
        for f in fields(cls):
            key = _KEYS[f.name]
            raw = config.get(key)
            if raw is None:
                raw = config.get(key[len("URBAN_") :])
            if raw is None:
                raw = environ.get(key)
            if raw is None or raw == "":
                continue
            default = getattr(base, f.name)
            values[f.name] = _coerce(key, raw, default)
        values.update(overrides)
        return cls(**values)

    def expiry(self, source: str, kind: str) -> int:
        """Cache expiry in seconds for one kind of request of one source."""
        return int(self.cache_expiry[f"{source}.{kind}"])


_KEYS = {
    "gipod_url": "URBAN_GIPOD_URL",
    "delijn_url": "URBAN_DELIJN_URL",
    "delijn_key": "URBAN_DELIJN_KEY",
    "ircel_url": "URBAN_IRCEL_URL",
    "lez_url": "URBAN_LEZ_URL",
    "boundary_url": "URBAN_BOUNDARY_URL",
    "delijn_entity": "URBAN_DELIJN_ENTITY",
    "gipod_bbox": "URBAN_GIPOD_BBOX",
    "gipod_page_size": "URBAN_GIPOD_PAGE_SIZE",
    "gipod_max_pages": "URBAN_GIPOD_MAX_PAGES",
    "ircel_hours": "URBAN_IRCEL_HOURS",
    "skip_share": "URBAN_SKIP_SHARE",
    "skip_min": "URBAN_SKIP_MIN",
    "http_cache": "URBAN_HTTP_CACHE",
    "redis_url": "URBAN_REDIS_URL",
    "connect_timeout": "URBAN_HTTP_CONNECT_TIMEOUT",
    "read_timeout": "URBAN_HTTP_READ_TIMEOUT",
    "budget": "URBAN_HTTP_BUDGET",
    "attempts": "URBAN_HTTP_ATTEMPTS",
    "backoff": "URBAN_HTTP_BACKOFF",
    "max_bytes": "URBAN_HTTP_MAX_BYTES",
    "breaker_failures": "URBAN_BREAKER_FAILURES",
    "breaker_cooldown": "URBAN_BREAKER_COOLDOWN",
    "cache_expiry": "URBAN_CACHE_EXPIRY",
    "freshness": "URBAN_FRESHNESS",
    "reload_interval": "URBAN_RELOAD_INTERVAL",
    "reference_dir": "URBAN_REFERENCE_DIR",
    "keep_versions": "URBAN_KEEP_SNAPSHOTS",
}


def _coerce(key: str, raw: Any, default: Any) -> Any:
    """Convert a config/env value to the type of its default; a bad value names the setting."""
    try:
        if isinstance(default, dict):
            items = (
                raw.items()
                if isinstance(raw, Mapping)
                else (part.split("=", 1) for part in str(raw).split(",") if part.strip())
            )
            merged = dict(default)
            for name, value in items:
                name = str(name).strip()
                if name not in default:
                    raise ValueError(f"unknown entry {name!r} (known: {', '.join(sorted(default))})")
                merged[name] = int(float(value))
            return merged
        if isinstance(default, tuple):
            parts = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
            out = tuple(float(p) for p in parts)
            if len(out) != len(default):
                raise ValueError(f"expected {len(default)} comma-separated numbers")
            return out
        if isinstance(default, bool):
            return str(raw).lower() in ("1", "true", "yes", "on")
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        return str(raw).rstrip("/") if key.endswith("_URL") else str(raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"setting {key}={raw!r} is invalid: {exc}") from None
