"""Public, unauthenticated API documents: ``/openapi.json``."""

from __future__ import annotations

from flask import Blueprint, current_app

bp = Blueprint("meta", __name__)


@bp.get("/openapi.json")
def openapi():
    """The OpenAPI 3.1 document of this API."""
    from .openapi import build

    resp = current_app.json.response(build())
    resp.headers["Cache-Control"] = "no-cache"
    return resp
