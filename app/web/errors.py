"""One exception hierarchy and one handler: every failure becomes ``{"error": code, "message": text}``.

Raise an :class:`ApiError` subclass anywhere in a request; :func:`init_app` maps it, Werkzeug's HTTP errors,
the engine's errors, a locked or full account store and any unexpected exception to the same JSON shape
(never HTML, never a stack trace in the body).
"""

from __future__ import annotations

import logging

from flask import current_app, g, request
from flask_limiter import RateLimitExceeded
from werkzeug.exceptions import HTTPException
from werkzeug.exceptions import MethodNotAllowed as HTTPMethodNotAllowed

from geo.errors import InvalidCoordinates as GeoInvalidCoordinates
from geo.errors import OutsideServiceArea as GeoOutsideServiceArea

from app.store.base import StoreIntegrityError, StoreUnavailable

from .db import discard_db
from .ratelimit import retry_after
from .redact import echo, redact_path

log = logging.getLogger("app.web.errors")


class ApiError(Exception):
    """Base of every error the API reports. Subclasses fix ``status`` and ``code``.

    Examples
    --------
    >>> e = LocationNotFound("no location 'x' in this account")
    >>> (e.status, e.code, e.message)
    (404, 'location_not_found', "no location 'x' in this account")
    """

    status = 500
    code = "internal_error"
    default_message = "unexpected error"
    default_headers: dict = {}

    def __init__(self, message: str | None = None, *, headers: dict | None = None):
        self.message = message or self.default_message
        self.headers = {**self.default_headers, **(headers or {})}
        super().__init__(self.message)


class InvalidRequest(ApiError):
    status, code, default_message = 400, "invalid_request", "the request is malformed"


class MissingTarget(ApiError):
    status, code = 400, "missing_target"
    default_message = "give either locationId or both lat and lng"


class InvalidCoordinatesError(ApiError):
    status, code, default_message = 400, "invalid_coordinates", "lat/lng are not valid coordinates"


class AmbiguousTarget(ApiError):
    status, code = 400, "ambiguous_target"
    default_message = "give either locationId or lat/lng, not both"


class InvalidEmail(ApiError):
    status, code, default_message = 400, "invalid_email", "not a valid e-mail address"


class MissingKey(ApiError):
    status, code = 401, "missing_key"
    default_message = "send your API key as 'Authorization: Bearer <key>'"
    default_headers = {"WWW-Authenticate": 'Bearer realm="urban"'}  # RFC 6750 §3


class InvalidKey(ApiError):
    status, code, default_message = 401, "invalid_key", "the API key is malformed, unknown or revoked"
    default_headers = {"WWW-Authenticate": 'Bearer realm="urban", error="invalid_token"'}


class PlanRequired(ApiError):
    status, code, default_message = 403, "plan_required", "your plan does not include API access"


class LocationNotFound(ApiError):
    status, code, default_message = 404, "location_not_found", "no such location in your account"


class NotFound(ApiError):
    status, code, default_message = 404, "not_found", "no such endpoint"


class NotAcceptable(ApiError):
    status, code = 406, "not_acceptable"
    default_message = "no representation of this answer in a media type the Accept header allows"


class MethodNotAllowed(ApiError):
    status, code, default_message = 405, "method_not_allowed", "method not allowed on this endpoint"


class PayloadTooLarge(ApiError):
    status, code, default_message = 413, "payload_too_large", "request body too large"


class UriTooLong(ApiError):
    status, code, default_message = 414, "uri_too_long", "the request line is too long"


class HeadersTooLarge(ApiError):
    status, code, default_message = 431, "headers_too_large", "too many or too large header fields"


class OutsideServiceArea(ApiError):
    status, code = 422, "outside_service_area"
    default_message = "the point lies outside Flanders and Brussels"


class QuotaExceeded(ApiError):
    status, code = 429, "quota_exceeded"
    default_message = "daily call quota reached; it resets at 00:00 UTC"


class RateLimited(ApiError):
    status, code, default_message = 429, "rate_limited", "too many requests from this address; retry later"


class InternalError(ApiError):
    status, code, default_message = 500, "internal_error", "unexpected error; it has been logged"


class UpstreamError(ApiError):
    status, code = 502, "upstream_error"
    default_message = "an upstream source failed; retry shortly"


class ServiceUnavailable(ApiError):
    status, code, default_message = 503, "service_unavailable", "temporarily unavailable; retry shortly"


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def error_codes() -> dict[str, int]:
    """code → status of every ApiError subclass (including ones defined by other modules).

    Examples
    --------
    >>> error_codes()["quota_exceeded"]
    429
    """
    return {cls.code: cls.status for cls in _subclasses(ApiError)}


_HTTP_MAP = {
    400: InvalidRequest,
    404: NotFound,
    405: MethodNotAllowed,
    413: PayloadTooLarge,
    429: RateLimited,
}


def to_api_error(exc: BaseException) -> ApiError:
    """Translate any exception into the ApiError that describes it to the client."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, GeoInvalidCoordinates):
        return InvalidCoordinatesError(str(exc))
    if isinstance(exc, GeoOutsideServiceArea):
        return OutsideServiceArea(str(exc) or None)
    if isinstance(exc, HTTPException):
        cls = _HTTP_MAP.get(exc.code) if exc.code is not None else None
        if cls is None:
            if exc.code is not None and exc.code < 500:
                err = InvalidRequest(exc.description)
                err.status = exc.code
                return err
            return InternalError()
        if cls is RateLimited:
            return _limiter_breach(exc)
        if cls is MethodNotAllowed:
            methods = exc.valid_methods if isinstance(exc, HTTPMethodNotAllowed) else None
            allowed = ", ".join(sorted(methods or []))
            return MethodNotAllowed(
                f"method {echo(request.method)} not allowed; use {allowed}",
                headers={"Allow": allowed} if allowed else None,
            )
        if cls is NotFound:
            return NotFound(f"no endpoint at {redact_path(request.path)}")
        if cls is InvalidRequest:
            return InvalidRequest("the request is malformed")
        return cls()
    if isinstance(exc, (StoreUnavailable, StoreIntegrityError)):
        discard_db()  # the next request opens a fresh connection
    if isinstance(exc, StoreUnavailable):
        # locked past its timeout, unreachable, disk full, I/O error, damaged file: the store, not the request
        log.error("account store unavailable (request %s): %s", g.get("request_id"), exc)
        return ServiceUnavailable("the account store is busy or unavailable; retry shortly")
    log.exception("unhandled error (request %s)", g.get("request_id"))
    return InternalError()


def _limiter_breach(exc: HTTPException) -> RateLimited:
    """429 for a Flask-Limiter breach: the declared limit's message, ``Retry-After`` from the breached
    window that its breach hook reported (:func:`app.web.ratelimit.on_breach`)."""
    message = exc.description if isinstance(exc, RateLimitExceeded) else None
    info = g.get("rate")
    if info is None:  # a 429 without a breached window: a conservative hint
        return RateLimited(message, headers={"Retry-After": "60"})
    return RateLimited(message, headers={"Retry-After": str(retry_after(info))})


def empty_segment_not_found() -> NotFound:
    """404 ``not_found`` for this request's path, which holds an empty segment (``//`` anywhere; ``%2F``
    arrives decoded), whatever the method: no route has one, so each resource keeps one URL. Werkzeug would
    otherwise serve ``//x`` as ``/x`` and redirect ``/x//y`` to ``/x/y``. The answer is the app's JSON, never a
    blueprint's page (the rule Werkzeug matched after dropping the leading slashes is forgotten)."""
    raw = request.environ.get("PATH_INFO", "")
    request.url_rule = None
    path = raw.encode("latin-1", "replace").decode("utf-8", "replace")  # WSGI: UTF-8 bytes as latin-1
    return NotFound(f"no endpoint at {redact_path(path)}: a path has no empty segments")


def error_response(err: ApiError):
    """The one JSON error response for ``err`` (rate-limit headers are added later by app.web.conventions)."""
    body = {"error": err.code, "message": err.message}
    if err.status >= 500:
        body["requestId"] = g.get("request_id", "")
    resp = current_app.json.response(body)
    resp.status_code = err.status
    resp.headers["Cache-Control"] = "no-store"
    for name, value in err.headers.items():
        resp.headers[name] = value
    return resp


def handle(exc: Exception):
    """The single error handler registered for every exception."""
    return error_response(to_api_error(exc))


def init_app(app) -> None:
    app.register_error_handler(Exception, handle)
