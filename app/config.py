"""Settings: defaults here → instance file (``instance/config.py``) → ``URBAN_*`` environment variables.

Every setting is documented in ``docs/configuration.md``; a test checks that each name in :data:`DEFAULTS`
appears there.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from app.store.db import supports

from .mail import DEFAULTS as MAIL_DEFAULTS

#: name → (default, help). The environment variable of ``NAME`` is ``URBAN_NAME``.
SETTINGS: dict[str, tuple[object, str]] = {
    "ENV": ("production", "production or development; production refuses to start without SECRET_KEY"),
    "SECRET_KEY": (None, "signs portal sessions and CSRF tokens; required in production"),
    "DATABASE": (None, "account store SQLite file; default <instance>/urban.sqlite"),
    "DATABASE_URL": (
        None,
        "postgresql://user:password@host:5432/dbname: the account store on PostgreSQL, "
        "shared by several app hosts (default: the SQLite file DATABASE)",
    ),
    "REDIS_URL": (
        None,
        "redis://host:6379/0: per-IP limits (unless RATELIMIT_STORAGE_URI is set) and the "
        "refresher's HTTP cache in Redis, shared by several hosts",
    ),
    "DATA_DIR": ("data/snapshot", "snapshot directory loaded by the geo engine at start"),
    "HISTORY_URL": (
        None,
        "history store (docs/history.md): postgresql://… (shared by several hosts) or a SQLite file; "
        "default <DATA_DIR>.history.sqlite beside the snapshot pointer",
    ),
    "HISTORY_DAYS": (
        365,
        "days of history kept and answerable with asOf (prune: python -m app.history prune)",
    ),
    "LOAD_ENGINE": (True, "load the snapshot at start; false only for admin-only or platform tests"),
    "CLOCK": (
        "snapshot",
        "data clock: 'snapshot' (the snapshot's asOf, deterministic) or 'system' (UTC now)",
    ),
    "RATELIMIT_STORAGE_URI": (
        None,
        "per-IP limit storage shared by all workers; default "
        "urban-sqlite:///<instance>/ratelimit.sqlite, or redis://host:port/0",
    ),
    "AUTH_FAILURE_LIMIT": (
        "30 per minute",
        "failed authentications allowed per client IP (then 429 rate_limited)",
    ),
    "MAX_LOCATIONS": (100, "saved locations per account"),
    "SAVED_LOCATION_CACHE": (
        4096,
        "saved locations whose clock-free answer parts each worker keeps per snapshot (0: none)",
    ),
    "POINT_CACHE": (
        4096,
        "points asked by lat/lng again whose clock-free answer parts each worker keeps per snapshot (0: none)",
    ),
    "MAX_CONTENT_LENGTH": (16384, "largest accepted request body in bytes (413 payload_too_large)"),
    "CACHE_MAX_AGE": (60, "seconds in Cache-Control: private, max-age=N on data responses"),
    "CORS_ALLOW_ORIGIN": ("*", "Access-Control-Allow-Origin on API responses"),
    "TRUSTED_PROXIES": (
        0,
        "reverse proxies in front of gunicorn whose X-Forwarded-For/-Proto are trusted "
        "(hops; 0 = use the socket peer address, ignore the headers)",
    ),
    "DB_TIMEOUT": (5.0, "seconds a request waits for a locked account store before 503"),
    "LOG_LEVEL": ("INFO", "log level of the app logger"),
    "BENCH_ROUTES": (
        False,
        "serve /_bench/ping (trivial JSON, the load test's framework ceiling); never in production",
    ),
    # sign-up, mail and portal (docs/signup.md)
    "PUBLIC_URL": (
        None,
        "public origin used in e-mailed links and portal pages, e.g. https://api.example.be; "
        "required in production (development falls back to the request's host)",
    ),
    "SESSION_COOKIE_SECURE": (
        None,
        "portal session cookie only over HTTPS; default: when the request came over TLS",
    ),
    "PORTAL_SESSION_HOURS": (8, "hours a portal sign-in lasts"),
    "SIGNUP_LIMIT_PER_IP": (
        "20 per hour",
        "sign-up/sign-in link requests per client IP (every request counts)",
    ),
    "SIGNUP_LIMIT_PER_ADDRESS": (
        "5 per hour",
        "links mailed per address and client IP; past it the same "
        "202 and no mail (hidden; only mails actually sent count)",
    ),
    "MAIL_BACKEND": (MAIL_DEFAULTS["MAIL_BACKEND"], "'outbox' (write <instance>/outbox/*.eml) or 'smtp'"),
    "MAIL_HOST": (MAIL_DEFAULTS["MAIL_HOST"], "SMTP server host"),
    "MAIL_PORT": (MAIL_DEFAULTS["MAIL_PORT"], "SMTP port (default 587 starttls, 465 ssl, 25 none)"),
    "MAIL_SECURITY": (MAIL_DEFAULTS["MAIL_SECURITY"], "'starttls', 'ssl' (implicit TLS) or 'none'"),
    "MAIL_USERNAME": (MAIL_DEFAULTS["MAIL_USERNAME"], "SMTP user name (empty: no login)"),
    "MAIL_PASSWORD": (MAIL_DEFAULTS["MAIL_PASSWORD"], "SMTP password"),
    "MAIL_SENDER": (MAIL_DEFAULTS["MAIL_SENDER"], "From address of the link mails"),
    "MAIL_TIMEOUT": (MAIL_DEFAULTS["MAIL_TIMEOUT"], "seconds for the SMTP connection and each command"),
    "MAIL_OUTBOX": (MAIL_DEFAULTS["MAIL_OUTBOX"], "outbox folder (default <instance>/outbox)"),
    # dashboard, alerts and reports (docs/dashboard.md)
    "MAP_TILE_URL": (
        "",
        "optional raster tile URL template under the dashboard map, e.g. "
        "https://tiles.example.be/{z}/{x}/{y}.png (default: none, only our own vector layers; "
        "production recommendation in docs/dashboard.md)",
    ),
    "MAP_TILE_ATTRIBUTION": ("", "attribution text shown with MAP_TILE_URL tiles"),
    "MUNICIPALITIES_FILE": (
        "",
        "municipality borders GeoJSON for the dashboard base map; default "
        "<URBAN_REFERENCE_DIR>/boundaries/be_municipalities_2019.geojson",
    ),
    "DASHBOARD_PLAN_DAILY_QUOTA": (
        10_000,
        "point views a day (the map page or map.json of a point) for plans without API access "
        "(Dashboard); the other plans count them against their API quota",
    ),
    "REPORT_LIMIT": (
        "20 per hour",
        "PDF reports built per account (then 429 rate_limited); a report served from the cache counts nothing",
    ),
    "REPORT_BUILDS": (
        1,
        "PDF reports built at the same time on one host, over all its workers (then 503 with Retry-After)",
    ),
    "REPORT_CACHE_BYTES": (
        33_554_432,
        "bytes of built PDF reports each worker keeps, least recently used out first (0: none)",
    ),
    "REPORT_CACHE_SECONDS": (
        300,
        "data-clock seconds a built report is reused for the same location, snapshot and language "
        "(with URBAN_CLOCK=snapshot the clock stands still: once per snapshot)",
    ),
    "ALERT_WEBHOOK_TIMEOUT": (
        5.0,
        "wall-clock seconds for one alert webhook POST in all (look-up, connect, TLS, sending, answer)",
    ),
    "ALERT_WEBHOOK_ALLOW_PRIVATE": (
        False,
        "allow alert webhooks to loopback, private and other special-purpose addresses (off: only "
        "globally routable addresses, so a webhook cannot reach the internal network)",
    ),
}

#: the type of settings whose default is None (the others take the type of their default)
TYPES: dict[str, type] = {"SESSION_COOKIE_SECURE": bool, "MAIL_PORT": int}

DEFAULTS = {name: default for name, (default, _help) in SETTINGS.items()}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


_UNSET = object()


def coerce(name: str, raw, default=_UNSET):
    """The value of setting ``name`` from ``raw`` (an environment string, or a value given in the instance
    file or the test config), in the type of its default: the one conversion of every setting, also those
    a wing declares itself (:data:`app.sources.settings.SETTINGS`, which passes its ``default``).

    Numbers, booleans (``1/0``, ``true/false``, ``yes/no``, ``on/off``), ``name=value,...`` text for a
    dict-valued setting (only the entries named change; an unknown entry is refused), comma-separated
    numbers for a tuple; a URL loses its trailing ``/``. A value that does not convert is a ``ValueError``
    naming the variable.

    Examples
    --------
    >>> coerce("MAX_LOCATIONS", "7")
    7
    >>> coerce("LOAD_ENGINE", "off")
    False
    >>> coerce("MAIL_PORT", "2525"), coerce("MAIL_TIMEOUT", "2")
    (2525, 2.0)
    >>> coerce("FRESHNESS", "no2=7200", {"no2": 10800, "lez": 2592000})
    {'no2': 7200, 'lez': 2592000}
    """
    if default is _UNSET:
        default = DEFAULTS.get(name)
    kind = TYPES.get(name) or type(default)
    if not isinstance(raw, str):
        if isinstance(default, dict) and isinstance(raw, dict):
            return _entries(name, raw.items(), default)
        if isinstance(default, tuple) and isinstance(raw, (list, tuple)):
            return _numbers(name, raw, default)
        return raw
    if kind is int and name in TYPES and not raw.strip():
        return None  # an empty value restores the computed default
    if kind is bool:
        low = raw.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"URBAN_{name}={raw!r} is not a boolean (use 1/0, true/false)")
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"URBAN_{name}={raw!r} is not an integer") from None
    if kind is float:
        try:
            return float(raw)
        except ValueError:
            raise ValueError(f"URBAN_{name}={raw!r} is not a number") from None
    if kind is dict:
        return _entries(name, (part.split("=", 1) for part in raw.split(",") if part.strip()), default)
    if kind is tuple:
        return _numbers(name, raw.split(","), default)
    return raw.rstrip("/") if name.endswith("_URL") else raw


def _entries(name: str, items, default: dict) -> dict:
    merged = dict(default)
    for item in items:
        try:
            key, value = item
            key = str(key).strip()
            if key not in default:
                raise ValueError(f"unknown entry {key!r} (known: {', '.join(sorted(default))})")
            merged[key] = int(float(value))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"URBAN_{name} is invalid: {exc}") from None
    return merged


def _numbers(name: str, parts, default: tuple) -> tuple:
    try:
        out = tuple(float(p) for p in parts)
    except (TypeError, ValueError):
        raise ValueError(f"URBAN_{name} is invalid: expected comma-separated numbers") from None
    if len(out) != len(default):
        raise ValueError(f"URBAN_{name} is invalid: expected {len(default)} comma-separated numbers")
    return out


#: environment variables read elsewhere (before the app exists), not settings
NOT_SETTINGS = {"URBAN_INSTANCE_PATH"}


def from_environ(environ=None) -> dict:
    """Settings given as ``URBAN_<NAME>`` environment variables.

    Known names are converted to the type of their default; other ``URBAN_*`` names (settings that
    extensions declare with ``app.config.setdefault``) are passed on as strings.
    """
    environ = os.environ if environ is None else environ
    out = {}
    for key, raw in environ.items():
        if key.startswith("URBAN_") and key not in NOT_SETTINGS:
            name = key[len("URBAN_") :]
            out[name] = coerce(name, raw)
    return out


class ConfigurationError(RuntimeError):
    """The app refuses to start with these settings (message says what to set)."""


def check_public_url(value) -> None:
    """``PUBLIC_URL`` must be an origin: ``http(s)://host[:port]``, nothing after it but one ``/``.

    Examples
    --------
    >>> check_public_url("https://api.example.be/")
    >>> check_public_url("api.example.be")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    app.config.ConfigurationError: URBAN_PUBLIC_URL must be an origin like https://..., not 'api.example.be'
    """
    parts = urlsplit(value) if isinstance(value, str) else None
    if (
        parts is None
        or parts.scheme not in {"http", "https"}
        or not parts.hostname
        or parts.path not in {"", "/"}
        or parts.query
        or parts.fragment
        or parts.username
        or parts.password
    ):
        raise ConfigurationError(
            f"URBAN_PUBLIC_URL must be an origin like https://api.example.be, not {value!r}"
        )


def check(config, *, debug: bool, testing: bool, serving: bool = True) -> None:
    """Refuse unsafe or inconsistent settings. ``serving=False``: an app that only runs admin commands
    (:mod:`app.admin`; it never serves a request) needs no ``SECRET_KEY`` or ``PUBLIC_URL``."""
    env = str(config.get("ENV", "production")).lower()
    if env not in {"production", "development"}:
        raise ConfigurationError(f"URBAN_ENV must be 'production' or 'development', not {env!r}")
    if env == "production" and debug and not testing:
        raise ConfigurationError("debug mode is never allowed with URBAN_ENV=production (unset FLASK_DEBUG)")
    production = env == "production" and not testing and serving
    if production and not config.get("SECRET_KEY"):
        raise ConfigurationError(
            'SECRET_KEY is not set: set URBAN_SECRET_KEY (e.g. `python -c "import secrets; '
            'print(secrets.token_urlsafe(32))"`) or URBAN_ENV=development for a local run '
            "(the admin commands need neither: python -m app.admin accounts|keys|locations|usage …)"
        )
    public_url = config.get("PUBLIC_URL")
    if public_url:
        check_public_url(public_url)
    elif production:
        raise ConfigurationError(
            "PUBLIC_URL is not set: set URBAN_PUBLIC_URL to the service's public origin (e.g. "
            "https://api.example.be); production never builds e-mailed links from the request's Host header"
        )
    hops = config.get("TRUSTED_PROXIES", 0)
    if isinstance(hops, bool) or not isinstance(hops, int) or not 0 <= hops <= 10:
        raise ConfigurationError(f"URBAN_TRUSTED_PROXIES must be a number of proxy hops 0..10, not {hops!r}")
    url = config.get("DATABASE_URL")
    if url and not supports(str(url)):
        raise ConfigurationError(
            f"URBAN_DATABASE_URL must be a postgresql:// URL (unset it for the SQLite "
            f"store), not {str(url).split('://')[0]!r}://…"
        )
    redis_url = config.get("REDIS_URL")
    if redis_url and not str(redis_url).startswith(("redis://", "rediss://", "unix://")):
        raise ConfigurationError("URBAN_REDIS_URL must be a redis://, rediss:// or unix:// URL")
    if config.get("CLOCK") not in {"snapshot", "system"}:
        raise ConfigurationError(f"URBAN_CLOCK must be 'snapshot' or 'system', not {config.get('CLOCK')!r}")
