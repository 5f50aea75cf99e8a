"""Settings of sign-up, mail and the portal: name → (default, help). Environment: ``URBAN_<NAME>``.

They are documented in ``docs/signup.md``. :func:`apply` fills in what the app config does not set yet:
the ``URBAN_<NAME>`` environment variable if present, else the default.
"""
from __future__ import annotations

import os

from app.mail import DEFAULTS as MAIL_DEFAULTS

SETTINGS: dict[str, tuple[object, str]] = {
    "PUBLIC_URL": (None, "public origin used in e-mailed links, e.g. https://api.example.be (default: the "
                         "request's host; set it in production so a forged Host header cannot redirect links)"),
    "SESSION_COOKIE_SECURE": (None, "portal session cookie only over HTTPS; default: when the request came over "
                                    "TLS (behind a proxy, with X-Forwarded-Proto handled by the proxy fix)"),
    "PORTAL_SESSION_HOURS": (8, "hours a portal sign-in lasts"),
    "SIGNUP_LIMIT_PER_IP": ("20 per hour", "sign-up/sign-in link requests per client IP (every request counts)"),
    "SIGNUP_LIMIT_PER_ADDRESS": ("5 per hour", "links sent per e-mail address (only mails actually sent count)"),
    "MAIL_BACKEND": (MAIL_DEFAULTS["MAIL_BACKEND"], "'outbox' (write <instance>/outbox/*.eml, log the path) or "
                                                    "'smtp'"),
    "MAIL_HOST": (MAIL_DEFAULTS["MAIL_HOST"], "SMTP server host"),
    "MAIL_PORT": (MAIL_DEFAULTS["MAIL_PORT"], "SMTP port (default 587 starttls, 465 ssl, 25 none)"),
    "MAIL_SECURITY": (MAIL_DEFAULTS["MAIL_SECURITY"], "'starttls', 'ssl' (implicit TLS) or 'none'"),
    "MAIL_USERNAME": (MAIL_DEFAULTS["MAIL_USERNAME"], "SMTP user name (empty: no login)"),
    "MAIL_PASSWORD": (MAIL_DEFAULTS["MAIL_PASSWORD"], "SMTP password"),
    "MAIL_SENDER": (MAIL_DEFAULTS["MAIL_SENDER"], "From address of the link mails"),
    "MAIL_TIMEOUT": (MAIL_DEFAULTS["MAIL_TIMEOUT"], "seconds for the SMTP connection and each command"),
    "MAIL_OUTBOX": (MAIL_DEFAULTS["MAIL_OUTBOX"], "outbox folder (default <instance>/outbox)"),
}

_INT = {"PORTAL_SESSION_HOURS", "MAIL_PORT"}
_FLOAT = {"MAIL_TIMEOUT"}
_BOOL = {"SESSION_COOKIE_SECURE"}


def _coerce(name, raw):
    if name in _INT:
        return int(raw) if raw.strip() else None
    if name in _FLOAT:
        return float(raw)
    if name in _BOOL:
        low = raw.strip().lower()
        if low in {"1", "true", "yes", "on"}:
            return True
        if low in {"0", "false", "no", "off"}:
            return False
        raise ValueError(f"URBAN_{name}={raw!r} is not a boolean (use 1/0, true/false)")
    return raw


def apply(config, environ=None):
    """Fill missing settings from ``URBAN_<NAME>`` or the default (values already in ``config`` win)."""
    environ = os.environ if environ is None else environ
    for name, (default, _help) in SETTINGS.items():
        current = config.get(name)
        if current is not None and not (name in _BOOL and current is False):
            continue  # set by the app (test config, instance file); Flask's own False default may be overridden
        key = f"URBAN_{name}"
        if key in environ:
            config[name] = _coerce(name, environ[key])
        elif name not in config or config[name] is None:
            config[name] = default
