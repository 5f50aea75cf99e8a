"""Per-IP abuse limits (Flask-Limiter over a storage shared by all workers) and the rate-limit headers.

:class:`RateInfo` is what a response reports in ``X-RateLimit-*``: the account's daily quota for an
authenticated call, otherwise the per-IP limit that applies to the request (sign-up's window, charged by
:func:`app.portal.throttle.charge_per_ip`, a Flask-Limiter limit on a view, or the failed-authentication
limit).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial, wraps
from datetime import datetime

from flask import current_app, request
from flask.globals import request_ctx
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import parse

from . import ratelimit_storage  # noqa: F401  (registers the urban-sqlite:// storage scheme)

#: Created unbound; :func:`init_app` binds it (storage from ``RATELIMIT_STORAGE_URI``).
limiter = Limiter(key_func=get_remote_address, headers_enabled=False, key_prefix="urban")


@dataclass
class RateInfo:
    """Values of the three rate-limit headers. ``limit`` None = unlimited (Enterprise)."""

    limit: int | None
    remaining: int | None
    reset: int  # epoch seconds
    window: int | None = None  # length of a per-IP window in seconds (caps Retry-After)

    def headers(self) -> dict[str, str]:
        """The ``X-RateLimit-*`` headers.

        Examples
        --------
        >>> RateInfo(100, 99, 1763337600).headers()["X-RateLimit-Remaining"]
        '99'
        >>> RateInfo(None, None, 1763337600).headers()["X-RateLimit-Limit"]
        'unlimited'
        """
        unlimited = self.limit is None
        return {
            "X-RateLimit-Limit": "unlimited" if unlimited else str(self.limit),
            "X-RateLimit-Remaining": "unlimited" if unlimited else str(max(0, self.remaining or 0)),
            "X-RateLimit-Reset": str(int(self.reset)),
        }

    @classmethod
    def daily(cls, limit: int | None, used: int, reset_at: datetime) -> "RateInfo":
        """The account quota after ``used`` calls today."""
        remaining = None if limit is None else max(0, limit - used)
        return cls(limit, remaining, int(reset_at.timestamp()))


def _auth_failure_item():
    return parse(current_app.config["AUTH_FAILURE_LIMIT"])


def client_address() -> str:
    """The client IP the per-IP limits key on (the socket peer, or the trusted proxies' client)."""
    return get_remote_address() or "unknown"


def window(item, *identifiers: str) -> RateInfo:
    """The headers of one per-IP window. A window with no hits yet would start with the next hit, so it
    reports ``now + window length`` as its reset (never "now")."""
    reset, remaining = limiter.limiter.get_window_stats(item, *identifiers)
    length = item.get_expiry()
    if remaining >= item.amount:
        reset = time.time() + length
    return RateInfo(item.amount, remaining, math.ceil(reset), length)


def hit_auth_failure() -> tuple[bool, RateInfo]:
    """Count one failed authentication for the client IP: (still within the limit, headers to report)."""
    item = _auth_failure_item()
    ok = limiter.limiter.hit(item, "auth-failure", client_address())
    return ok, window(item, "auth-failure", client_address())


def exceeded(exc) -> RateInfo:
    """The headers of the Flask-Limiter limit that ``exc`` (``RateLimitExceeded``) reports as breached.

    Flask-Limiter no longer exposes ``current_limit`` in the error handler, so the window is looked up
    with the same identifiers its check used (key prefix, key, scope).
    """
    lim = exc.limit
    args = [limiter._key_prefix, lim.key_func(), lim.scope_for(request.endpoint, request.method)]
    return window(lim.limit, *[a for a in args if a])


def peek() -> RateInfo:
    """Headers for an unauthenticated response that counted nothing: the view's own Flask-Limiter limit
    when it has one (e.g. sign-up), else the client's failed-authentication budget."""
    current = limiter.current_limit
    if current is not None:
        return window(current.limit, *current.request_args)
    return window(_auth_failure_item(), "auth-failure", client_address())


def retry_after(info: RateInfo, now: float | None = None) -> int:
    """Whole seconds until ``info`` resets: rounded up (a client that waits this long is never early),
    at least 1, and never more than the window's length (a one-hour window never asks for 3601 s).

    Examples
    --------
    >>> retry_after(RateInfo(3, 0, 1_000_084_213), now=1_000_000_000.6)
    84213
    >>> retry_after(RateInfo(3, 0, 1_000_003_601, 3600), now=1_000_000_000.5)
    3600
    """
    now = time.time() if now is None else now
    seconds = max(1, math.ceil(info.reset - now))
    return min(seconds, info.window) if info.window else seconds


def init_app(app) -> None:
    """Bind the limiter: our headers replace Flask-Limiter's, storage from ``RATELIMIT_STORAGE_URI``.

    The limiter object is module-level so views can use ``@limiter.limit(...)``; with several apps in one
    process (tests) the most recently created app's storage is the one in use.
    """
    app.config["RATELIMIT_HEADERS_ENABLED"] = False
    app.config.setdefault("RATELIMIT_STRATEGY", "fixed-window")
    limiter.init_app(app)
    # Flask-Limiter checks every request for decorated/default limits (~10% of a data call). The keyed data
    # endpoints and /healthz carry none (their per-IP budget is the failed-authentication limit, hit by
    # app.api.auth), so they skip that check; sign-up and the portal keep it.
    funcs = app.before_request_funcs.setdefault(None, [])
    if limiter._check_request_limit in funcs:
        funcs[funcs.index(limiter._check_request_limit)] = _check_decorated_limits
    # Its after_request (conditional deductions, headers) and teardown (context reset) only act on the
    # per-request limiter context; a request that never created one (the keyed data routes, /healthz)
    # skips both instead of creating an empty context to inspect and reset.
    after = app.after_request_funcs.setdefault(None, [])
    for i, func in enumerate(after):
        if isinstance(func, partial) and func.args == (limiter,) and "inject_headers" in func.func.__name__:
            after[i] = _when_limiter_context(func)
    teardown = app.teardown_request_funcs.setdefault(None, [])
    for i, func in enumerate(teardown):
        if getattr(func, "__self__", None) is limiter and "release_context" in func.__name__:
            teardown[i] = _when_limiter_context(func)


_UNLIMITED_BLUEPRINTS = ("api_v1.data", "health")


def _when_limiter_context(hook):
    """``hook`` (a Flask-Limiter after-request/teardown hook), run only when this request touched the
    limiter's per-request context; without one it would find no limit, deduction or state to act on."""

    @wraps(hook)
    def run(arg=None):
        if hasattr(request_ctx._get_current_object(), "_limiter_request_context"):
            return hook(arg)
        return arg

    return run


def _check_decorated_limits() -> None:
    if request.blueprint in _UNLIMITED_BLUEPRINTS:
        return None
    return limiter._check_request_limit()
