"""Small HTTP client for the Urban Conditions REST API, shared by the CLI and the MCP server.

It adds no rules of its own: it sends the caller's key and targeting parameters unchanged and hands back the
raw body bytes, the parsed JSON and the rate-limit headers. Every failure becomes one of two exceptions:
:class:`ApiError` (the API answered with an error) or :class:`NetworkError` (it did not answer usably).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import requests
import urllib3

from urban_client import __version__

DEFAULT_BASE_URL = "http://127.0.0.1:8000/api/v1"
DEFAULT_TIMEOUT = 10.0
JSON = "application/json"
GEOJSON = "application/geo+json"
CSV = "text/csv"
#: the history resources (Enterprise): ``history/<name>``
HISTORY_RESOURCES = ("air-quality", "works", "detours")


@dataclass(frozen=True)
class RateLimit:
    """The ``X-RateLimit-*`` headers of a response (``None`` where a header is absent or not an integer)."""

    limit: int | None = None
    remaining: int | None = None
    reset: int | None = None

    @classmethod
    def from_headers(cls, headers) -> "RateLimit":
        def number(name):
            try:
                return int(headers.get(name))
            except (TypeError, ValueError):
                return None

        return cls(number("X-RateLimit-Limit"), number("X-RateLimit-Remaining"), number("X-RateLimit-Reset"))


@dataclass(frozen=True)
class ApiResponse:
    """A successful answer: ``body`` is the exact bytes sent by the server, ``data`` the parsed JSON (the
    text of a CSV answer); ``next_cursor`` the cursor of a ``Link: <…>; rel="next"`` header (paged answers)."""

    status: int
    body: bytes
    data: Any
    rate_limit: RateLimit = field(default_factory=RateLimit)
    next_cursor: str | None = None


class ClientError(Exception):
    """Base of the client's exceptions."""


class ApiError(ClientError):
    """The API answered with an error status.

    ``code`` and ``message`` come from the API's error body (``{"error": ..., "message": ...}``); when the
    body is not that shape (a proxy's HTML page, another server) ``code`` is ``http_<status>`` (or
    ``invalid_response`` for a 200 that is not JSON), ``message`` says what came back and what to check, and
    ``from_api`` is False.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        body: bytes = b"",
        rate_limit: RateLimit | None = None,
        retry_after: int | None = None,
        from_api: bool = True,
    ):
        super().__init__(f"{code}: {message}")
        self.from_api = from_api  # the body is the API's JSON error shape
        self.status = status
        self.code = code
        self.message = message
        self.body = body
        self.rate_limit = rate_limit or RateLimit()
        self.retry_after = retry_after


class BadRequest(ApiError):
    """400: ``missing_target``, ``ambiguous_target``, ``invalid_coordinates``, ``invalid_request``, ..."""


class AuthenticationError(ApiError):
    """401: ``missing_key`` or ``invalid_key``."""


class PlanRequired(ApiError):
    """403 ``plan_required``: the account's plan has no API access."""


class NotFound(ApiError):
    """404: ``location_not_found`` (or ``not_found``: the base URL is wrong)."""


class NotAcceptable(ApiError):
    """406 ``not_acceptable``: the endpoint has no representation in the requested media type."""


class OutsideServiceArea(ApiError):
    """422 ``outside_service_area``: the point lies outside Flanders and Brussels."""


class RateLimited(ApiError):
    """429: ``rate_limited`` (per-IP limit) or :class:`QuotaExceeded`; ``retry_after`` in seconds."""


class QuotaExceeded(RateLimited):
    """429 ``quota_exceeded``: the account's daily quota is used up (resets 00:00 UTC)."""


class ServerError(ApiError):
    """500 ``internal_error`` and any other 5xx error of the API."""


class UpstreamError(ApiError):
    """502 ``upstream_error`` or 503 ``service_unavailable``: retry shortly."""


#: the class of an API error body, by HTTP status (then refined by code, see :func:`error_class`)
ERROR_CLASSES = {
    400: BadRequest,
    401: AuthenticationError,
    403: PlanRequired,
    404: NotFound,
    406: NotAcceptable,
    422: OutsideServiceArea,
    429: RateLimited,
    500: ServerError,
    502: UpstreamError,
    503: UpstreamError,
}


def error_class(status: int, code: str) -> type[ApiError]:
    """The exception class for an error body of the API.

    Examples
    --------
    >>> error_class(429, "quota_exceeded").__name__, error_class(422, "outside_service_area").__name__
    ('QuotaExceeded', 'OutsideServiceArea')
    >>> error_class(418, "teapot").__name__, error_class(504, "x").__name__
    ('ApiError', 'ServerError')
    """
    if code == "quota_exceeded":
        return QuotaExceeded
    return ERROR_CLASSES.get(status, ServerError if status >= 500 else ApiError)


class NetworkError(ClientError):
    """No usable answer. ``kind`` names the failure (see :data:`NETWORK_KINDS`); ``message`` is one sentence
    naming the base URL and what to check."""

    def __init__(self, message: str, *, kind: str = "connection"):
        super().__init__(message)
        self.kind = kind
        self.message = message

    @property
    def is_timeout(self) -> bool:
        """True for a connect or read timeout."""
        return self.kind in ("connect_timeout", "read_timeout")


#: every ``NetworkError.kind``, with what it means
NETWORK_KINDS = {
    "invalid_url": "the base URL is not an http(s) URL with a host",
    "dns": "the host name does not resolve",
    "refused": "nothing listens on the host and port",
    "connect_timeout": "the host did not accept the connection within the timeout",
    "read_timeout": "the server accepted the connection but sent no answer within the timeout",
    "tls": "the TLS handshake failed (plain HTTP server behind https://, untrusted certificate, ...)",
    "closed": "the server closed the connection without an HTTP answer",
    "protocol": "the server answered with something that is not HTTP",
    "connection": "any other failure to exchange a request and an answer",
}


def target_params(
    location_id: str | None = None, lat: Any = None, lng: Any = None, as_of: Any = None
) -> dict[str, str]:
    """Query parameters for a targeted endpoint, passing only what the caller gave (``as_of``: an RFC 3339
    text or an aware datetime, sent as ``asOf``).

    The API itself decides whether the combination is valid (``missing_target``, ``ambiguous_target``,
    ``invalid_coordinates``); the client does not duplicate those rules.

    Examples
    --------
    >>> target_params(lat=51.2194, lng="4.4025")
    {'lat': '51.2194', 'lng': '4.4025'}
    >>> target_params(location_id="loc_1")
    {'locationId': 'loc_1'}
    >>> from datetime import datetime, timezone
    >>> target_params(lat=51.2, lng=4.4, as_of=datetime(2026, 11, 1, 8, 0, tzinfo=timezone.utc))["asOf"]
    '2026-11-01T08:00:00+00:00'
    """
    params = {}
    if location_id is not None:
        params["locationId"] = str(location_id)
    for name, value in (("lat", lat), ("lng", lng)):
        if value is not None:
            params[name] = value if isinstance(value, str) else repr(value)
    if as_of is not None:
        params["asOf"] = as_of if isinstance(as_of, str) else as_of.isoformat()
    return params


def _instant(value: Any) -> str:
    return value if isinstance(value, str) else value.isoformat()


def history_params(
    start: Any,
    end: Any = None,
    location_id: str | None = None,
    lat: Any = None,
    lng: Any = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> dict[str, str]:
    """Query parameters of a history resource: the target (:func:`target_params`), the window ``from``
    (``start``) and ``to`` (``end``; RFC 3339 texts or aware datetimes), ``limit`` and ``cursor``, passing
    only what the caller gave.

    Examples
    --------
    >>> history_params("2026-11-01T00:00:00Z", lat=51.2194, lng=4.4025, limit=24)
    {'lat': '51.2194', 'lng': '4.4025', 'from': '2026-11-01T00:00:00Z', 'limit': '24'}
    """
    params = target_params(location_id, lat, lng)
    params["from"] = _instant(start)
    if end is not None:
        params["to"] = _instant(end)
    if limit is not None:
        params["limit"] = str(limit)
    if cursor is not None:
        params["cursor"] = cursor
    return params


def next_cursor(link: str | None) -> str | None:
    """The ``cursor`` of a ``Link`` header's ``rel="next"`` target (None: no next page).

    Examples
    --------
    >>> next_cursor('</api/v1/history/works?lat=51.2&cursor=eyJv>; rel="next"')
    'eyJv'
    """
    from urllib.parse import parse_qs, urlsplit

    for part in (link or "").split(","):
        target, _, rel = part.partition(";")
        if rel.strip().replace(" ", "") == 'rel="next"':
            found = parse_qs(urlsplit(target.strip().strip("<>")).query).get("cursor")
            return found[0] if found else None
    return None


def display_url(url: str) -> str:
    """``url`` without any ``user:password@`` part, for messages.

    Examples
    --------
    >>> display_url("https://ops:s3cret@urban.example.be/api/v1")
    'https://urban.example.be/api/v1'
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def check_base_url(base_url: str) -> None:
    """Raise ``NetworkError(kind="invalid_url")`` unless ``base_url`` is an http(s) URL with a host.

    Examples
    --------
    >>> check_base_url("http://127.0.0.1:8000/api/v1")
    >>> check_base_url("127.0.0.1:8000/api/v1")
    Traceback (most recent call last):
    ...
    urban_client.api.NetworkError: invalid base URL '127.0.0.1:8000/api/v1': it must look like \
http://HOST:PORT/api/v1 (scheme http:// or https://, then a host name).
    """
    try:
        parts = urlsplit(base_url)
        host, port = parts.hostname, parts.port  # .port raises ValueError on a bad port
    except ValueError:
        host = port = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host or any(map(str.isspace, base_url)):
        raise NetworkError(
            f"invalid base URL {display_url(base_url)!r}: it must look like "
            "http://HOST:PORT/api/v1 (scheme http:// or https://, then a host name).",
            kind="invalid_url",
        )


def _describe_body(resp: requests.Response) -> str:
    ctype = (resp.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if not resp.content:
        return "an empty body"
    if "html" in ctype or resp.content.lstrip()[:1] == b"<":
        return "an HTML page"
    return f"a {ctype} body" if ctype else "a body"


def _error_from_response(resp: requests.Response, base: str) -> ApiError:
    """ApiError for an answer with status >= 300: the API's own code and message when the body is the API's
    error shape, else ``http_<status>`` with a sentence saying what the answer was and what to check."""
    try:
        payload = json.loads(resp.content)
    except ValueError:
        payload = None
    try:
        retry_after = int(resp.headers.get("Retry-After"))
    except (TypeError, ValueError):
        retry_after = None
    rate_limit = RateLimit.from_headers(resp.headers)
    if isinstance(payload, dict) and isinstance(payload.get("error"), str):
        cls = error_class(resp.status_code, payload["error"])
        return cls(
            resp.status_code,
            payload["error"],
            str(payload.get("message") or resp.reason or ""),
            body=resp.content,
            rate_limit=rate_limit,
            retry_after=retry_after,
            from_api=True,
        )
    status = f"HTTP {resp.status_code}" + (f" {resp.reason}" if resp.reason else "")
    what = "JSON of another shape" if payload is not None else _describe_body(resp)
    if 300 <= resp.status_code < 400:
        target = resp.headers.get("Location")
        where = display_url(target) if target else "elsewhere"
        message = (
            f"the server at {base} redirects ({status}) to {where}; the client does not follow "
            "redirects, so set the base URL to the final address (often https:// instead of http://)."
        )
    elif resp.status_code >= 500:
        message = (
            f"the server at {base} answered {status} with {what}, not the API's JSON error: "
            "a proxy or gateway in front of the API is failing (retry shortly), or the base URL does "
            "not point at the Urban Conditions API."
        )
    else:
        message = (
            f"the server at {base} answered {status} with {what}, not the API's JSON error: "
            "check that the base URL points at the Urban Conditions API (it ends in /api/v1)."
        )
    return ApiError(
        resp.status_code,
        f"http_{resp.status_code}",
        message,
        body=resp.content,
        rate_limit=rate_limit,
        retry_after=retry_after,
        from_api=False,
    )


#: languages of the API's generated texts (docs/api.md → Languages); the API's default first
LANGUAGES = ("nl", "fr", "en")


def changes_path(location_id: str | None) -> str:
    """The change feed of one saved location, or of them all.

    Examples
    --------
    >>> changes_path("loc_1"), changes_path(None)
    ('locations/loc_1/changes', 'changes')
    """
    if location_id is None:
        return "changes"
    return f"locations/{quote(str(location_id), safe='')}/changes"


def changes_params(since: str | None = None, limit: Any = None) -> dict[str, str] | None:
    """Query parameters of a change-feed poll (only what the caller gave).

    Examples
    --------
    >>> changes_params("cur_x", 50), changes_params()
    ({'since': 'cur_x', 'limit': '50'}, None)
    """
    params = {}
    if since:
        params["since"] = str(since)
    if limit is not None:
        params["limit"] = str(limit)
    return params or None


class ApiClient:
    """Client bound to one base URL and key.

    Parameters
    ----------
    base_url : str
        API root including the version, e.g. ``http://127.0.0.1:8000/api/v1``.
    api_key : str or None
        Bearer key; ``None`` sends no ``Authorization`` header (the API then answers 401 ``missing_key``).
    timeout : float
        Seconds allowed for connecting and, separately, for each read.
    language : str or None
        Sent as ``Accept-Language`` (one of :data:`LANGUAGES`): the language of the texts the API generates
        (headline, key facts, labels); ``None`` sends no header (the API answers in Dutch).

    Examples
    --------
    >>> client = ApiClient("http://127.0.0.1:8000/api/v1", api_key="uk_…")
    >>> client.disruptions(lat=51.2194, lng=4.4025).data["summary"]["activeWorks"]  # doctest: +SKIP
    3
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        session: requests.Session | None = None,
        language: str | None = None,
    ):
        if language is not None and language not in LANGUAGES:
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.language = language
        self._api_key = api_key or None
        self._session = session or requests.Session()

    def __repr__(self):  # never shows the key
        return f"ApiClient({display_url(self.base_url)!r}, api_key={'set' if self._api_key else None})"

    def get(self, path: str, params: dict[str, str] | None = None, accept: str = JSON) -> ApiResponse:
        """GET ``path`` (relative to the base URL) asking for media type ``accept`` (:data:`JSON` or
        :data:`GEOJSON`, or :data:`CSV`: ``data`` is then the text); return the response or raise ApiError /
        NetworkError."""
        check_base_url(self.base_url)
        base = display_url(self.base_url)
        headers = {"Accept": accept, "User-Agent": f"urban-client/{__version__}"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        if self.language:
            headers["Accept-Language"] = self.language
        url = f"{self.base_url}/{path.lstrip('/')}"
        try:
            resp = self._session.get(
                url, params=params or None, headers=headers, timeout=self.timeout, allow_redirects=False
            )
        except requests.RequestException as exc:
            raise network_error(exc, base, self.timeout) from None
        if resp.status_code >= 300:
            raise _error_from_response(resp, base)
        rate_limit = RateLimit.from_headers(resp.headers)
        if resp.status_code != 200:
            status = f"HTTP {resp.status_code} {resp.reason or ''}".rstrip()
            raise ApiError(
                resp.status_code,
                f"http_{resp.status_code}",
                f"the server at {base} answered {status}, which the API never sends: check that "
                "the base URL points at the Urban Conditions API.",
                body=resp.content,
                rate_limit=rate_limit,
                from_api=False,
            )
        cursor = next_cursor(resp.headers.get("Link"))
        if accept == CSV and resp.headers.get("Content-Type", "").startswith(CSV):
            return ApiResponse(
                resp.status_code, resp.content, resp.content.decode("utf-8"), rate_limit, cursor
            )
        try:
            data = json.loads(resp.content)
        except ValueError:
            raise ApiError(
                resp.status_code,
                "invalid_response",
                f"the server at {base} answered HTTP 200 with {_describe_body(resp)} instead of "
                "JSON: the base URL does not point at the Urban Conditions API "
                "(it ends in /api/v1).",
                body=resp.content,
                rate_limit=rate_limit,
                from_api=False,
            ) from None
        return ApiResponse(resp.status_code, resp.content, data, rate_limit, cursor)

    def locations(self) -> ApiResponse:
        """``GET /locations``: the caller's saved locations."""
        return self.get("locations")

    def disruptions(self, location_id=None, lat=None, lng=None) -> ApiResponse:
        """``GET /disruptions`` for a saved location or a coordinate pair."""
        return self.get("disruptions", target_params(location_id, lat, lng))

    def air_quality(self, location_id=None, lat=None, lng=None) -> ApiResponse:
        """``GET /air-quality`` for a saved location or a coordinate pair."""
        return self.get("air-quality", target_params(location_id, lat, lng))

    def briefing(self, location_id=None, lat=None, lng=None) -> ApiResponse:
        """``GET /briefing`` for a saved location or a coordinate pair."""
        return self.get("briefing", target_params(location_id, lat, lng))


def _causes(exc: BaseException):
    """``exc`` and every exception it wraps (``args``, urllib3's ``reason``, ``__cause__``,
    ``__context__``)."""
    seen, stack = set(), [exc]
    while stack:
        item = stack.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        stack.extend([item.__context__, item.__cause__, getattr(item, "reason", None), *item.args])


#: OpenSSL reasons seen when a TLS client meets a plain-HTTP server
_PLAIN_HTTP_TLS = {
    "WRONG_VERSION_NUMBER",
    "HTTP_REQUEST",
    "RECORD_LAYER_FAILURE",
    "PACKET_LENGTH_TOO_LONG",
    "UNKNOWN_PROTOCOL",
}


def network_error(exc: requests.RequestException, base: str, timeout: float) -> NetworkError:
    """The :class:`NetworkError` for a failed request: one sentence naming ``base`` and what to check.

    Examples
    --------
    >>> network_error(requests.ReadTimeout(), "http://127.0.0.1:8000/api/v1", 10).message
    'http://127.0.0.1:8000/api/v1 accepted the connection but sent no answer within 10 s: the server is \
overloaded or stuck, or is not the Urban Conditions API; retry, or raise --timeout.'
    """
    causes = list(_causes(exc))
    parts = urlsplit(base)
    host = parts.hostname or base
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = "?"

    def has(*types):
        return next((c for c in causes if isinstance(c, types)), None)

    if isinstance(
        exc,
        (
            requests.exceptions.InvalidURL,
            requests.exceptions.MissingSchema,
            requests.exceptions.InvalidSchema,
        ),
    ):
        return NetworkError(
            f"invalid base URL {base!r}: it must look like http://HOST:PORT/api/v1 "
            "(scheme http:// or https://, then a host name).",
            kind="invalid_url",
        )
    tls = has(ssl.SSLError)
    if isinstance(exc, requests.exceptions.SSLError) or tls is not None:
        if isinstance(tls, ssl.SSLCertVerificationError):
            why = tls.verify_message or "certificate verify failed"
            return NetworkError(
                f"the TLS certificate of {host} is not trusted ({why}): check the host name "
                f"in the base URL {base}, or point REQUESTS_CA_BUNDLE at your organisation's "
                "CA bundle.",
                kind="tls",
            )
        if getattr(tls, "reason", None) in _PLAIN_HTTP_TLS:
            return NetworkError(
                f"{base} does not speak TLS (HTTPS) on port {port}: the server answers plain "
                "HTTP, so the base URL should start with http:// instead of https://, or the "
                "port is wrong.",
                kind="tls",
            )
        why = getattr(tls, "reason", None) or (str(tls) if tls else str(exc))
        return NetworkError(
            f"the TLS handshake with {base} failed ({why}): check that the server speaks "
            "HTTPS on that port and that the base URL's scheme and port are right.",
            kind="tls",
        )
    if has(urllib3.exceptions.NameResolutionError, socket.gaierror):
        return NetworkError(
            f"the host name {host!r} of {base} does not resolve: check its spelling in the "
            "base URL, and your network or DNS.",
            kind="dns",
        )
    if has(ConnectionRefusedError):
        return NetworkError(
            f"nothing is listening on {host}:{port} (connection refused by {base}): check "
            "that the API server is running and the host and port of the base URL.",
            kind="refused",
        )
    # urllib3's NewConnectionError (refused, DNS) is a ConnectTimeoutError subclass: tested before this
    if isinstance(exc, requests.exceptions.ConnectTimeout) or has(urllib3.exceptions.ConnectTimeoutError):
        return NetworkError(
            f"could not connect to {base} within {timeout:g} s: the host does not accept "
            "connections; check the host and port of the base URL, a firewall or VPN, or "
            "raise --timeout.",
            kind="connect_timeout",
        )
    if isinstance(exc, requests.Timeout) or has(urllib3.exceptions.ReadTimeoutError, TimeoutError):
        return NetworkError(
            f"{base} accepted the connection but sent no answer within {timeout:g} s: the "
            "server is overloaded or stuck, or is not the Urban Conditions API; retry, or "
            "raise --timeout.",
            kind="read_timeout",
        )
    if has(
        http.client.RemoteDisconnected,
        ConnectionResetError,
        BrokenPipeError,
        http.client.IncompleteRead,
        urllib3.exceptions.IncompleteRead,
    ):
        return NetworkError(
            f"{base} closed the connection without a complete HTTP answer: if the server "
            "uses TLS the base URL must start with https://, otherwise check its port (or "
            "retry if the server was restarting).",
            kind="closed",
        )
    if has(http.client.HTTPException, urllib3.exceptions.ProtocolError):
        return NetworkError(
            f"{base} answered with something that is not HTTP: the port in the base URL "
            "probably belongs to another service; check the host and port.",
            kind="protocol",
        )
    inner = causes[-1] if causes else exc
    why = (
        (inner.strerror if isinstance(inner, OSError) and inner.strerror else None)
        or str(inner)
        or type(inner).__name__
    )
    return NetworkError(
        f"cannot exchange a request with {base} ({why[:200]}): check the host and port of "
        "the base URL and your network.",
        kind="connection",
    )
