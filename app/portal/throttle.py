"""Abuse limits on sign-up links, per client IP (visible) and per address and client (hidden).

Both the API (``POST /api/v1/signup``) and the portal form draw from the same buckets:

- ``SIGNUP_LIMIT_PER_IP`` (default ``20 per hour``): every request counts, valid or not — charged by
  :func:`charge_per_ip` before anything reads the request (body, form, CSRF field). It is the only limit
  that refuses (429) and the one the ``X-RateLimit-*`` headers show.
- ``SIGNUP_LIMIT_PER_ADDRESS`` (default ``5 per hour``): links mailed to one address *at the request of one
  client IP*. Past it the request gets the same 202 and no mail: nothing tells a client how many links an
  address received, and a stranger who spends the budget from their address spends only their own — the
  owner, asking from another address, still gets a link. Only mails actually sent count (a 503 does not).
  The bucket key is a digest of address and client, so no address is written to the limiter storage.

See ``docs/signup.md`` → Abuse limits.
"""

from __future__ import annotations

import hashlib

from flask import current_app, g, request
from limits import parse

from app.web.errors import RateLimited
from app.web.ratelimit import client_address, limiter, retry_after, window

SCOPE = "signup-address"
#: the endpoints that mail a link (the API and the portal form)
ENDPOINTS = frozenset({"signup.signup", "portal.request_link"})


def charge_per_ip() -> None:
    """``before_request`` (app-wide, so before the portal's CSRF check): count a sign-up request against
    its client's per-IP window, report that window in the headers, and refuse past it (429)."""
    if request.endpoint not in ENDPOINTS or request.method == "OPTIONS":
        return
    item, client = parse(current_app.config["SIGNUP_LIMIT_PER_IP"]), client_address()
    ok = limiter.limiter.hit(item, "signup-ip", client)
    g.rate = info = window(item, "signup-ip", client)
    if not ok:
        raise RateLimited(
            "too many sign-up requests from this address; retry later",
            headers={"Retry-After": str(retry_after(info))},
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
