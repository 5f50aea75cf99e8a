"""Self-serve sign-up by e-mail link and the developer portal.

``init_app(app)`` registers the two blueprints this package owns on an app made by ``create_app``: the
sign-up API call (``POST /api/v1/signup``, :mod:`app.portal.signup`) and the portal pages (``/portal``,
:mod:`app.portal.views`, with CSRF protection). Both carry sign-up's per-IP limit
(:data:`app.portal.throttle.PER_IP`). The session cookie policy, the mail extension and the log filter are
the app's (:func:`app.create_app`).
"""

from __future__ import annotations

from .signup import bp as signup_bp
from .views import bp as portal_bp


def init_app(app) -> None:
    """Register the sign-up API and the portal pages on ``app`` (idempotent)."""
    if "signup" not in app.blueprints:
        app.register_blueprint(signup_bp)
    if "portal" not in app.blueprints:
        app.register_blueprint(portal_bp)
