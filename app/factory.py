"""The factory (``create_app``): settings, engine, then every wing's blueprints and commands.

Imported on the first use of ``app.create_app`` (``app/__init__.py``), so a process that imports only a wing
(a gunicorn worker class, the admin commands' ``--help``) does not import every wing.

Examples
--------
>>> app = create_app({"TESTING": True, "ENGINE": None, "INSTANCE_PATH": "/tmp/urban-doctest"})
>>> app.url_map.bind("").match("/api/v1/locations")[0]
'api_v1.data.locations'
"""

from __future__ import annotations

import logging
import os
import secrets

from flask import Flask

from app import api, cli, dashboard, docs_ui, front, health, portal, sources
from app.api.changes import derive_after_publish
from app import config as settings
from app.mail import Mail
from app.server import logfilter
from app.web import conventions, db, errors, ratelimit
from app.web.state import UrbanState

log = logging.getLogger("app")


def _instance_path(test_config: dict | None) -> str | None:
    path = (test_config or {}).get("INSTANCE_PATH") or os.environ.get("URBAN_INSTANCE_PATH")
    return os.path.abspath(path) if path else None


def load_config(app: Flask, test_config: dict | None) -> None:
    """Defaults → ``<instance>/config.py`` → ``URBAN_*`` environment → ``test_config``."""
    app.config.from_mapping(settings.DEFAULTS)
    app.config.from_pyfile("config.py", silent=True)
    app.config.update(settings.from_environ())
    if test_config:
        app.config.update(test_config)
    cfg = app.config
    # only the code that builds the app says it runs commands only (app.admin): never a setting, so no
    # environment can lift the production checks of a server
    cfg["COMMANDS_ONLY"] = bool((test_config or {}).get("COMMANDS_ONLY"))
    if not cfg.get("DATABASE"):
        cfg["DATABASE"] = os.path.join(app.instance_path, "urban.sqlite")
    if not cfg.get("RATELIMIT_STORAGE_URI") and cfg.get("REDIS_URL"):
        cfg["RATELIMIT_STORAGE_URI"] = cfg["REDIS_URL"]  # shared by every host
    if not cfg.get("RATELIMIT_STORAGE_URI"):
        cfg["RATELIMIT_STORAGE_URI"] = "urban-sqlite:///" + os.path.join(
            app.instance_path, "ratelimit.sqlite"
        )
    settings.check(cfg, debug=app.debug, testing=app.testing, serving=not cfg["COMMANDS_ONLY"])
    if not cfg.get("SECRET_KEY"):
        # development, testing or admin commands (check() refused a production server): a key for this process
        cfg["SECRET_KEY"] = secrets.token_urlsafe(32)
        if not cfg["COMMANDS_ONLY"]:
            log.warning("no SECRET_KEY set: using an ephemeral one (development only)")


def load_engine(app: Flask):
    """The geo engine for ``DATA_DIR`` (or ``ENGINE`` given in the test config; None = platform only)."""
    if "ENGINE" in app.config:
        return app.config["ENGINE"]
    if not app.config["LOAD_ENGINE"]:
        return None
    from geo.service.loaded import load

    return load(app.config["DATA_DIR"])


def create_app(test_config: dict | None = None) -> Flask:
    """Build the app: settings, engine, what every response shares, mail, the account store, the limiter,
    then each wing's blueprints and commands.

    ``test_config`` overrides every other source; besides the settings of ``docs/configuration.md`` it
    accepts ``INSTANCE_PATH``, ``ENGINE`` (an Engine or None), ``WALL_CLOCK``, ``DATA_CLOCK`` and
    ``COMMANDS_ONLY`` (:mod:`app.admin`: an app that runs admin commands and serves nothing).
    """
    app = Flask("app", instance_path=_instance_path(test_config), instance_relative_config=True)
    load_config(app, test_config)
    # app.logger is the "app" logger; reading it now lets Flask give it its stderr handler (unless logging is
    # configured already), so the app's records reach the console from start, e.g. the outbox's paths
    app.logger.setLevel(app.config["LOG_LEVEL"])
    logfilter.install()
    os.makedirs(app.instance_path, exist_ok=True)
    app.extensions["urban"] = UrbanState(engine=load_engine(app))

    conventions.init_app(app)
    errors.init_app(app)
    Mail(app)
    db.init_app(app)
    ratelimit.init_app(app)
    api.init_app(app)
    health.init_app(app)
    cli.init_app(app)
    sources.init_app(app)
    sources.on_publish(app, derive_after_publish)  # the change feed, before the alerts
    portal.init_app(app)
    front.init_app(app)
    docs_ui.init_app(app)
    dashboard.init_app(app)
    trust_proxies(app)
    if app.config["COMMANDS_ONLY"]:
        app.wsgi_app = _serves_nothing  # type: ignore[method-assign]
    return app


def _serves_nothing(environ, start_response):
    """The WSGI callable of an app built for admin commands only (no SECRET_KEY/PUBLIC_URL checked)."""
    raise RuntimeError("this app was built to run admin commands (app.admin); it never serves requests")


def trust_proxies(app: Flask) -> None:
    """Behind ``TRUSTED_PROXIES`` reverse proxies, take the client address (and scheme) from the last N
    ``X-Forwarded-For`` (``-Proto``) entries, so per-IP limits key on the client, not on the proxy.
    With 0 (the default) the headers are ignored: a client cannot choose its own per-IP budget."""
    hops = app.config["TRUSTED_PROXIES"]
    if hops:
        from werkzeug.middleware.proxy_fix import ProxyFix

        # Flask's documented way to wrap the WSGI app in middleware (typeshed sees a method assignment)
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops)  # type: ignore[method-assign]
