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

from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from .settings import SourceSettings

if TYPE_CHECKING:
    from .reload import SnapshotWatcher

EXTENSION = "urban_sources"
_MARGIN = timedelta(milliseconds=1)


class SourcesState(TypedDict):
    """``app.extensions[EXTENSION]``: the settings, the reload watcher (None without reloading) and the
    freshness deadlines cached for the engine in use: ``(engine, limits, {layers: deadline})``."""

    settings: SourceSettings
    watcher: SnapshotWatcher | None
    fresh_until: tuple[Any, Any, dict] | None


def init_app(app) -> None:
    """Register the CLI group, the reload hook and the freshness check on ``app`` (call after the
    platform's ``http.init_app`` so the platform's ``after_request`` sees the 502 and refunds the call).
    Calling it twice on the same app does nothing the second time."""
    if EXTENSION in app.extensions:
        return
    from flask import current_app, g, request

    from .cli import snapshot_group
    from .freshness import ENDPOINT_LAYERS, fresh_until, stale_error, stale_layers
    from .reload import SnapshotWatcher

    settings = SourceSettings.from_mapping(app.config)
    state: SourcesState = {"settings": settings, "watcher": None, "fresh_until": None}
    app.extensions[EXTENSION] = state
    app.cli.add_command(snapshot_group)

    holder = app.extensions.get("urban")
    if holder is not None and "ENGINE" not in app.config and settings.reload_interval > 0:
        from geo.service.loaded import load

        state["watcher"] = SnapshotWatcher(
            app.config.get("DATA_DIR", "data/snapshot"),
            settings.reload_interval,
            load,
            background=bool(app.config.get("RELOAD_BACKGROUND", True)),
        )

    @app.before_request
    def _pin_engine():
        holder = current_app.extensions.get("urban")
        if holder is None:
            return
        state = current_app.extensions[EXTENSION]
        watcher = state["watcher"]
        if watcher is not None:
            watcher.maybe_reload(holder)
            if _stale(state, holder.engine):
                # an idle worker's engine aged past a limit: a fresher published snapshot is loaded inline
                watcher.maybe_reload(holder, urgent=True)
        g.urban_engine = holder.engine

    def _stale(state: SourcesState, engine) -> list:
        """The live layers this request's endpoint needs that ``engine`` holds past their limit.

        Each engine's manifest gives a constant deadline per endpoint (``fresh_until``, cached for the
        engine in use): before it (with a 1 ms margin) nothing can be stale and no timestamp is parsed;
        near or past it the exact check runs.
        """
        if request.endpoint is None:
            return []
        layers = ENDPOINT_LAYERS.get(request.endpoint.rsplit(".", 1)[-1])
        manifest = getattr(engine, "manifest", None)
        if not layers or not manifest:
            return []
        limits = state["settings"].freshness
        cached_engine, cached_limits, deadlines = state["fresh_until"] or (None, None, {})
        if cached_engine is not engine or cached_limits is not limits:
            deadlines = {}
            state["fresh_until"] = (engine, limits, deadlines)
        if layers not in deadlines:
            deadlines[layers] = fresh_until(manifest, layers, limits)
        deadline = deadlines[layers]
        if deadline is None:
            return []
        from app.web.clock import wall_now

        now = wall_now()
        if now < deadline - _MARGIN:
            return []
        return stale_layers(manifest, layers, now, limits)

    @app.after_request
    def _check_freshness(response):
        if response.status_code != 200 or request.endpoint is None:
            return response
        stale = _stale(current_app.extensions[EXTENSION], g.get("urban_engine"))
        if not stale:
            return response
        from app.web.errors import error_response

        err = stale_error(stale)
        current_app.logger.warning("502 upstream_error for %s: %s", request.path, err.message)
        return error_response(err)
