"""Abuse limits on sign-up links, per client IP and per address (Flask-Limiter, shared storage).

Both the API (``POST /api/v1/signup``) and the portal form draw from the same two buckets:

- ``SIGNUP_LIMIT_PER_IP`` (default ``20 per hour``): every request counts, valid or not;
- ``SIGNUP_LIMIT_PER_ADDRESS`` (default ``5 per hour``): only requests that sent a mail count, so a
  request refused because the mail server was down can be retried. The bucket key is a digest of the
  normalised address, so no address is written to the limiter storage in plain text.

Breaches give 429 ``rate_limited`` with ``Retry-After``; the ``X-RateLimit-*`` headers report the limit
closest to being breached (see :func:`app.ratelimit.peek`).
"""
from __future__ import annotations

import hashlib

from flask import current_app, g, request

from app.http import json_body
from app.ratelimit import limiter

from .addresses import InvalidEmail, normalize_email


def submitted_address():
    """The normalised address of this request (JSON body or form), or None when there is no valid one."""
    if "signup_address" not in g:
        if request.is_json:
            body = json_body()
            raw = body.get("email") if isinstance(body, dict) else None
        else:
            raw = request.form.get("email", "").strip()
        try:
            g.signup_address = normalize_email(raw)
        except InvalidEmail:
            g.signup_address = None
    return g.signup_address


def _address_key():
    address = submitted_address() or ""
    return "addr-" + hashlib.sha256(address.encode()).hexdigest()[:32]


per_ip = limiter.shared_limit(lambda: current_app.config["SIGNUP_LIMIT_PER_IP"], scope="signup-ip")
per_address = limiter.shared_limit(
    lambda: current_app.config["SIGNUP_LIMIT_PER_ADDRESS"], scope="signup-address",
    key_func=_address_key, exempt_when=lambda: submitted_address() is None,
    deduct_when=lambda response: response.status_code < 400,
)
