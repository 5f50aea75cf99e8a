"""CSRF protection for the portal's forms: a per-session secret in a hidden field, checked on every POST.

The secret lives in the signed session cookie (SameSite=Lax) and is compared in constant time; a POST whose
``Origin`` header names another host is refused as well. Templates call ``csrf_token()``.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

from flask import request, session

SESSION_KEY = "csrf"


def csrf_token():
    """The session's CSRF secret, created on first use."""
    if SESSION_KEY not in session:
        session[SESSION_KEY] = secrets.token_urlsafe(32)
    return session[SESSION_KEY]


def valid_request():
    """True when this POST carries the session's secret and, if it names one, our own origin."""
    origin = request.headers.get("Origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.host:
        return False
    expected = session.get(SESSION_KEY)
    sent = request.form.get("csrf_token", "")
    return bool(expected) and hmac.compare_digest(expected.encode(), sent.encode())


def rotate():
    """New secret (after signing in or out), so a secret seen before sign-in is worthless after it."""
    session[SESSION_KEY] = secrets.token_urlsafe(32)
