"""Per-IP abuse limits and the values of the ``X-RateLimit-*`` headers (docs/api.md → Headers).

Flask-Limiter is used through its public API only: :data:`limiter` is configured by :func:`init_app` with
its storage (our SQLite one, :mod:`app.web.ratelimit_storage`, through the ``limits`` storage interface, or
Redis), limits are declared on the blueprints they guard with :func:`declare` (sign-up's per-IP window:
:data:`app.portal.throttle.PER_IP`): a ``before_request`` of that blueprint decorated with the limit, so
no other request enters Flask-Limiter; a breach reaches :func:`on_breach` (its documented breach hook) and
the headers read :attr:`Limiter.current_limit` (the limit of this request).

Two rules Flask-Limiter's decorators cannot express live here, on its public strategy object
(``limiter.limiter``, the ``limits`` rate limiter over the same storage):

- the failed-authentication budget (``AUTH_FAILURE_LIMIT``): only a failed authentication counts, a client
  past it gets 429 instead of 401, and a request with a valid key is never refused by it. Flask-Limiter
  checks a declared limit before the view runs, so it would refuse every request of that client.
- every response reports a per-IP budget (:func:`peek`): a response under no declared limit shows the
  client's failed-authentication budget without counting anything.

:class:`RateInfo` is what a response reports: the account's daily quota for an authenticated call (set by
:mod:`app.api.auth`; a dashboard point view), an account window (:func:`account_window`, the dashboard's
reports), else the declared limit of this request, else the failed-authentication budget. An answer that no
limit governs carries none (:func:`governing`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from flask import Flask, current_app, g, request
from flask_limiter import Limiter, RequestLimit
from flask_limiter.util import get_remote_address
from limits import RateLimitItem, parse

from . import ratelimit_storage  # noqa: F401  (registers the urban-sqlite:// storage scheme)

AUTH_FAILURE_SCOPE = "auth-failure"


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

    @classmethod
    def of_window(cls, item: RateLimitItem, reset: float, remaining: int) -> "RateInfo":
        """The headers of one per-IP window. A window with no hits yet would start with the next hit, so
        it reports ``now + window length`` as its reset (never "now").

        Examples
        --------
        >>> info = RateInfo.of_window(parse("5 per hour"), 1_000_000_000.2, 2)
        >>> (info.limit, info.remaining, info.reset, info.window)
        (5, 2, 1000000001, 3600)
        """
        length = item.get_expiry()
        if remaining >= item.amount:
            reset = time.time() + length
        return cls(item.amount, remaining, math.ceil(reset), length)


@lru_cache(maxsize=8)
def _auth_failure_item(text: str) -> RateLimitItem:
    return parse(text)


@lru_cache(maxsize=4096)
def _window_key(item: RateLimitItem, *identifiers: str) -> str:
    """``item.key_for(*identifiers)``, built once per window and client (the pure function ``hit`` uses)."""
    return item.key_for(*identifiers)


def client_address() -> str:
    """The client IP the per-IP limits key on (the socket peer, or the trusted proxies' client)."""
    return get_remote_address() or "unknown"


def on_breach(request_limit: RequestLimit) -> None:
    """Flask-Limiter's breach hook: the breached window is what the 429 reports (``Retry-After`` and the
    ``X-RateLimit-*`` headers, :func:`app.web.errors.to_api_error`)."""
    reset, remaining = request_limit.window
    g.rate = RateInfo.of_window(request_limit.limit, reset, remaining)


#: Created unbound; :func:`init_app` binds it (storage from ``RATELIMIT_STORAGE_URI``).
limiter = Limiter(key_func=client_address, headers_enabled=False, key_prefix="urban", on_breach=on_breach)

#: the blueprints a limit is declared on (:func:`declare`)
_LIMITED: set[str] = set()


def declare(limit, blueprint) -> None:
    """Declare ``limit`` (``limiter.limit(...)`` or ``limiter.shared_limit(...)``) on ``blueprint``: the
    blueprint's first ``before_request``, decorated with the limit (Flask-Limiter checks a decorated
    function's limits each time it is called), so the limit is charged before the blueprint's own hooks
    and the view read anything, and requests of every other blueprint never enter Flask-Limiter."""

    def check_limits() -> None:
        """Nothing of its own: calling it is what makes Flask-Limiter check the limits decorating it."""

    # one name per blueprint: Flask-Limiter files decorated limits under the function's qualified name
    check_limits.__name__ = check_limits.__qualname__ = f"check_limits_of_{blueprint.name}"
    blueprint.before_request(limit(check_limits))
    _LIMITED.add(blueprint.name)


def budget(item: RateLimitItem, *identifiers: str) -> RateInfo:
    """The headers of a window of ours (keyed by ``identifiers``), counting nothing: one statement on a
    storage that reads a window at once (``read_window``: our SQLite one), else the strategy's stats."""
    read = getattr(limiter.storage, "read_window", None)
    if read is None:
        reset, remaining = limiter.limiter.get_window_stats(item, *identifiers)
        return RateInfo.of_window(item, reset, remaining)
    used, ends = read(_window_key(item, *identifiers))
    return RateInfo.of_window(item, time.time() if ends is None else ends, max(0, item.amount - used))


def hit_auth_failure() -> tuple[bool, RateInfo]:
    """Count one failed authentication for the client IP: (still within the limit, headers to report)."""
    item, client = _auth_failure_item(current_app.config["AUTH_FAILURE_LIMIT"]), client_address()
    ok = limiter.limiter.hit(item, AUTH_FAILURE_SCOPE, client)
    return ok, budget(item, AUTH_FAILURE_SCOPE, client)


def peek(blueprint: str | None = None) -> RateInfo:
    """Headers for a response that reported no quota: the declared limit of this request when it has one
    (sign-up), else the client's failed-authentication budget (nothing is counted). ``blueprint``: the
    request's, when the caller has it."""
    if blueprint is None:
        blueprint = request.blueprint
    current = limiter.current_limit if blueprint in _LIMITED else None  # no other blueprint has a limit
    if current is not None:
        reset, remaining = current.window
        return RateInfo.of_window(current.limit, reset, remaining)
    return budget(
        _auth_failure_item(current_app.config["AUTH_FAILURE_LIMIT"]), AUTH_FAILURE_SCOPE, client_address()
    )


#: blueprints that authenticate no key: the failed-authentication budget governs none of their answers
WITHOUT_KEY_BLUEPRINTS = ("dashboard",)


def governing(req=None) -> RateInfo | None:
    """The limit an answer that set no ``g.rate`` reports: :func:`peek`, but in a blueprint of
    :data:`WITHOUT_KEY_BLUEPRINTS` only a Flask-Limiter limit of the view (None: no rate-limit headers).
    ``req``: the request object, when the caller has it."""
    blueprint = (request if req is None else req).blueprint
    if blueprint in WITHOUT_KEY_BLUEPRINTS and limiter.current_limit is None:
        return None
    return peek(blueprint)


def account_window(item, scope: str, account_id: int, now: float, *, hit: bool) -> RateInfo:
    """One account's fixed window of ``item`` (e.g. ``parse("20 per hour")``) for ``scope``, in the shared
    limit storage (every worker and host that shares it): count one call when ``hit``, else only look.

    Windows are aligned on multiples of their length by ``now`` (epoch seconds of the wall clock, injectable),
    so the reset and ``Retry-After`` follow that clock. ``remaining`` is what is left of the window (after this
    call when ``hit``): below zero when the hit went past the limit.
    """
    length = item.get_expiry()
    start = int(now // length) * length
    key = item.key_for(scope, str(account_id), str(start))
    storage = limiter.limiter.storage
    used = storage.incr(key, length) if hit else storage.get(key)
    return RateInfo(item.amount, item.amount - used, start + length, length)


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
    """Configure the limiter from ``app``'s ``RATELIMIT_*`` settings (storage from
    ``RATELIMIT_STORAGE_URI``); the headers are ours (:func:`peek`).

    Flask-Limiter's ``init_app`` also registers three hooks on the app it is given, run on every request
    (its check, its headers, its teardown); every limit here is checked where :func:`declare` puts it, so
    the limiter is given a configuration holder (a Flask object that never serves) instead of the served
    app, which then runs none of them. The limiter object is module-level so blueprints can declare limits
    at import; with several apps in one process (tests) the most recently created app's storage is the one
    in use.
    """
    app.config["RATELIMIT_HEADERS_ENABLED"] = False
    app.config.setdefault("RATELIMIT_STRATEGY", "fixed-window")
    holder = Flask(__name__)
    holder.config.update({name: value for name, value in app.config.items() if name.startswith("RATELIMIT_")})
    limiter.init_app(holder)
