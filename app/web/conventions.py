"""HTTP conventions applied to every response: the API's JSON text, request ids, strict JSON bodies,
rate-limit headers, strong ETags with 304s, caching and CORS headers, the session cookie policy.

The JSON text is compact UTF-8, keys in insertion order, NaN refused, NumPy scalars as Python numbers:
same object, same bytes, so ETags and the determinism tests compare byte for byte. The app's JSON provider
(:class:`UrbanJSONProvider`), the data representations (:mod:`app.api.negotiation`, the GeoJSON
serialisers) and the error answers all write through :func:`json_text`.

Examples
--------
>>> import numpy as np
>>> json_text({"b": np.float64(0.5), "a": "Antwerpen – Linkeroever"})
'{"b":0.5,"a":"Antwerpen – Linkeroever"}\\n'
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re

from flask import current_app, g, request
from flask.json.provider import DefaultJSONProvider
from flask.json.tag import TaggedJSONSerializer
from flask.sessions import SecureCookieSessionInterface
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.http import parse_etags
from werkzeug.sansio.utils import get_content_length

from . import ratelimit
from .errors import ApiError, InvalidRequest, PayloadTooLarge, empty_segment_not_found

log = logging.getLogger("app.web.conventions")

RATE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
#: which instant and snapshot an ``asOf`` answer used (app.history.asof)
AS_OF_HEADERS = ("As-Of-Instant", "As-Of-Snapshot", "As-Of-Snapshot-Time")
EXPOSED = (*RATE_HEADERS, "ETag", "Retry-After", "X-Request-Id", *AS_OF_HEADERS)
ALLOWED_REQUEST_HEADERS = ("Authorization", "Content-Type", "If-None-Match", "X-Request-Id")
_EXPOSE_HEADERS = ", ".join(EXPOSED)
_ALLOW_HEADERS = ", ".join(ALLOWED_REQUEST_HEADERS)
JSON = "application/json"
GEOJSON = "application/geo+json"
_TAGGED = (JSON, GEOJSON)  # media types that get an ETag (one per representation)
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


def json_default(o):
    """NumPy scalars as Python numbers, else Flask's conversions (dates, dataclasses, ...)."""
    if type(o).__module__ == "numpy" and hasattr(o, "item"):
        return o.item()
    return DefaultJSONProvider.default(o)


#: :func:`json_dumps` without keyword arguments (one encoder, not one per call)
_ENCODER = json.JSONEncoder(default=json_default, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
#: ``json_dumps(obj)``: the compact encoder itself, for code that encodes many parts of one answer
encode_json = _ENCODER.encode


def json_dumps(obj, **kwargs) -> str:
    """Compact JSON text of ``obj`` (keyword arguments of :func:`json.dumps` override the defaults)."""
    if not kwargs:
        return _ENCODER.encode(obj)
    kwargs.setdefault("default", json_default)
    kwargs.setdefault("ensure_ascii", False)
    kwargs.setdefault("sort_keys", False)
    kwargs.setdefault("separators", (",", ":"))
    kwargs.setdefault("allow_nan", False)
    return json.dumps(obj, **kwargs)


def json_text(obj) -> str:
    """The response text of ``obj``: compact JSON and a final newline."""
    return json_dumps(obj) + "\n"


class UrbanJSONProvider(DefaultJSONProvider):
    """Flask's JSON provider writing :func:`json_text`."""

    sort_keys = False
    ensure_ascii = False
    compact = True
    default = staticmethod(json_default)

    def dumps(self, obj, **kwargs) -> str:
        return json_dumps(obj, **kwargs)

    def body(self, obj) -> str:
        """The response text of ``obj``: compact JSON and a final newline."""
        return json_text(obj)

    def response(self, *args, **kwargs):
        """A JSON response of ``args`` (one value, or several as a list) or ``kwargs``, as Flask's is."""
        if args and kwargs:
            raise TypeError("app.json.response() takes either args or kwargs, not both")
        obj = kwargs or (args[0] if len(args) == 1 else list(args) if args else None)
        return current_app.response_class(json_text(obj), mimetype=JSON)


def prepare_request() -> None:
    """``before_request``: the request id (a sane ``X-Request-Id`` from the client, else 128 random bits as
    32 hex digits), then refuse a path with an empty segment and a declared body over
    ``MAX_CONTENT_LENGTH`` before anything reads it."""
    environ = request.environ
    given = environ.get("HTTP_X_REQUEST_ID", "")
    g.request_id = given if _REQUEST_ID.match(given) else os.urandom(16).hex()
    if "//" in environ.get("PATH_INFO", ""):
        raise empty_segment_not_found()
    declared = environ.get("CONTENT_LENGTH")
    if declared:
        limit = current_app.config.get("MAX_CONTENT_LENGTH")
        if limit and (get_content_length(declared, environ.get("HTTP_TRANSFER_ENCODING")) or 0) > limit:
            raise PayloadTooLarge(f"request body over {limit} bytes")


#: deepest nesting of arrays/objects a request body may have (sign-up needs 1)
MAX_JSON_DEPTH = 32
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


class _BadJSON(ValueError):
    pass


def _no_duplicates(pairs):
    out = {}
    for name, value in pairs:
        if name in out:
            raise _BadJSON("a member name appears twice")
        out[name] = value
    return out


def _no_constant(name):
    raise _BadJSON(f"{name} is not a JSON number")


def _finite(text):
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _BadJSON("a number is out of range")
    return value


def _depth(data: bytes) -> int:
    """Deepest nesting of ``[``/``{`` outside string literals (counted before parsing recurses)."""
    depth = deepest = 0
    for byte in _JSON_STRING.sub(b'""', data):
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth -= 1
    return deepest


def parse_json(data: bytes):
    """Strict JSON (RFC 8259): UTF-8, at most :data:`MAX_JSON_DEPTH` levels, no duplicate member names,
    no ``NaN``/``Infinity``, no number that overflows; otherwise :class:`InvalidRequest` saying why.

    Examples
    --------
    >>> parse_json(b'{"email": "a@b.be"}')
    {'email': 'a@b.be'}
    >>> parse_json(b'{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    app.web.errors.InvalidRequest: the body is not valid JSON: a member name appears twice
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest("the body is not valid JSON: it is not UTF-8") from None
    if _depth(data) > MAX_JSON_DEPTH:
        raise InvalidRequest(f"the body is not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(
            text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite
        )
    except _BadJSON as exc:
        raise InvalidRequest(f"the body is not valid JSON: {exc}") from None
    except (ValueError, RecursionError):
        raise InvalidRequest("the body is not valid JSON") from None


def json_body():
    """The request's JSON body; None when it is not declared JSON (``Content-Type``).

    A declared JSON body that is not strict JSON (see :func:`parse_json`) is 400 ``invalid_request``. The
    result (or the error) is kept for the request, so the limiter and the view parse it once.
    A body over ``MAX_CONTENT_LENGTH`` is 413 also when it came chunked, without ``Content-Length``:
    Werkzeug then reads it only up to the limit, so ``get_json(silent=True)`` would see a truncated body.
    """
    ctx_g = g._get_current_object()
    if "json_body" not in ctx_g:
        try:
            ctx_g.json_body = (_read_json(), None)
        except ApiError as exc:
            ctx_g.json_body = (None, exc)
    value, error = ctx_g.json_body
    if error is not None:
        raise error
    return value


def _read_json():
    limit = current_app.config.get("MAX_CONTENT_LENGTH")
    try:
        data = request.get_data(cache=True)
        if limit and len(data) >= limit and request.stream.read(1):
            raise PayloadTooLarge(f"request body over {limit} bytes")
    except RequestEntityTooLarge:
        raise PayloadTooLarge(f"request body over {limit} bytes") from None
    if not request.is_json:
        return None
    return parse_json(data)


def _conditional(response, req, mimetype: str | None) -> dict[str, str]:
    """The ``ETag`` header of a tagged 200 (``{}`` for any other answer); a matching ``If-None-Match``
    turns the response into a 304."""
    if req.method not in ("GET", "HEAD") or response.status_code != 200:
        return {}
    if mimetype not in _TAGGED or response.direct_passthrough:
        return {}
    tag = hashlib.sha256(response.get_data()).hexdigest()[:32]
    header = req.environ.get("HTTP_IF_NONE_MATCH")
    if header:
        inm = parse_etags(header)
        if inm.star_tag or inm.contains_weak(tag):
            response.status_code = 304
            response.set_data(b"")
            for name in ("Content-Type", "Content-Length"):
                response.headers.pop(name, None)
    return {"ETag": f'"{tag}"'}


def _set_headers(headers, values: dict[str, str], defaults: dict[str, str]) -> None:
    """``headers[name] = value`` for each item of ``values`` (replacing any earlier value), and each item
    of ``defaults`` the response does not carry yet: names the response does not carry yet are appended in
    one ``extend`` instead of a scan of the whole list per name."""
    present = {name.lower() for name, _value in headers}
    fresh = []
    for name, value in values.items():
        if name.lower() in present:
            headers[name] = value
        else:
            fresh.append((name, value))
    fresh.extend((name, value) for name, value in defaults.items() if name.lower() not in present)
    headers.extend(fresh)


#: headers every response carries unless a blueprint set its own value
_DEFAULT_HEADERS = {"X-Content-Type-Options": "nosniff"}


def _strip_framework_page(response) -> None:
    """A redirect (Werkzeug's ``/portal`` → ``/portal/``, the portal's own redirects) without Werkzeug's
    "Redirecting..." HTML page — the ``Location`` header is the whole answer — and Flask's automatic
    ``OPTIONS`` answer without its ``text/html`` type."""
    response.set_data(b"")
    response.headers.pop("Content-Type", None)


def finalize(response):
    """``after_request`` for every response (errors included)."""
    ctx_g = g._get_current_object()
    req = request._get_current_object()
    mimetype = response.mimetype
    if mimetype == "text/html" and (300 <= response.status_code < 400 or req.method == "OPTIONS"):
        _strip_framework_page(response)
    values = _conditional(response, req, mimetype)
    rate = ctx_g.get("rate")
    if rate is None:
        try:
            rate = ratelimit.governing(req)
        except Exception:
            log.exception("rate-limit storage unavailable (request %s)", ctx_g.get("request_id"))
    if rate is not None:
        values.update(rate.headers())
    values["X-Request-Id"] = ctx_g.get("request_id", "")
    if req.path.startswith("/api/"):
        values["Access-Control-Allow-Origin"] = current_app.config["CORS_ALLOW_ORIGIN"]
        values["Access-Control-Expose-Headers"] = _EXPOSE_HEADERS
        if req.method == "OPTIONS":
            values["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            values["Access-Control-Allow-Headers"] = _ALLOW_HEADERS
            values["Access-Control-Max-Age"] = "600"
    _set_headers(response.headers, values, _DEFAULT_HEADERS)
    return response


class _SessionSerializer(TaggedJSONSerializer):
    """Flask's tagged session JSON through the standard library (independent of the app's JSON provider)."""

    def dumps(self, value):
        return json.dumps(self.tag(value), separators=(",", ":"))

    def loads(self, value):
        return json.loads(value, object_hook=self.untag)


class SessionInterface(SecureCookieSessionInterface):
    """Signed-cookie sessions (the portal's and the dashboard's sign-in) whose cookie is ``Secure`` when
    configured or when the request came over TLS. A request without the cookie (every API call) gets
    Flask's empty session without a signing serializer being built, and leaves without a cookie."""

    serializer = _SessionSerializer()

    def open_session(self, app, request):
        if app.secret_key and (
            "HTTP_COOKIE" not in request.environ or not request.cookies.get(self.get_cookie_name(app))
        ):
            return self.session_class()
        return super().open_session(app, request)

    def save_session(self, app, session, response):
        # an untouched empty session sets, deletes and varies nothing (what Flask's own method concludes)
        if not session and not session.accessed and not session.modified:
            return
        super().save_session(app, session, response)

    def get_cookie_secure(self, app):
        if app.config.get("SESSION_COOKIE_SECURE"):
            return True
        try:
            return request.is_secure
        except RuntimeError:  # outside a request
            return False


def init_app(app) -> None:
    app.json_provider_class = UrbanJSONProvider
    app.json = UrbanJSONProvider(app)
    app.config["SESSION_COOKIE_HTTPONLY"] = True
    app.config["SESSION_COOKIE_SAMESITE"] = "Lax"
    app.session_interface = SessionInterface()
    app.before_request(prepare_request)
    app.after_request(finalize)
