"""Interactive API documentation at ``/api/v1/docs``: Swagger UI over our OpenAPI document.

Swagger UI comes from the npm registry at build time (``make docs-ui`` runs ``npm ci`` on
``app/docs_ui/package.json``; ``node_modules`` is never committed) and is served by this blueprint from
``app/docs_ui/node_modules/swagger-ui-dist``: no CDN, nothing fetched by the browser from elsewhere (the
online validator is switched off). When the files are missing the page answers 503 ``service_unavailable``
saying how to install them.
"""

from __future__ import annotations

import os

from flask import Blueprint, render_template, send_from_directory

from app.web.errors import NotFound, ServiceUnavailable

DIST = os.path.join(os.path.dirname(__file__), "node_modules", "swagger-ui-dist")
#: the files of the npm package the page loads
VENDOR_FILES = ("swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png")
#: Swagger UI sets inline styles and shows data: icons; scripts only from here; calls only to this origin
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)

bp = Blueprint(
    "docs_ui",
    __name__,
    url_prefix="/api/v1/docs",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)


def _installed() -> None:
    if not all(os.path.isfile(os.path.join(DIST, name)) for name in VENDOR_FILES):
        raise ServiceUnavailable(
            "the interactive documentation is not installed on this server "
            "(run `make docs-ui`); the OpenAPI document is at /api/v1/openapi.json"
        )


@bp.get("")
def index():
    """The Swagger UI page."""
    _installed()
    return (
        render_template("docs_ui/index.html"),
        200,
        {"Cache-Control": "no-cache", "Content-Security-Policy": CSP, "Referrer-Policy": "no-referrer"},
    )


@bp.get("/ui/<name>")
def vendor(name: str):
    """One of :data:`VENDOR_FILES` of the installed Swagger UI."""
    if name not in VENDOR_FILES:
        raise NotFound(f"no file {name!r} in the documentation UI")
    _installed()
    return send_from_directory(DIST, name, max_age=3600)


@bp.after_request
def _policy(response):
    response.headers.setdefault("Content-Security-Policy", CSP)
    return response


def init_app(app) -> None:
    app.register_blueprint(bp)
