"""Settings of sign-up, mail and the portal.

They live in the one settings table, :data:`app.config.SETTINGS` (same precedence as every other setting:
defaults → instance file → ``URBAN_*`` environment → test config), and are documented in
``docs/configuration.md`` and ``docs/signup.md``. This module names the portal's subset.
"""

from __future__ import annotations

from app.config import SETTINGS as _ALL

NAMES = (
    "PUBLIC_URL",
    "SESSION_COOKIE_SECURE",
    "PORTAL_SESSION_HOURS",
    "SIGNUP_LIMIT_PER_IP",
    "SIGNUP_LIMIT_PER_ADDRESS",
    "MAIL_BACKEND",
    "MAIL_HOST",
    "MAIL_PORT",
    "MAIL_SECURITY",
    "MAIL_USERNAME",
    "MAIL_PASSWORD",
    "MAIL_SENDER",
    "MAIL_TIMEOUT",
    "MAIL_OUTBOX",
)

#: name → (default, help) of the portal's settings (a view of :data:`app.config.SETTINGS`)
SETTINGS: dict[str, tuple[object, str]] = {name: _ALL[name] for name in NAMES}


def apply(config, environ=None):
    """Fill in defaults for portal settings missing from ``config`` (an app not made by ``create_app``).

    ``create_app`` already loaded them with every other setting; ``environ`` is accepted for compatibility.
    """
    for name, (default, _help) in SETTINGS.items():
        config.setdefault(name, default)
