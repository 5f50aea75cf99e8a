"""``POST /api/v1/signup``: e-mail a single-use link that creates a Developer account and its first key.

Always 202 with the same body, whether or not the address already has an account (no enumeration) and
whether or not the hidden per-address limit let a mail go out (:mod:`app.portal.throttle`).
"""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from app.web.errors import InvalidEmail, InvalidRequest, ServiceUnavailable
from app.web.conventions import json_body
from app.mail import MailUnavailable
from app.web.ratelimit import declare
from app.web.redact import echo
from app.portal import links, throttle
from app.portal.addresses import InvalidEmail as BadAddress, normalize_email
from app.portal.views import send_link

bp = Blueprint("signup", __name__, url_prefix="/api/v1")
declare(throttle.PER_IP, bp)


def parse_signup_body():
    """The normalised address from a ``{"email": "..."}`` JSON body; raises the 400 errors."""
    if request.mimetype != "application/json":
        raise InvalidRequest('send Content-Type: application/json with a body {"email": "..."}')
    body = json_body()
    if not isinstance(body, dict):
        raise InvalidRequest('the body must be a JSON object {"email": "..."}')
    unknown = sorted(set(body) - {"email"})
    if unknown:
        raise InvalidRequest(
            f'unknown field(s): {", ".join(echo(u) for u in unknown)}; the body has only "email"'
        )
    if "email" not in body:
        raise InvalidRequest('the field "email" is required')
    if not isinstance(body["email"], str):
        raise InvalidEmail('"email" must be a string holding an e-mail address')
    try:
        return normalize_email(body["email"])
    except BadAddress:
        raise InvalidEmail('"email" is not a valid e-mail address') from None


@bp.post("/signup")
def signup():
    email = parse_signup_body()
    try:
        send_link(email)
    except MailUnavailable:
        raise ServiceUnavailable(
            "the mail server is unavailable, so no link was sent and nothing was "
            "saved; retry in a few minutes"
        ) from None
    response = jsonify(
        {
            "status": "link_sent",
            "message": "If the address can receive mail, a single-use link is on its way. Open it and press the "
            "button to get your API key (new address) or to sign in (existing account).",
            "expiresInMinutes": links.ttl_minutes(),
        }
    )
    response.status_code = 202
    response.headers["Cache-Control"] = "no-store"
    return response
