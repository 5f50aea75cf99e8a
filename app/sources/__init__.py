"""Live upstream sources: GIPOD, De Lijn, IRCEL-CELINE and the Antwerp LEZ, behind one injected session.

``init_app(app)`` wires the source layer into the Flask app: the ``snapshot`` CLI group (``flask --app wsgi
snapshot refresh [--every SECONDS]``, which runs the hooks registered with :func:`on_publish` after each
published refresh) and, when the engine was loaded from ``DATA_DIR`` and
``URBAN_RELOAD_INTERVAL`` > 0, the reload watcher (:class:`app.sources.serving.SnapshotWatcher`) that is
consulted when a request first asks for its engine. No hook runs on requests that do not use the engine; the freshness decision is
made by the data views (:func:`app.sources.serving.served_engine`), before they compute.

See ``docs/sources.md``.
"""

from __future__ import annotations

from .cli import snapshot_group
from .extension import EXTENSION, SourcesState, on_publish, publish_hooks
from .serving import SnapshotWatcher
from .settings import SourceSettings

__all__ = ["init_app", "on_publish", "publish_hooks"]


def _load(path):
    """:func:`geo.service.loaded.load`, imported by the watcher's first reload, not by ``import app.sources``."""
    from geo.service.loaded import load

    return load(path)


def init_app(app) -> None:
    """Register the CLI group and the reload watcher on ``app``. Calling it twice on the same app does
    nothing the second time."""
    if EXTENSION in app.extensions:
        return
    settings = SourceSettings.from_config(app.config)
    state: SourcesState = {"settings": settings, "watcher": None, "fresh_until": None, "after_publish": []}
    app.extensions[EXTENSION] = state
    app.cli.add_command(snapshot_group)
    if "urban" in app.extensions and "ENGINE" not in app.config and settings.reload_interval > 0:
        state["watcher"] = SnapshotWatcher(
            app.config.get("DATA_DIR", "data/snapshot"),
            settings.reload_interval,
            _load,
            background=bool(app.config.get("RELOAD_BACKGROUND", True)),
        )
