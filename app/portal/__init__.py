"""Self-serve sign-up by e-mail link and the developer portal.

``init_app(app)`` wires everything this package owns into an app made by ``create_app``: its settings,
the mail extension, the session cookie policy, the log redactor, and the two blueprints
(``/api/v1/signup`` and ``/portal``). CSRF protection is part of the portal blueprint.
"""

from __future__ import annotations

import logging

import json

from flask import request
from flask.json.tag import TaggedJSONSerializer
from flask.sessions import SecureCookieSessionInterface

from app.mail import Mail

from app.server import logfilter as redact
from . import settings, throttle

mail = Mail()
log = logging.getLogger(__name__)


class _SessionSerializer(TaggedJSONSerializer):
    """Flask's tagged session JSON through the standard library (independent of the app's JSON provider)."""

    def dumps(self, value):
        return json.dumps(self.tag(value), separators=(",", ":"))

    def loads(self, value):
        return json.loads(value, object_hook=self.untag)


class PortalSessionInterface(SecureCookieSessionInterface):
    """Signed-cookie sessions whose cookie is ``Secure`` when configured or when the request came over TLS."""

    serializer = _SessionSerializer()

    def open_session(self, app, request):
        # no cookie: the empty session Flask would return, without building a signing serializer
        if app.secret_key and (
            "HTTP_COOKIE" not in request.environ or not request.cookies.get(self.get_cookie_name(app))
        ):
            return self.session_class()
        return super().open_session(app, request)

    def save_session(self, app, session, response):
        # an untouched empty session sets, deletes and varies nothing (what Flask's own method concludes)
        if not session and not session.accessed and not session.modified:
            return
        super().save_session(app, session, response)

    def get_cookie_secure(self, app):
        if app.config.get("SESSION_COOKIE_SECURE"):
            return True
        try:
            return request.is_secure
        except RuntimeError:  # outside a request
            return False


def init_app(app):
    """Register the sign-up API, the portal pages, mail, session policy and log redaction on ``app``."""
    from app.portal.signup import bp as signup_bp
    from .views import bp as portal_bp

    settings.apply(app.config)
    app.config["SESSION_COOKIE_HTTPONLY"] = True
    app.config["SESSION_COOKIE_SAMESITE"] = "Lax"
    app.session_interface = PortalSessionInterface()
    mail.init_app(app)
    if app.config["MAIL_BACKEND"] == "outbox" and app.config.get("ENV") == "production" and not app.testing:
        log.warning(
            "MAIL_BACKEND=outbox in production: sign-up mails are written to %s, not sent; "
            "set URBAN_MAIL_BACKEND=smtp and URBAN_MAIL_HOST",
            app.config["MAIL_OUTBOX"],
        )
    redact.install()
    if throttle.charge_per_ip not in app.before_request_funcs.get(None, []):
        app.before_request(throttle.charge_per_ip)
    if "signup" not in app.blueprints:
        app.register_blueprint(signup_bp)
    if "portal" not in app.blueprints:
        app.register_blueprint(portal_bp)
