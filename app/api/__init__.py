"""The ``/api/v1`` blueprints: data endpoints and history resources (authenticated, counted) and the public
OpenAPI document."""

from __future__ import annotations

from flask import Blueprint


def init_app(app) -> None:
    """Register every API blueprint under ``/api/v1``."""
    from . import changes, data, history, meta

    api = Blueprint("api_v1", __name__, url_prefix="/api/v1")
    api.register_blueprint(data.bp)
    api.register_blueprint(history.bp)
    api.register_blueprint(meta.bp)
    api.register_blueprint(changes.bp)
    app.register_blueprint(api)
