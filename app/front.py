"""The front door ``/``: one small page saying what the service is, linking the portal, the interactive
docs and the OpenAPI document (no JavaScript)."""

from __future__ import annotations

from flask import Blueprint, render_template

bp = Blueprint("front", __name__)

#: strict policy: the page loads only the portal's style sheet
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; "
    "base-uri 'none'"
)


@bp.get("/")
def index():
    """The front page (HTML)."""
    return (
        render_template("front.html"),
        200,
        {"Cache-Control": "no-cache", "Content-Security-Policy": CSP, "Referrer-Policy": "no-referrer"},
    )


def init_app(app) -> None:
    app.register_blueprint(bp)
