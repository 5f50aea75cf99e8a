"""Small HTTP client for the Urban Conditions REST API, shared by the CLI and the MCP server.

It adds no rules of its own: it sends the caller's key and targeting parameters unchanged and hands back the
raw body bytes, the parsed JSON and the rate-limit headers. Every failure becomes one of two exceptions:
:class:`ApiError` (the API answered with an error) or :class:`NetworkError` (it did not answer usably).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import requests

from urban_client import __version__

DEFAULT_BASE_URL = "http://127.0.0.1:8000/api/v1"
DEFAULT_TIMEOUT = 10.0


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
    """A successful answer: ``body`` is the exact bytes sent by the server, ``data`` the parsed JSON."""

    status: int
    body: bytes
    data: Any
    rate_limit: RateLimit = field(default_factory=RateLimit)


class ClientError(Exception):
    """Base of the client's exceptions."""


class ApiError(ClientError):
    """The API answered with an error status.

    ``code`` and ``message`` come from the API's error body (``{"error": ..., "message": ...}``); when the
    body is not that shape (a proxy's HTML page, say) ``code`` is ``http_<status>``.
    """

    def __init__(self, status: int, code: str, message: str, *, body: bytes = b"",
                 rate_limit: RateLimit | None = None, retry_after: int | None = None):
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body
        self.rate_limit = rate_limit or RateLimit()
        self.retry_after = retry_after


class NetworkError(ClientError):
    """No usable answer: connection refused, DNS failure, timeout, broken connection or invalid base URL."""

    def __init__(self, message: str, *, kind: str = "network_error"):
        super().__init__(message)
        self.kind = kind
        self.message = message


def target_params(location_id: str | None = None, lat: Any = None, lng: Any = None) -> dict[str, str]:
    """Query parameters for a targeted endpoint, passing only what the caller gave.

    The API itself decides whether the combination is valid (``missing_target``, ``ambiguous_target``,
    ``invalid_coordinates``); the client does not duplicate those rules.

    Examples
    --------
    >>> target_params(lat=51.2194, lng="4.4025")
    {'lat': '51.2194', 'lng': '4.4025'}
    >>> target_params(location_id="loc_1")
    {'locationId': 'loc_1'}
    """
    params = {}
    if location_id is not None:
        params["locationId"] = str(location_id)
    for name, value in (("lat", lat), ("lng", lng)):
        if value is not None:
            params[name] = value if isinstance(value, str) else repr(value)
    return params


def _error_from_response(resp: requests.Response) -> ApiError:
    code, message = f"http_{resp.status_code}", (resp.reason or "HTTP error")
    try:
        payload = json.loads(resp.content)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and isinstance(payload.get("error"), str):
        code = payload["error"]
        message = str(payload.get("message") or message)
    try:
        retry_after = int(resp.headers.get("Retry-After"))
    except (TypeError, ValueError):
        retry_after = None
    return ApiError(resp.status_code, code, message, body=resp.content,
                    rate_limit=RateLimit.from_headers(resp.headers), retry_after=retry_after)


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

    Examples
    --------
    >>> client = ApiClient("http://127.0.0.1:8000/api/v1", api_key="uk_…")
    >>> client.disruptions(lat=51.2194, lng=4.4025).data["summary"]["activeWorks"]  # doctest: +SKIP
    3
    """

    def __init__(self, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, session: requests.Session | None = None):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._api_key = api_key or None
        self._session = session or requests.Session()

    def __repr__(self):  # never shows the key
        return f"ApiClient({self.base_url!r}, api_key={'set' if self._api_key else None})"

    def get(self, path: str, params: dict[str, str] | None = None) -> ApiResponse:
        """GET ``path`` (relative to the base URL); return the response or raise ApiError / NetworkError."""
        headers = {"Accept": "application/json", "User-Agent": f"urban-client/{__version__}"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        url = f"{self.base_url}/{path.lstrip('/')}"
        try:
            resp = self._session.get(url, params=params or None, headers=headers, timeout=self.timeout,
                                     allow_redirects=False)
        except requests.Timeout:
            raise NetworkError(f"no answer from {self.base_url} within {self.timeout:g} s",
                               kind="timeout") from None
        except requests.ConnectionError as exc:
            raise NetworkError(f"cannot connect to {self.base_url}: {_reason(exc)}",
                               kind="connection") from None
        except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
                requests.exceptions.InvalidSchema) as exc:
            raise NetworkError(f"invalid base URL {self.base_url!r}: {exc}", kind="invalid_url") from None
        except requests.RequestException as exc:
            raise NetworkError(f"request to {self.base_url} failed: {_reason(exc)}") from None
        if resp.status_code >= 400:
            raise _error_from_response(resp)
        if resp.status_code != 200:
            raise ApiError(resp.status_code, f"http_{resp.status_code}",
                           f"unexpected status {resp.status_code}",
                           body=resp.content, rate_limit=RateLimit.from_headers(resp.headers))
        try:
            data = json.loads(resp.content)
        except ValueError:
            raise ApiError(resp.status_code, "invalid_response", "the server's answer is not JSON",
                           body=resp.content, rate_limit=RateLimit.from_headers(resp.headers)) from None
        return ApiResponse(resp.status_code, resp.content, data, RateLimit.from_headers(resp.headers))

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


def _reason(exc: Exception) -> str:
    """The innermost readable cause of a requests exception (e.g. 'Connection refused')."""
    text = str(exc)
    for marker in ("Connection refused", "Name or service not known", "No route to host",
                   "Connection reset", "Remote end closed connection",
                   "Temporary failure in name resolution"):
        if marker in text:
            return marker
    return text.split(": ")[-1][:200] if text else exc.__class__.__name__
