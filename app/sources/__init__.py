"""Live upstream sources: GIPOD, De Lijn, IRCEL-CELINE and the Antwerp LEZ, behind one injected session.

``init_app(app)`` wires the source layer into the Flask app:

- the ``snapshot`` CLI group (``flask --app wsgi snapshot refresh [--every SECONDS]``);
- the snapshot reload hook (a ``before_request`` that swaps in a newly published snapshot and pins the
  request's engine in ``g.urban_engine``), when the engine was loaded from ``DATA_DIR`` and
  ``URBAN_RELOAD_INTERVAL`` > 0; when the engine in use is past a freshness limit the request needs, a
  newer published snapshot is loaded inline first, so an idle worker never answers a false 502;
- the freshness check (an ``after_request`` that turns a data response built from a live layer older than
  its limit into 502 ``upstream_error`` naming the source). It runs after the view, so every 4xx keeps its
  precedence over 502.

See ``docs/sources.md``.
"""

from __future__ import annotations

from .settings import SourceSettings

EXTENSION = "urban_sources"


def init_app(app) -> None:
    """Register the CLI group, the reload hook and the freshness check on ``app`` (call after the
    platform's ``http.init_app`` so the platform's ``after_request`` sees the 502 and refunds the call).
    Calling it twice on the same app does nothing the second time."""
    if EXTENSION in app.extensions:
        return
    from flask import current_app, g, request

    from .cli import snapshot_group
    from .freshness import ENDPOINT_LAYERS, stale_error, stale_layers
    from .reload import SnapshotWatcher

    settings = SourceSettings.from_mapping(app.config)
    state = {"settings": settings, "watcher": None}
    app.extensions[EXTENSION] = state
    app.cli.add_command(snapshot_group)

    holder = app.extensions.get("urban")
    if holder is not None and "ENGINE" not in app.config and settings.reload_interval > 0:
        from geo.engine import Engine

        state["watcher"] = SnapshotWatcher(app.config.get("DATA_DIR", "data/snapshot"),
                                           settings.reload_interval, Engine.load,
                                           background=bool(app.config.get("RELOAD_BACKGROUND", True)))

    @app.before_request
    def _pin_engine():
        holder = current_app.extensions.get("urban")
        if holder is None:
            return
        state = current_app.extensions[EXTENSION]
        watcher = state["watcher"]
        if watcher is not None:
            watcher.maybe_reload(holder)
            if _needs_fresher(holder.engine, state["settings"]):
                # an idle worker's engine aged past a limit: a fresher published snapshot is loaded inline
                watcher.maybe_reload(holder, urgent=True)
        g.urban_engine = holder.engine

    def _needs_fresher(engine, settings) -> bool:
        layers = ENDPOINT_LAYERS.get((request.endpoint or "").rsplit(".", 1)[-1])
        manifest = getattr(engine, "manifest", None)
        if not layers or not manifest:
            return False
        from app.clock import wall_now

        return bool(stale_layers(manifest, layers, wall_now(), settings.freshness))

    @app.after_request
    def _check_freshness(response):
        if response.status_code != 200 or request.endpoint is None:
            return response
        layers = ENDPOINT_LAYERS.get(request.endpoint.rsplit(".", 1)[-1])
        engine = g.get("urban_engine")
        manifest = getattr(engine, "manifest", None)
        if not layers or not manifest:
            return response
        from app.clock import wall_now
        from app.errors import error_response

        stale = stale_layers(manifest, layers, wall_now(),
                             current_app.extensions[EXTENSION]["settings"].freshness)
        if not stale:
            return response
        err = stale_error(stale)
        current_app.logger.warning("502 upstream_error for %s: %s", request.path, err.message)
        return error_response(err)
