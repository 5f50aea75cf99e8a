"""The source layer's settings: its rows of the settings table, declared once on the fields of
:class:`SourceSettings` (the variable ``URBAN_<NAME>``, the default, the meaning), and the typed view the
refresher, the HTTP client and the serving code read.

Every value goes through the one conversion of all settings (:func:`app.config.coerce`) and follows the
one precedence: defaults, then the ``URBAN_*`` environment, then the app's configuration (the instance
file, the test config). All settings are documented in one table, docs/configuration.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from app.config import coerce
from geo.data.layers import FRESHNESS_S

from .catalog import SOURCES

#: Flanders + Brussels bounding box (lon/lat) used for GIPOD bbox paging.
DEFAULT_BBOX = (2.54, 50.67, 5.92, 51.51)


def _default_expiry() -> dict[str, int]:
    return {f"{s.name}.{kind}": sec for s in SOURCES.values() for kind, sec in s.expiry.items()}


def setting(name: str, default: Any, meaning: str = ""):
    """A field that is the setting ``URBAN_<name>`` (``meaning`` empty: a row of app/config.py's table)."""
    if isinstance(default, (dict, list)) or callable(default):
        factory = default if callable(default) else (lambda d=default: type(d)(d))
        return field(default_factory=factory, metadata={"setting": name, "meaning": meaning})
    return field(default=default, metadata={"setting": name, "meaning": meaning})


@dataclass(frozen=True)
class SourceSettings:
    """Resolved settings of the source layer."""

    gipod_url: str = setting("GIPOD_URL", SOURCES["gipod"].default_url, "GIPOD's base URL")
    delijn_url: str = setting("DELIJN_URL", SOURCES["delijn"].default_url, "De Lijn's base URL")
    delijn_key: str = setting("DELIJN_KEY", "", "De Lijn subscription key")
    ircel_url: str = setting("IRCEL_URL", SOURCES["ircel"].default_url, "IRCEL-CELINE's base URL")
    lez_url: str = setting("LEZ_URL", SOURCES["lez"].default_url, "the Antwerp LEZ's URL")
    boundary_url: str = setting("BOUNDARY_URL", SOURCES["boundary"].default_url, "the regions' GeoJSON URL")
    delijn_entity: int = setting("DELIJN_ENTITY", 1, "De Lijn entity whose stops are fetched")
    gipod_bbox: tuple[float, float, float, float] = setting(
        "GIPOD_BBOX", DEFAULT_BBOX, "GIPOD bbox (lon/lat)"
    )
    gipod_page_size: int = setting("GIPOD_PAGE_SIZE", 1000, "GIPOD features per page")
    gipod_max_pages: int = setting("GIPOD_MAX_PAGES", 200, "GIPOD pages at most")
    ircel_hours: int = setting("IRCEL_HOURS", 48, "hours of NO2 values fetched per series")
    ircel_page_size: int = setting("IRCEL_PAGE_SIZE", 500, "IRCEL-CELINE observations per page")
    skip_share: float = setting("SKIP_SHARE", 0.2, "share of skipped records that fails a source")
    skip_min: int = setting("SKIP_MIN", 10, "skipped records at least, for a source to fail")
    http_cache: str = setting("HTTP_CACHE", "", "HTTP cache file")
    redis_url: str = setting("REDIS_URL", "")
    connect_timeout: float = setting("HTTP_CONNECT_TIMEOUT", 3.05, "seconds to connect")
    read_timeout: float = setting("HTTP_READ_TIMEOUT", 20.0, "seconds between bytes")
    budget: float = setting("HTTP_BUDGET", 60.0, "seconds per fetch, retries included")
    attempts: int = setting("HTTP_ATTEMPTS", 3, "attempts per request")
    backoff: float = setting("HTTP_BACKOFF", 0.5, "seconds before the first retry, doubled after")
    max_bytes: int = setting("HTTP_MAX_BYTES", 64 * 1024 * 1024, "response size cap in bytes")
    breaker_failures: int = setting("BREAKER_FAILURES", 5, "failures that open a source's breaker")
    breaker_cooldown: float = setting("BREAKER_COOLDOWN", 60.0, "seconds a breaker stays open")
    cache_expiry: dict[str, int] = setting("CACHE_EXPIRY", _default_expiry, "cache expiry per source.kind")
    freshness: dict[str, int] = setting("FRESHNESS", dict(FRESHNESS_S), "freshness limit per live layer")
    reload_interval: float = setting("RELOAD_INTERVAL", 5.0, "seconds between snapshot checks per worker")
    reference_dir: str = setting("REFERENCE_DIR", "../shared/data", "reference files for the refresher")
    keep_versions: int = setting("KEEP_SNAPSHOTS", 3, "snapshot versions kept beside the pointer")
    history_url: str = setting("HISTORY_URL", "")

    @classmethod
    def from_config(cls, config: Mapping[str, Any], **overrides) -> "SourceSettings":
        """The settings a configuration names (``NAME``, as Flask's config holds them, or ``URBAN_NAME``),
        converted; the others keep their defaults.

        Examples
        --------
        >>> SourceSettings.from_config({"HTTP_ATTEMPTS": "2", "URBAN_FRESHNESS": "no2=60"}).attempts
        2
        """
        base = cls()
        values: dict[str, Any] = {}
        for f in fields(cls):
            name = f.metadata["setting"]
            raw = config.get(name)
            if raw is None:
                raw = config.get("URBAN_" + name)
            if raw is None or raw == "":
                continue
            values[f.name] = coerce(name, raw, getattr(base, f.name))
        values.update(overrides)
        return cls(**values)

    @classmethod
    def from_mapping(
        cls, config: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None, **overrides
    ) -> "SourceSettings":
        """The settings without an app: the ``URBAN_*`` environment, then ``config`` (which wins), then
        ``overrides``.

        Examples
        --------
        >>> SourceSettings.from_mapping({"URBAN_HTTP_ATTEMPTS": "2"}, {}).attempts
        2
        """
        environ = os.environ if environ is None else environ
        merged = {key: raw for key, raw in environ.items() if key.startswith("URBAN_")}
        for key, raw in (config or {}).items():
            merged.pop("URBAN_" + key.removeprefix("URBAN_"), None)
            merged[key] = raw
        return cls.from_config(merged, **overrides)

    def expiry(self, source: str, kind: str) -> int:
        """Cache expiry in seconds for one kind of request of one source."""
        return int(self.cache_expiry[f"{source}.{kind}"])


#: the source layer's rows of the settings table: name -> (default, meaning); ``REDIS_URL`` and
#: ``HISTORY_URL`` are the platform's rows (app/config.py), read here too
SETTINGS: dict[str, tuple[object, str]] = {
    f.metadata["setting"]: (getattr(SourceSettings(), f.name), f.metadata["meaning"])
    for f in fields(SourceSettings)
    if f.metadata["meaning"]
}
