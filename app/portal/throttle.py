"""Abuse limits on sign-up links, per client IP (visible) and per address and client (hidden).

Both the API (``POST /api/v1/signup``) and the portal form (``POST /portal/signin``) draw from the same
buckets:

- ``SIGNUP_LIMIT_PER_IP`` (default ``20 per hour``): every request counts, valid or not. :data:`PER_IP` is a
  Flask-Limiter limit shared by both and declared on the two blueprints (:mod:`app.portal.signup`,
  :mod:`app.portal.views`), so it is charged before the blueprint's own hooks and the view read anything of
  the request (body, form, CSRF field). It is the only limit that refuses (429) and the one the
  ``X-RateLimit-*`` headers show.
- ``SIGNUP_LIMIT_PER_ADDRESS`` (default ``5 per hour``): links mailed to one address *at the request of one
  client IP*. Past it the API gets the same 202 and no mail: nothing tells a client how many links an
  address received from others, and a stranger who spends the budget from their address spends only their
  own — the owner, asking from another address, still gets a link. The portal's "check your mail" page
  tells the person who asked about their own budget (:func:`budget`): whether this link was held back and
  when they can ask again, the same for an address with or without an account. Only mails actually sent count (a 503 does not).
  The bucket key is a digest of address and client, so no address is written to the limiter storage.
  Flask-Limiter has no limit that counts only what happened after the view decided (a mail sent) and
  never refuses: this one is a window of ours on its rate limiter (:func:`may_mail`, :func:`mailed`).

See ``docs/signup.md`` → Abuse limits.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from flask import current_app, request
from limits import parse

from app.web.ratelimit import client_address, limiter

SCOPE = "signup-address"
#: the endpoints that mail a link (the API and the portal form)
ENDPOINTS = frozenset({"signup.signup", "portal.request_link"})


def _not_a_link_request() -> bool:
    return request.endpoint not in ENDPOINTS or request.method == "OPTIONS"


#: sign-up's per-IP window, shared by the API call and the portal form; declared on both blueprints (the
#: portal's other pages are exempt)
PER_IP = limiter.shared_limit(
    lambda: current_app.config["SIGNUP_LIMIT_PER_IP"],
    scope="signup-ip",
    exempt_when=_not_a_link_request,
    error_message="too many sign-up requests from this address; retry later",
)


def _address_bucket(address: str) -> tuple:
    key = hashlib.sha256(f"{address}\n{client_address()}".encode()).hexdigest()[:32]
    return parse(current_app.config["SIGNUP_LIMIT_PER_ADDRESS"]), SCOPE, key


def may_mail(address: str) -> bool:
    """Whether this client may still have a link mailed to ``address`` in the current window."""
    item, *identifiers = _address_bucket(address)
    return limiter.limiter.test(item, *identifiers)


def mailed(address: str) -> None:
    """Count one link mailed to ``address`` at this client's request."""
    item, *identifiers = _address_bucket(address)
    limiter.limiter.hit(item, *identifiers)


@dataclass(frozen=True)
class Budget:
    """This client's links for one address in the current window: ``limit`` a ``window`` (seconds),
    ``remaining`` of them, the window ending at ``resets_at`` (epoch seconds)."""

    limit: int
    window: int
    remaining: int
    resets_at: float


def budget(address: str) -> Budget:
    """The per-address budget of this client for ``address``, as it stands now."""
    item, *identifiers = _address_bucket(address)
    stats = limiter.limiter.get_window_stats(item, *identifiers)
    return Budget(item.amount, item.get_expiry(), stats.remaining, stats.reset_time)
